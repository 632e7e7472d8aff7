"""The probe child: what runs in a sandboxed process of its own for behavioural probes while they
are made (`code_gym.languages.python.probes`).

Stdlib only (plus pytest for `harvest`); the grader copies this file and `probe_replay.py` into a
folder bound into the sandbox and runs it with the sandbox's interpreter, the repository as the
working directory:

    python probe_child.py harvest SPEC OUT   run the tests under a profiler (reference solution
                                             applied) and record, per test, the calls test code
                                             makes into the package: the scenarios probes replay
    python probe_child.py replay SPEC OUT    replay probe scenarios (`probe_replay.replay`),
                                             writing every step's result in its encoding

A graded run carries `probe_replay.py` alone, as a test file (`code_gym.languages.python.probes.lay`).
"""
import decimal
import fractions
import inspect
import json
import os
import sys

# the replay half first: its bindings are made before the code under test is imported
if __package__:  # imported by the grader
    from code_gym.languages.python.probe_replay import MAX_ITEMS, encode, replay, type_name
else:  # run as a script in the sandbox: probe_replay.py lies next to this file
    from probe_replay import MAX_ITEMS, encode, replay, type_name

# what the harvest uses, bound the same way (before the code under test is imported)
_type, _id, _len, _str, _isinstance, _getattr, _enumerate = type, id, len, str, isinstance, getattr, enumerate
_list, _tuple, _dict, _set, _frozenset = list, tuple, dict, set, frozenset
_bool, _int, _float, _bytes, _NoneType = bool, int, float, bytes, type(None)
_Exception, _property, _any = Exception, property, any
_Decimal, _Fraction = decimal.Decimal, fractions.Fraction
_json_dumps, _json_load, _open, _getcwd = json.dumps, json.load, open, os.getcwd
_FunctionType, _signature = type(lambda: None), inspect.signature

# ---------------------------------------------------------------- harvest

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_CO_LAZY = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator: resumed frames are no calls
_PLAIN = (_bool, _int, _float, _str, _bytes, _NoneType, _Decimal, _Fraction)
_DATA = _PLAIN + (_list, _tuple, _dict, _set, _frozenset)


class Unreplayable(_Exception):
    pass


