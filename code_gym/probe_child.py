"""The probe child: what runs inside the sandbox for behavioural probes (`code_gym.probes`).

Stdlib only (plus pytest for `harvest`); the grader copies this file into a folder bound into the
sandbox and runs it with the sandbox's interpreter, the repository as the working directory:

    python probe_child.py harvest SPEC OUT   run the tests under a profiler (reference solution
                                             applied) and record, per test, the calls test code
                                             makes into the package: the scenarios probes replay
    python probe_child.py replay SPEC OUT    replay probe scenarios, writing every step's result
                                             in the plain-data encoding below
    as a test file of the graded run         the grader lays this file (plus SPEC_PATH / OUT_PATH)
                                             first among the graded test files: `test_probe_replay`
                                             replays in the test run's own process, before any test

The encoding is strict: a value is encoded by its exact type (`type(x) is int`, never
`isinstance` or the object's `__eq__`), as `{"t": tag, "v": value}` for int, float (hex), str,
bytes (hex), bool, None, Decimal, list, tuple, dict (pairs, sorted), set and frozenset (sorted);
an enum member by its type and name; another object by its type's module and qualified name plus
its public attributes and properties (depth-limited); an exception by its type. Everything the
encoder uses is bound here, before the code under test is imported. The comparison with the
reference's results happens in the grader, which never lets those results into the sandbox.

PYTEST_DONT_REWRITE: laid as a test file, this module has no assertion for pytest to rewrite.
"""
import sys

_type, _id, _len, _repr, _sorted, _getattr, _isinstance = type, id, len, repr, sorted, getattr, isinstance
_int, _float, _str, _bytes, _bool, _list, _tuple, _dict, _set, _frozenset = (
    int, float, str, bytes, bool, list, tuple, dict, set, frozenset)
_NoneType = type(None)
_BaseException, _Exception = BaseException, Exception
_object_getattribute = object.__getattribute__
_float_hex, _bytes_hex = float.hex, bytes.hex
_property, _callable, _setattr, _enumerate, _any, _ValueError = property, callable, setattr, enumerate, any, ValueError

import decimal  # noqa: E402  (bound before the code under test can import anything)
import enum  # noqa: E402
import fractions  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

_Decimal, _decimal_str = decimal.Decimal, decimal.Decimal.__str__
_Enum = enum.Enum
_Fraction, _fraction_str = fractions.Fraction, fractions.Fraction.__str__
_json_dumps, _json_load = json.dumps, json.load
_import_module = importlib.import_module
_open, _getcwd = open, os.getcwd

MAX_DEPTH = 4
MAX_ITEMS = 200


def _type_name(t):
    return f"{_getattr(t, '__module__', '?')}.{_getattr(t, '__qualname__', '?')}"


def _key(encoded):
    return _json_dumps(encoded, sort_keys=True)


def encode(x, depth=0):
    """The plain-data encoding of a result (see the module docstring)."""
    t = _type(x)
    if t is _bool:
        return {"t": "bool", "v": x}
    if t is _int:
        return {"t": "int", "v": _str(x)}
    if t is _float:
        return {"t": "float", "v": _float_hex(x)}
    if t is _str:
        return {"t": "str", "v": x}
    if t is _bytes:
        return {"t": "bytes", "v": _bytes_hex(x)}
    if t is _NoneType:
        return {"t": "none"}
    if t is _Decimal:
        return {"t": "decimal", "v": _decimal_str(x)}
    if t is _Fraction:
        return {"t": "fraction", "v": _fraction_str(x)}
    if depth >= MAX_DEPTH:
        return {"t": "deep", "type": _type_name(t)}
    if t is _list or t is _tuple:
        return {"t": "list" if t is _list else "tuple", "v": [encode(v, depth + 1) for v in x[:MAX_ITEMS]],
                "n": _len(x)}
    if t is _dict:
        pairs = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in _list(x.items())[:MAX_ITEMS]]
        return {"t": "dict", "v": _sorted(pairs, key=lambda p: _key(p[0])), "n": _len(x)}
    if t is _set or t is _frozenset:
        items = [encode(v, depth + 1) for v in _list(x)[:MAX_ITEMS]]
        return {"t": "set" if t is _set else "frozenset", "v": _sorted(items, key=_key), "n": _len(x)}
    if _isinstance(x, _Enum):
        return {"t": "enum", "type": _type_name(t), "v": _object_getattribute(x, "_name_")}
    if _isinstance(x, _BaseException):
        return {"t": "raise", "type": _type_name(t)}
    return {"t": "obj", "type": _type_name(t), "attrs": _public_state(x, t, depth)}


def _public_state(x, t, depth):
    """Public attributes (instance dict and slots) and public properties, encoded."""
    state = {}
    try:
        names = _list(_object_getattribute(x, "__dict__"))
    except _Exception:
        names = []
    props = []
    for klass in _getattr(t, "__mro__", ())[:-1]:
        for name, attr in _list(_getattr(klass, "__dict__", {}).items()):
            if _type(attr) is _property:
                props.append(name)
            elif name == "__slots__":
                names += [attr] if _type(attr) is _str else _list(attr)
    for name in names + props:
        if _type(name) is not _str or name.startswith("_") or name in state:
            continue
        try:
            value = _getattr(x, name)
        except _Exception as exc:
            state[name] = {"t": "raise", "type": _type_name(_type(exc))}
            continue
        if _callable(value) and _type(value).__name__ in ("method", "function", "builtin_function_or_method"):
            continue
        state[name] = encode(value, depth + 1)
    return state


# ---------------------------------------------------------------- replay

class _Unresolved(_Exception):
    pass


