"""Parsing Python source: on the host, from several threads, and with the task's own interpreter.

CPython 3.11's `ast.parse` keeps the AST constructor's recursion counter in interpreter-wide state:
when two threads build trees at once and a garbage collection in one of them runs a finalizer that
switches threads, the counter of one tree is checked against the other's and the parse fails with
`SystemError: AST constructor recursion depth mismatch` (python/cpython#106905). The grader audits
patches from several threads (vector envs, the builder's workers, the Docker soak), so every parse in
code-gym goes through `parse`, which holds one lock around the construction. Parsing is ~1 ms per
thousand lines, small next to the test runs the lock sits between.

The host's grammar is not always the task's: a task's environment may run a newer Python (3.12's
`type X = ...`, 3.14's t-strings), an older one (3.6 has no limit on integer literals), or decode a
coding cookie through a codec one of its packages registers. `parse_in_sandbox` parses with the
interpreter the task's tests run, inside the task's sandbox: it compiles each source the way an
import would and sends back its syntax tree as JSON, which `load_tree` turns into host `ast` nodes
(node types or fields the host does not know become nodes of their own that a visitor still walks).
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, safe to call from several threads at once (SyntaxError as usual). Warnings the
    compiler emits (an invalid escape sequence) stay warnings: under `-W error` they would make
    valid source a SyntaxError."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename=filename, mode=mode)


# -- parsing with the task's interpreter --------------------------------------------------------

# Runs inside the sandbox under the task's interpreter (any Python 3.6+: no newer syntax here). For
# each N.src it compiles the bytes as an import does (so "syntax" means the module cannot be
# imported), with no limit on integer literals (a module may lift the limit before importing
# another), then writes N.json: the tree, or why there is none.
_TREE_SCRIPT = r'''
import ast, json, sys, warnings
warnings.simplefilter("ignore")
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)


def encode(v):
    if isinstance(v, ast.AST):
        out = {"_": type(v).__name__}
        for name in tuple(v._fields) + tuple(getattr(v, "_attributes", ())):
            if hasattr(v, name):
                out[name] = encode(getattr(v, name))
        return out
    if isinstance(v, list):
        return [encode(x) for x in v]
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, int):
        return {"i": hex(v)}
    if isinstance(v, float):
        return {"f": v.hex()}
    if isinstance(v, complex):
        return {"c": [v.real.hex(), v.imag.hex()]}
    if isinstance(v, bytes):
        return {"b": v.decode("latin-1")}
    if v is Ellipsis:
        return {"e": 0}
    raise TypeError("cannot encode %s" % type(v).__name__)


for i in range(int(sys.argv[1])):
    with open("%d.src" % i, "rb") as f:
        data = f.read()
    try:
        compile(data, "<audit>", "exec", dont_inherit=True)
        out = {"verdict": "tree", "tree": encode(ast.parse(data))}
        text = json.dumps(out)
    except SyntaxError as e:
        message = str(e.msg)
        verdict = "encoding" if message.startswith("unknown encoding") else "syntax"
        text = json.dumps({"verdict": verdict, "message": message, "line": e.lineno or 0})
    except ValueError as e:
        text = json.dumps({"verdict": "syntax", "message": str(e), "line": 0})
    except (RecursionError, MemoryError) as e:
        text = json.dumps({"verdict": "deep", "message": type(e).__name__ + ": " + str(e), "line": 0})
    with open("%d.json" % i, "w") as f:
        f.write(text)
'''

# How much tree JSON the host reads back for one file: 1 MiB of source (the audit's size limit)
# makes ~40 MiB of it in the densest case measured (`x = 1` lines).
MAX_TREE_JSON = 64 << 20
# The compile, the tree and its JSON for 1 MiB of source take ~10 s on a loaded machine.
SANDBOX_TIMEOUT = 60.0
_VERDICTS = ("tree", "syntax", "encoding", "deep")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Parsed:
    """What the task's interpreter made of one source: `verdict` "tree" (then `tree`), "syntax"
    (it cannot compile it: the module cannot be imported), "encoding" (its coding cookie names a
    codec the interpreter does not know), "deep" (nested past the parser's or compiler's limits),
    or "failed" (no answer: the sandbox or its output failed); `message` says what."""
    verdict: str
    message: str = ""
    line: int = 0
    tree: ast.AST | None = None


class _Cache:
    """The task interpreters' answers by (interpreter, source digest): the starting version of a
    file is asked once per process, not at every audit of a patch that edits it."""

    def __init__(self, size: int = 256):
        self.size = size
        self.answers: dict[tuple[str, str], dict] = {}
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            return self.answers.get(key)

    def put(self, key, answer: dict) -> None:
        with self.lock:
            if len(self.answers) >= self.size:
                self.answers.pop(next(iter(self.answers)))
            self.answers[key] = answer


_ANSWERS = _Cache()


def parse_in_sandbox(sources: list[bytes], sandbox_factory, interpreter: str) -> list[Parsed]:
    """Parse each of `sources` with the interpreter a sandbox runs as `python`, one sandbox for all.
    `sandbox_factory(folder)` makes the sandbox over a fresh host folder; `interpreter` names it in
    the cache's keys. Never raises: a failure is a Parsed of verdict "failed"."""
    keys = [(interpreter, hashlib.sha256(data).hexdigest()) for data in sources]
    answers: list[dict | None] = [_ANSWERS.get(key) for key in keys]
    missing = [i for i, answer in enumerate(answers) if answer is None]
    if missing:
        fresh = _run(sandbox_factory, [sources[i] for i in missing])
        for i, answer in zip(missing, fresh):
            answers[i] = answer
            if answer.get("verdict") != "failed":
                _ANSWERS.put(keys[i], answer)
    return [_parsed(answer) for answer in answers]