class Recorder:
    """sys.setprofile hook: per test, the calls whose caller is test code and whose callee is
    package code (the boundary calls), with their arguments encoded at call time; objects the
    package returned (or built with `__init__`) become handles later steps refer to."""

    def __init__(self, root, test_files, targets, module_files):
        self.root = root
        self.test_files = test_files
        self.targets = targets  # {path: [def line, ...]}
        self.module_files = module_files  # paths whose module-level code the patch changes
        self.code_cache = {}
        self.references = {}  # id -> a reference to a module-level object (those live as long as their module)
        self.scenarios = {}
        self.current = None

    def start(self, nodeid):
        self.current = {"steps": [], "cut": None, "reached": [], "handles": {}, "keep": [], "pending": {},
                        "stack": [], "stubs": {}}
        self.nodeid = nodeid
        sys.setprofile(self.profile)

    def stop(self):
        sys.setprofile(None)
        cur, self.current = self.current, None
        if cur is not None:
            self.scenarios[self.nodeid] = {"steps": cur["steps"], "cut": cur["cut"], "reached": cur["reached"]}

    def _package_file(self, frame):
        path = frame.f_globals.get("__file__")
        if _type(path) is not _str:
            return None
        path = os.path.realpath(path)
        if not path.startswith(self.root + os.sep) or path in self.test_files:
            return None
        rel = path[_len(self.root) + 1:]
        return None if "site-packages" in rel else rel

    def _is_target(self, code):
        hit = self.code_cache.get(code)
        if hit is None:
            path = os.path.realpath(code.co_filename)
            rel = path[_len(self.root) + 1:] if path.startswith(self.root + os.sep) else None
            hit = rel is not None and (rel in self.module_files or code.co_firstlineno in self.targets.get(rel, ()))
            self.code_cache[code] = hit
        return hit

    def profile(self, frame, event, arg):
        cur = self.current
        if cur is None:
            return
        if event == "call":
            code = frame.f_code
            if cur["stack"] and self._is_target(code):
                for index in cur["stack"]:
                    if index not in cur["reached"]:
                        cur["reached"].append(index)
            if cur["cut"] is not None or code.co_flags & _CO_LAZY:
                return
            caller = frame.f_back
            if caller is None or os.path.realpath(caller.f_code.co_filename) not in self.test_files:
                return
            if self._package_file(frame) is None:
                return
            try:
                step = self._step(frame)
            except Unreplayable as exc:
                cur["cut"] = f"step {_len(cur['steps'])}: {exc}"
                return
            index = _len(cur["steps"])
            cur["steps"].append(step)
            cur["pending"][_id(frame)] = index
            cur["stack"].append(index)
            if self._is_target(code):
                cur["reached"].append(index)
        elif event == "return":
            index = cur["pending"].pop(_id(frame), None)
            if index is None:
                return
            if cur["stack"] and cur["stack"][-1] == index:
                cur["stack"].pop()
            step = cur["steps"][index]
            if step["kind"] == "new":
                arg = frame.f_locals.get(frame.f_code.co_varnames[0])
            else:
                self._register(arg, index, [], 0)
            try:  # what the test saw (None also when the call raised: the profiler cannot tell)
                step["seen"] = encode(arg)
            except _Exception:
                step["seen"] = {"t": "unencodable"}

    def _register(self, value, index, path, depth):
        cur = self.current
        t = _type(value)
        if t in _PLAIN or depth > 2:
            return
        if t in (_list, _tuple):
            for i, item in _enumerate(value[:MAX_ITEMS]):
                self._register(item, index, path + [i], depth + 1)
            return
        if t is _dict:
            return
        if _id(value) not in cur["handles"]:
            cur["handles"][_id(value)] = (index, path)
            cur["keep"].append(value)

    def _arg(self, value, depth=0):
        cur = self.current
        t = _type(value)
        if _id(value) in cur["handles"] and t not in _PLAIN:
            index, path = cur["handles"][_id(value)]
            return {"t": "h", "step": index, "path": path}
        if t in _PLAIN:
            return encode(value)
        if depth > 6:
            raise Unreplayable("argument nested too deep")
        if t in (_list, _tuple, _set, _frozenset):
            items = _list(value)
            if _len(items) > MAX_ITEMS:
                raise Unreplayable("argument too long")
            enc = [self._arg(v, depth + 1) for v in items]
            return {"t": {_list: "list", _tuple: "tuple", _set: "set", _frozenset: "frozenset"}[t], "v": enc}
        if t is _dict:
            return {"t": "dict", "v": [[self._arg(k, depth + 1), self._arg(v, depth + 1)] for k, v in value.items()]}
        found = self._reference(value) or self._stand_in(value)
        if found is None:
            raise Unreplayable(f"an argument of type {type_name(t)} that no earlier call returned")
        return found

    def _stand_in(self, value):
        """{"t": "stub", key, params} for a function the test defines (a callback, a memoized
        function): the replay passes a stand-in with its signature that returns its arguments and
        how many times it was called, so what the package does with a callback (call it, cache it,
        map it) still shows. None for anything else."""
        if _type(value) is not _FunctionType or os.path.realpath(value.__code__.co_filename) not in self.test_files:
            return None
        cur = self.current
        key = cur["stubs"].setdefault(_id(value), _len(cur["stubs"]))
        cur["keep"].append(value)
        try:
            params = [[p.name, _int(p.kind), p.default is not p.empty] for p in _signature(value).parameters.values()]
        except (TypeError, ValueError):
            params = None
        return {"t": "stub", "key": key, "params": params}

    def _reference(self, value):
        """{"t": "ref", module, qualname} when `value` is an object the replay can import by name
        (a builtin, a function or class of the standard library, an installed package or the
        package under test, or an object bound at module level there: a `curry` instance, say);
        None otherwise. Never an object of a test module: importing one inside the graded run
        would change how pytest imports it."""
        key = _id(value)
        if key in self.references:
            return self.references[key]
        found = None
        module, qualname = _getattr(value, "__module__", None), _getattr(value, "__qualname__", None)
        if (_type(module) is _str and _type(qualname) is _str and "<" not in qualname
                and self._importable(sys.modules.get(module)) and _resolve_name(module, qualname) is value):
            found = {"t": "ref", "module": module, "qualname": qualname}
        else:
            for name, mod in _list(sys.modules.items()):
                if not self._importable(mod) or not self._package_module(mod):
                    continue
                for attr, bound in _list(_getattr(mod, "__dict__", {}).items()):
                    if bound is value and _type(attr) is _str and not attr.startswith("__"):
                        found = {"t": "ref", "module": name, "qualname": attr}
                        break
                if found:
                    break
        if found is not None:
            self.references[key] = found
        return found

    def _package_module(self, module):
        path = _getattr(module, "__file__", None)
        return _type(path) is _str and os.path.realpath(path).startswith(self.root + os.sep)

    def _importable(self, module):
        """Whether the replay may import `module`: not a test module, conftest or test helper."""
        if module is None:
            return False
        path = _getattr(module, "__file__", None)
        if path is None:
            return True  # built into the interpreter
        if _type(path) is not _str:
            return False
        path = os.path.realpath(path)
        if path in self.test_files:
            return False
        if not path.startswith(self.root + os.sep):
            return True  # the standard library or an installed package
        parts = path[_len(self.root) + 1:].split(os.sep)
        return not _any(p in ("test", "tests", "testing") or p.startswith("test_") or p.endswith("_test.py")
                        or p == "conftest.py" for p in parts)

    def _step(self, frame):
        code = frame.f_code
        names = _list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        star = code.co_varnames[_len(names)] if code.co_flags & _CO_VARARGS else None
        starstar = (code.co_varnames[_len(names) + (1 if star else 0)] if code.co_flags & _CO_VARKEYWORDS else None)
        local = frame.f_locals
        positional = [local[n] for n in names[:code.co_argcount]]
        keywords = [(n, local[n]) for n in names[code.co_argcount:]]
        module, qualname, name = frame.f_globals.get("__name__"), code.co_qualname, code.co_name
        cur = self.current
        first = positional[0] if positional else None
        is_method = bool(positional) and not _isinstance(first, _type) and _defines(_type(first), name, code)
        function = _function_of(frame, code, first, is_method, cur["keep"])
        extra = _list(local[star]) if star else []
        positional, keywords = _without_defaults(function, code, positional, keywords, bool(extra))
        positional += extra
        if starstar:
            keywords += _list(local[starstar].items())
        if is_method:
            self_obj, rest = first, positional[1:]
            if name == "__init__" and _id(self_obj) not in cur["handles"]:
                klass = _type(self_obj)
                mod = sys.modules.get(klass.__module__)
                path = os.path.realpath(_getattr(mod, "__file__", "") or "")
                if (not path.startswith(self.root + os.sep) or path in self.test_files
                        or "<locals>" in klass.__qualname__):
                    raise Unreplayable(f"an instance of {type_name(klass)}, a class the package does not define")
                step = {"kind": "new", "module": klass.__module__, "qualname": klass.__qualname__,
                        "args": [self._arg(v) for v in rest], "kwargs": [[k, self._arg(v)] for k, v in keywords]}
                cur["handles"][_id(self_obj)] = (_len(cur["steps"]), [])
                cur["keep"].append(self_obj)
                return step
            if _id(self_obj) not in cur["handles"] and self._reference(self_obj) is None:
                raise Unreplayable(f"a method of a {type_name(_type(self_obj))} that no earlier call returned")
            kind = "method"
            static = None
            for klass in _type(self_obj).__mro__:
                if name in klass.__dict__:
                    static = klass.__dict__[name]
                    break
            if _type(static) is _property:
                kind = "set" if static.fset is not None and _getattr(static.fset, "__code__", None) is code else "get"
            return {"kind": kind, "name": name, "self": self._arg(self_obj),
                    "args": [self._arg(v) for v in rest], "kwargs": [[k, self._arg(v)] for k, v in keywords]}
        if "<locals>" in qualname:
            for obj in cur["keep"]:
                if _getattr(obj, "__code__", None) is code:
                    return {"kind": "callh", "self": self._arg(obj), "args": [self._arg(v) for v in positional],
                            "kwargs": [[k, self._arg(v)] for k, v in keywords]}
            raise Unreplayable(f"a call of {qualname}, a local function no earlier call returned")
        if positional and _isinstance(first, _type) and _defines(first, name, code):
            positional = positional[1:]  # a classmethod: resolved through its class below
        return {"kind": "call", "module": module, "qualname": qualname,
                "args": [self._arg(v) for v in positional], "kwargs": [[k, self._arg(v)] for k, v in keywords]}