def _resolve(module, qualname):
    target = _import_module(module)
    for part in qualname.split("."):
        target = _getattr(target, part)
    return target


def _follow(obj, path):
    for index in path:
        obj = obj[index]
    return obj


def decode_arg(arg, handles):
    t = arg["t"]
    if t == "h":
        if arg["step"] not in handles:
            raise _Unresolved()
        return _follow(handles[arg["step"]], arg["path"])
    if t == "int":
        return _int(arg["v"])
    if t == "float":
        return _float.fromhex(arg["v"])
    if t in ("str", "bool"):
        return arg["v"]
    if t == "bytes":
        return _bytes.fromhex(arg["v"])
    if t == "none":
        return None
    if t == "decimal":
        return _Decimal(arg["v"])
    if t == "fraction":
        return _Fraction(arg["v"])
    if t in ("list", "tuple", "set", "frozenset"):
        items = [decode_arg(v, handles) for v in arg["v"]]
        return {"list": _list, "tuple": _tuple, "set": _set, "frozenset": _frozenset}[t](items)
    if t == "dict":
        return {decode_arg(k, handles): decode_arg(v, handles) for k, v in arg["v"]}
    raise _ValueError(f"cannot decode an argument tagged {t!r}")


def run_step(step, handles):
    args = [decode_arg(a, handles) for a in step.get("args", [])]
    kwargs = {k: decode_arg(v, handles) for k, v in step.get("kwargs", [])}
    kind = step["kind"]
    if kind in ("call", "new"):
        return _resolve(step["module"], step["qualname"])(*args, **kwargs)
    if kind == "callh":
        return decode_arg(step["self"], handles)(*args, **kwargs)
    obj = decode_arg(step["self"], handles)
    name = step["name"]
    if kind == "get":
        return _getattr(obj, name)
    if kind == "set":
        _setattr(obj, name, args[0])
        return None
    if name.startswith("__") and name.endswith("__"):
        return _getattr(_type(obj), name)(obj, *args, **kwargs)
    return _getattr(obj, name)(*args, **kwargs)


def replay(probes):
    """Each probe's step results, in order; a step that needs a handle an earlier step did not
    produce is recorded as skipped."""
    out = []
    for probe in probes:
        handles, results = {}, []
        for index, step in _enumerate(probe["steps"]):
            try:
                value = run_step(step, handles)
            except _Unresolved:
                results.append({"t": "skip"})
                continue
            except _BaseException as exc:  # SystemExit / KeyboardInterrupt from the code too
                results.append({"t": "raise", "type": _type_name(_type(exc))})
                continue
            handles[index] = value
            try:
                results.append(encode(value))
            except _BaseException as exc:
                results.append({"t": "unencodable", "type": _type_name(_type(exc))})
        out.append(results)
    return out


# ---------------------------------------------------------------- harvest

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_CO_LAZY = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator: resumed frames are no calls
_PLAIN = (_bool, _int, _float, _str, _bytes, _NoneType, _Decimal, _Fraction)


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
        self.scenarios = {}
        self.current = None

    def start(self, nodeid):
        self.current = {"steps": [], "cut": None, "reached": [], "handles": {}, "keep": [], "pending": {},
                        "stack": []}
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
        raise Unreplayable(f"an argument of type {_type_name(t)} that no earlier call returned")

    def _step(self, frame):
        code = frame.f_code
        names = _list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        star = code.co_varnames[_len(names)] if code.co_flags & _CO_VARARGS else None
        starstar = (code.co_varnames[_len(names) + (1 if star else 0)] if code.co_flags & _CO_VARKEYWORDS else None)
        local = frame.f_locals
        positional = [local[n] for n in names[:code.co_argcount]]
        keywords = [(n, local[n]) for n in names[code.co_argcount:]]
        if star:
            positional += _list(local[star])
        if starstar:
            keywords += _list(local[starstar].items())
        module, qualname, name = frame.f_globals.get("__name__"), code.co_qualname, code.co_name
        cur = self.current
        first = positional[0] if positional else None
        is_method = bool(positional) and not _isinstance(first, _type) and _defines(_type(first), name, code)
        if is_method:
            self_obj, rest = first, positional[1:]
            if name == "__init__" and _id(self_obj) not in cur["handles"]:
                klass = _type(self_obj)
                mod = sys.modules.get(klass.__module__)
                path = os.path.realpath(_getattr(mod, "__file__", "") or "")
                if not path.startswith(self.root + os.sep) or path in self.test_files or "<locals>" in klass.__qualname__:
                    raise Unreplayable(f"an instance of {_type_name(klass)}, a class the package does not define")
                step = {"kind": "new", "module": klass.__module__, "qualname": klass.__qualname__,
                        "args": [self._arg(v) for v in rest], "kwargs": [[k, self._arg(v)] for k, v in keywords]}
                cur["handles"][_id(self_obj)] = (_len(cur["steps"]), [])
                cur["keep"].append(self_obj)
                return step
            if _id(self_obj) not in cur["handles"]:
                raise Unreplayable(f"a method of a {_type_name(_type(self_obj))} that no earlier call returned")
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


def test_probe_replay():
    run("replay", globals()["SPEC_PATH"], globals()["OUT_PATH"])


def run(mode, spec_path, out_path):
    with _open(spec_path) as fh:
        spec = _json_load(fh)
    result = harvest(spec) if mode == "harvest" else {"results": replay(spec["probes"])}
    text = _json_dumps(result)
    with _open(out_path, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [_getcwd()] + [p for p in sys.path if os.path.realpath(p or ".") != here]
    run(*sys.argv[1:4])