def _run(sandbox_factory, sources: list[bytes]) -> list[dict]:
    from code_gym.util.hostfs import owned_prefix  # the sandbox half is loaded when an audit needs it

    folder = Path(tempfile.mkdtemp(prefix=owned_prefix("parse")))
    try:
        (folder / "tree.py").write_text(_TREE_SCRIPT)
        for i, data in enumerate(sources):
            (folder / f"{i}.src").write_bytes(data)
        try:
            sandbox = sandbox_factory(folder)
        except Exception as exc:  # no sandbox here: the audit fails closed
            return [{"verdict": "failed", "message": f"no sandbox to run it in ({exc})"}] * len(sources)
        try:
            run = sandbox.exec(f"python -I tree.py {len(sources)}", timeout=SANDBOX_TIMEOUT)
        finally:
            sandbox.close()
        why = "it timed out" if run.timed_out else f"exit code {run.exit_code}: {run.output.strip()[-200:]}"
        return [_read(folder / f"{i}.json", why) for i in range(len(sources))]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path, why: str) -> dict:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_TREE_JSON:
            return {"verdict": "failed", "message": "its syntax tree is too large to read back"}
        answer = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {"verdict": "failed", "message": f"the parse gave no answer ({why})"}
    except (OSError, ValueError, RecursionError) as exc:
        return {"verdict": "failed", "message": f"its answer is unreadable ({type(exc).__name__})"}
    if not isinstance(answer, dict) or answer.get("verdict") not in _VERDICTS:
        return {"verdict": "failed", "message": "its answer is malformed"}
    return answer


def _parsed(answer: dict) -> Parsed:
    verdict, message = answer["verdict"], str(answer.get("message", ""))
    line = answer.get("line") if isinstance(answer.get("line"), int) else 0
    if verdict != "tree":
        return Parsed(verdict, message, line)
    try:
        tree = load_tree(answer["tree"])
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        return Parsed("failed", f"its syntax tree is malformed ({type(exc).__name__}: {exc})")
    if not isinstance(tree, ast.Module):
        return Parsed("failed", "its syntax tree is not a module")
    return Parsed("tree", tree=tree)


# nodes of older interpreters that the host's ast spells otherwise
_CONSTANT_FIELDS = {"Num": "n", "Str": "s", "Bytes": "s", "NameConstant": "value"}
_CLASSES: dict[tuple[str, tuple[str, ...]], type] = {}