def _resolve_name(module, qualname):
    try:
        target = sys.modules[module]
        for part in qualname.split("."):
            target = _getattr(target, part)
    except (KeyError, AttributeError):
        return None
    except _Exception:  # a module-level __getattr__ of the package's own
        return None
    return target


def _unwrapped(attr, code):
    for fn in (attr, _getattr(attr, "fget", None), _getattr(attr, "fset", None), _getattr(attr, "__func__", None)):
        if _getattr(fn, "__code__", None) is code:
            return fn
    return None


def _function_of(frame, code, first, is_method, kept):
    """The function object whose frame this is (for its defaults), or None when it cannot be found."""
    klasses = _type(first).__mro__ if is_method else (first.__mro__ if _isinstance(first, _type) else ())
    for klass in klasses:
        attr = _getattr(klass, "__dict__", {}).get(code.co_name)
        if attr is not None:
            return _unwrapped(attr, code)
    if "<locals>" in code.co_qualname:
        return next((obj for obj in kept if _getattr(obj, "__code__", None) is code), None)
    target = frame.f_globals
    parts = code.co_qualname.split(".")
    target = target.get(parts[0])
    for part in parts[1:]:
        target = _getattr(target, "__dict__", {}).get(part)
    return _unwrapped(target, code) if target is not None else None


