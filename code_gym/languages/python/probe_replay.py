"""Probe replay: the half of the probe child that a graded test run carries (`code_gym.languages.python.probes`).

Stdlib only. The grader lays this file, plus a line naming SPEC_PATH and OUT_PATH in the run's
results folder, as the first test file of the graded run: `test_probe_replay` replays the probe
steps in the test run's own process, before any other test module is imported, and writes every
step's result in the plain-data encoding below. The harvest profiler (`code_gym.languages.python.probe_child`)
stays out of the graded run: what pytest must compile there is this file alone.

The encoding is strict: a value is encoded by its exact type (`type(x) is int`, never
`isinstance` or the object's `__eq__`), as `{"t": tag, "v": value}` for int, float (hex), str,
bytes (hex), bool, None, Decimal, list, tuple, dict (pairs, sorted), set and frozenset (sorted);
an enum member by its type and name; another object by its type's module and qualified name plus
its public attributes and properties (depth-limited) and, when its class defines `__repr__`, its
repr (addresses removed, capped: private state such as a matrix's rows shows there); an exception by its type. Everything the
encoder uses is bound here, before the code under test is imported. The comparison with the
reference's results happens in the grader, which never lets those results into the sandbox.

PYTEST_DONT_REWRITE: laid as a test file, this module has no assertion for pytest to rewrite.
"""

_type, _id, _len, _repr, _sorted, _getattr, _isinstance = type, id, len, repr, sorted, getattr, isinstance
_int, _float, _str, _bytes, _bool, _list, _tuple, _dict, _set, _frozenset = (
    int, float, str, bytes, bool, list, tuple, dict, set, frozenset)
_NoneType = type(None)
_BaseException, _Exception = BaseException, Exception
_object_getattribute = object.__getattribute__
_float_hex, _bytes_hex = float.hex, bytes.hex
_property, _callable, _setattr, _enumerate, _any, _ValueError = property, callable, setattr, enumerate, any, ValueError
_TypeError, _IndexError = TypeError, IndexError

import decimal  # noqa: E402  (bound before the code under test can import anything)
import enum  # noqa: E402
import fractions  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

_Decimal, _decimal_str = decimal.Decimal, decimal.Decimal.__str__
_Enum = enum.Enum
_Fraction, _fraction_str = fractions.Fraction, fractions.Fraction.__str__
_json_dumps, _json_load = json.dumps, json.load
_import_module = importlib.import_module
_open, _getcwd = open, os.getcwd
_re_sub, _object_repr = re.sub, object.__repr__
_Signature, _Parameter = inspect.Signature, inspect.Parameter
_KINDS = (_Parameter.POSITIONAL_ONLY, _Parameter.POSITIONAL_OR_KEYWORD, _Parameter.VAR_POSITIONAL,
          _Parameter.KEYWORD_ONLY, _Parameter.VAR_KEYWORD)

MAX_DEPTH = 4
MAX_ITEMS = 200
MAX_REPR = 2000


def type_name(t):
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
        return {"t": "deep", "type": type_name(t)}
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
        return {"t": "enum", "type": type_name(t), "v": _object_getattribute(x, "_name_")}
    if _isinstance(x, _BaseException):
        return {"t": "raise", "type": type_name(t)}
    found = {"t": "obj", "type": type_name(t), "attrs": _public_state(x, t, depth)}
    if _getattr(t, "__repr__", None) is not _object_repr:  # the class shows its state (a Matrix's private rows)
        try:
            found["repr"] = _re_sub(r" at 0x[0-9a-fA-F]+", "", _repr(x))[:MAX_REPR]
        except _Exception as exc:
            found["repr"] = "raise " + type_name(_type(exc))
    return found


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
            state[name] = {"t": "raise", "type": type_name(_type(exc))}
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
    if t == "ref":  # an object bound by name in an importable module (a builtin, a package's function)
        return _resolve(arg["module"], arg["qualname"])
    if t == "stub":  # a function of the test's: one stand-in per function and probe
        key = ("stub", arg["key"])
        if key not in handles:
            handles[key] = _stand_in(arg["key"], arg.get("params"))
        return handles[key]
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


def _stand_in(key, params):
    """A callable in place of a function the test defined, with its signature: it returns its
    arguments and the number of its calls so far, so that what the package does with it (calls it,
    caches it, maps it over data) shows in the results."""
    calls = [0]

    def stand_in(*args, **kwargs):
        calls[0] += 1
        return ("stand-in", key, args, _tuple(_sorted(kwargs.items())), calls[0])

    if params is not None:
        try:
            stand_in.__signature__ = _Signature([_Parameter(name, _KINDS[kind], default=None if has_default
                                                            else _Parameter.empty) for name, kind, has_default in params])
        except (_ValueError, _TypeError, _IndexError):
            pass
    return stand_in


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
                results.append({"t": "raise", "type": type_name(_type(exc))})
                continue
            handles[index] = value
            try:
                results.append(encode(value))
            except _BaseException as exc:
                results.append({"t": "unencodable", "type": type_name(_type(exc))})
        out.append(results)
    return out


def test_probe_replay():
    replay_file(globals()["SPEC_PATH"], globals()["OUT_PATH"])


def replay_file(spec_path, out_path):
    """Replay the probes of the JSON spec at `spec_path`; write {"results": ...} to `out_path`."""
    with _open(spec_path) as fh:
        spec = _json_load(fh)
    text = _json_dumps({"results": replay(spec["probes"])})
    with _open(out_path, "w") as fh:
        fh.write(text)