def load_tree(data) -> ast.AST:
    """Host `ast` nodes from the tree JSON of `_TREE_SCRIPT`. A node type the host lacks becomes a
    node class of that name with the fields it came with (`ast.NodeVisitor.generic_visit` walks
    them), and a known type with extra fields (3.12's `type_params`) a subclass of the same name
    whose `foreign_fields` names them (`foreign_parts` finds what is under them)."""
    if isinstance(data, list):
        return [load_tree(item) for item in data]
    if data is None or isinstance(data, (str, bool)):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"unexpected {type(data).__name__} in a syntax tree")
    if "_" not in data:
        return _scalar(data)
    name = data["_"]
    fields = {k: load_tree(v) for k, v in data.items() if k != "_"}
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or not all(map(_IDENTIFIER.match, fields)):
        raise ValueError("a node or field name is not an identifier")
    if name in _CONSTANT_FIELDS or name == "Ellipsis":
        value = ... if name == "Ellipsis" else fields.pop(_CONSTANT_FIELDS[name], None)
        return _node(ast.Constant, {**_positions(fields), "value": value, "kind": None})
    if name == "Index":  # 3.8: a subscript's index wrapped in a node of its own
        return fields["value"]
    if name == "ExtSlice":
        return _node(ast.Tuple, {**_positions(fields), "elts": fields["dims"], "ctx": ast.Load()})
    cls = _node_class(name, tuple(fields))
    return _node(cls, {**_missing(cls), **fields})


def _missing(cls: type) -> dict:
    """A host node's fields an older interpreter's node lacks (3.7 has no `posonlyargs`): lists
    empty, others None, as the host's visitors expect them to be there."""
    doc = next((c.__doc__ for c in cls.__mro__ if c.__doc__), "")
    kinds = dict((name, kind) for kind, name in re.findall(r"\w+([*?]?) (\w+)[,)]", doc))
    return {f: [] if kinds.get(f) == "*" else None for f in getattr(cls, "_fields", ())}


def foreign_parts(tree: ast.AST) -> list[ast.AST]:
    """The nodes under fields the host's grammar lacks (`foreign_fields`, outside `_fields`, so no
    visitor walks them), anywhere in `tree` (under such fields too), outermost first."""
    parts, stack = [], [tree]
    while stack:
        node = stack.pop()
        extra = []
        for field in getattr(type(node), "foreign_fields", ()):
            value = getattr(node, field, None)
            extra += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST)]
        parts += extra
        stack += [*ast.iter_child_nodes(node), *extra]
    return parts


def _scalar(data: dict):
    if len(data) != 1:
        raise ValueError("a tagged value has one key")
    (tag, value), = data.items()
    if tag == "i":
        return int(value, 16)
    if tag == "f":
        return float.fromhex(value)
    if tag == "c":
        return complex(float.fromhex(value[0]), float.fromhex(value[1]))
    if tag == "b":
        return value.encode("latin-1")
    if tag == "e":
        return ...
    raise ValueError(f"unknown value tag {tag!r}")


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _positions(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if k in _POSITIONS}


def _node(cls: type, fields: dict) -> ast.AST:
    node = cls()
    for key, value in fields.items():
        setattr(node, key, value)
    return node


def _node_class(name: str, fields: tuple[str, ...]) -> type:
    known = getattr(ast, name, None)
    if isinstance(known, type) and issubclass(known, ast.AST):
        attributes = set(getattr(known, "_attributes", ()))
        extra = tuple(f for f in fields if f not in known._fields and f not in attributes)
        if not extra:
            return known
        # a known type with fields the host lacks: they stay out of `_fields`, so a visitor with its
        # own visit_<name> and one without both leave them to `foreign_parts`
        key = (name, extra)
        if key not in _CLASSES:
            _CLASSES[key] = type(name, (known,), {"foreign_fields": extra})
        return _CLASSES[key]
    own = tuple(f for f in fields if f not in _POSITIONS)
    key = (name, own)
    if key not in _CLASSES:
        _CLASSES[key] = type(name, (ast.AST,), {"_fields": own})
    return _CLASSES[key]