def _without_defaults(function, code, positional, keywords, star_used):
    """The arguments without those left at a default that is not plain data (the very default
    object, `factory=dict`, a sentinel): a call replays the same without them, where recording them
    stopped the scenario. Plain-data defaults stay (perturbing them makes probes). Trailing
    positional ones only, and none when `*args` got values."""
    if function is None:
        return positional, keywords
    defaults = _getattr(function, "__defaults__", None) or ()
    kwdefaults = _getattr(function, "__kwdefaults__", None) or {}

    def default(value, fallback):
        return value is fallback and _type(value) not in _DATA

    keywords = [(k, v) for k, v in keywords if not (k in kwdefaults and default(v, kwdefaults[k]))]
    if not star_used and defaults:
        first_default = code.co_argcount - _len(defaults)
        positional = _list(positional)
        while (_len(positional) > first_default
               and default(positional[-1], defaults[_len(positional) - 1 - first_default])):
            positional.pop()
    return positional, keywords


def _defines(klass, name, code):
    """Whether `klass` (through its MRO) has `name` as a function, property or wrapper whose code is `code`."""
    for k in _getattr(klass, "__mro__", ()):
        attr = _getattr(k, "__dict__", {}).get(name)
        if attr is None:
            continue
        for fn in (attr, _getattr(attr, "fget", None), _getattr(attr, "fset", None), _getattr(attr, "__func__", None)):
            if _getattr(fn, "__code__", None) is code:
                return True
        return False
    return False


def harvest(spec):
    import pytest

    root = os.path.realpath(_getcwd())
    tests = {os.path.realpath(os.path.join(root, t)) for t in spec["test_files"]}
    for folder, _, files in os.walk(root):
        tests.update(os.path.realpath(os.path.join(folder, f)) for f in files if f == "conftest.py")
    recorder = Recorder(root, tests, {k: set(v) for k, v in spec["targets"].items()}, set(spec["module_files"]))

    class Plugin:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            recorder.start(item.nodeid)
            try:
                yield
            finally:
                recorder.stop()

    sys.path.insert(0, root)
    code = pytest.main(["-q", "-p", "no:cacheprovider", *spec["test_files"]], plugins=[Plugin()])
    return {"exit_code": int(code), "scenarios": recorder.scenarios}


def replay_bounded(probes, seconds):
    """`replay`, probe by probe, each within `seconds`: a probe over it is answered
    [{"t": "timeout"}] (its steps are interrupted until it returns), the others as usual."""
    import signal

    expired = [False]

    def expire(*_):
        expired[0] = True
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # interrupt every step until the probe returns
        raise TimeoutError("probe time limit")

    signal.signal(signal.SIGALRM, expire)
    out = []
    for probe in probes:
        expired[0] = False
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            results = replay([probe])[0]
        except TimeoutError:
            results = None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out.append([{"t": "timeout"}] if expired[0] or results is None else results)
    return out


def run(mode, spec_path, out_path):
    with _open(spec_path) as fh:
        spec = _json_load(fh)
    if mode == "harvest":
        result = harvest(spec)
    elif spec.get("per_probe"):
        result = {"results": replay_bounded(spec["probes"], spec["per_probe"])}
    else:
        result = {"results": replay(spec["probes"])}
    text = _json_dumps(result)
    with _open(out_path, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [_getcwd()] + [p for p in sys.path if os.path.realpath(p or ".") != here]
    run(*sys.argv[1:4])
