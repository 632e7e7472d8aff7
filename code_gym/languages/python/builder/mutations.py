"""Changes that turn a working function into a task: remove its body (signature and docstring
kept), or inject one bug with an AST mutation (SWE-smith's procedural idea).

Edits are made on the source text at the AST node's position, so the rest of the file keeps its
formatting and comments; each changed file is checked to parse."""
from __future__ import annotations

import ast
import copy
import random
import re
import textwrap

from code_gym.grading.builder import REMOVE_BODY, Change, Function, pick_changes
from code_gym.languages.python import source as pysource

OPERATORS = ("flip-comparison", "off-by-one", "swap-arguments", "drop-condition")
# the operator each comparison flips to; the pattern finds it in the text between the operands
_FLIPS = {ast.Lt: (r"<", ">"), ast.LtE: (r"<=", ">="), ast.Gt: (r">", "<"), ast.GtE: (r">=", "<="),
          ast.Eq: (r"==", "!="), ast.NotEq: (r"!=", "=="), ast.In: (r"\bin\b", "not in"),
          ast.NotIn: (r"\bnot\s+in\b", "in"), ast.Is: (r"\bis\b", "is not"), ast.IsNot: (r"\bis\s+not\b", "is")}


_COMPUTATIONS = (ast.Call, ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp, ast.IfExp, ast.Subscript, ast.Lambda,
                 ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Text:
    """Source text addressed by AST positions (1-based lines, UTF-8 byte columns)."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, lineno: int, col: int) -> int:
        return self.starts[lineno - 1] + len(self.lines[lineno - 1].encode()[:col].decode(errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def replace(self, start: int, end: int, text: str) -> str:
        return self.source[:start] + text + self.source[end:]


def _body_without_docstring(node) -> list[ast.stmt]:
    return node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body


def _signature(node) -> str:
    """`def name(args) -> returns` as one line, without decorators or body."""
    bare = copy.copy(node)
    bare.body, bare.decorator_list = [ast.Pass()], []
    return ast.unparse(bare).split("\n")[0].rstrip(":")


def _does_something(body: list[ast.stmt]) -> bool:
    """False for an empty body and for placeholders: `pass`, `...`, a lone `raise`."""
    if len(body) != 1:
        return bool(body)
    only = body[0]
    placeholder = isinstance(only, (ast.Pass, ast.Raise)) or (
        isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant))
    return not placeholder


def functions(path: str, source: str) -> list[Function]:
    """The module-level functions and the methods of module-level classes whose body (after the
    docstring) does something; each Function's node is its `ast.FunctionDef`."""
    tree = pysource.parse(source)
    found = []
    module_doc = ast.get_docstring(tree)

    def add(node, qualname: str, class_doc: str | None) -> None:
        body = _body_without_docstring(node)
        if _does_something(body) and body[0].lineno > node.lineno:
            found.append(Function(path, qualname, _signature(node), ast.get_docstring(node), module_doc, class_doc,
                                  (body[0].lineno, node.end_lineno), node))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, node.name, None)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(item, f"{node.name}.{item.name}", ast.get_docstring(node))
    return found


def _parses_and_differs(original: str, changed: str) -> bool:
    try:
        return ast.dump(pysource.parse(changed)) != ast.dump(pysource.parse(original))
    except SyntaxError:
        return False


def remove_body(fn: Function, source: str) -> Change | None:
    """The body after the docstring becomes `raise NotImplementedError`."""
    text = _Text(source)
    first, last = fn.body_lines
    start = first
    while start - 1 > fn.node.lineno and text.lines[start - 2].strip().startswith("#"):
        start -= 1  # comments just above the first statement go with the body
    body = _body_without_docstring(fn.node)
    indent = text.lines[first - 1][: body[0].col_offset]
    changed = "".join(text.lines[: start - 1]) + f"{indent}raise NotImplementedError\n" + "".join(text.lines[last:])
    if not _parses_and_differs(source, changed):
        return None
    # the computations of the body; names, constants and bare tuples of them ("ValueError",
    # "self.counts", "name, commands") say nothing about how it works
    removed = tuple(text.segment(n) for stmt in body for n in ast.walk(stmt) if isinstance(n, _COMPUTATIONS))
    return Change(fn, REMOVE_BODY, changed, first, removed)


def _nodes(fn: Function):
    for stmt in _body_without_docstring(fn.node):
        yield from ast.walk(stmt)


def _flip(text: _Text, node: ast.Compare) -> str | None:
    pattern, flipped = _FLIPS[type(node.ops[0])]
    start = text.offset(node.left.end_lineno, node.left.end_col_offset)
    end = text.offset(node.comparators[0].lineno, node.comparators[0].col_offset)
    between, count = re.subn(pattern, flipped, text.source[start:end], count=1)
    return text.replace(start, end, between) if count else None


def _off_by_one(text: _Text, node: ast.Constant) -> str:
    start, end = text.span(node)
    return text.replace(start, end, str(node.value + 1))


def _swap(text: _Text, node: ast.Call) -> str | None:
    a, b = node.args[0], node.args[1]
    if text.segment(a) == text.segment(b):
        return None
    start, end = text.offset(a.lineno, a.col_offset), text.offset(b.end_lineno, b.end_col_offset)
    between = text.source[text.offset(a.end_lineno, a.end_col_offset): text.offset(b.lineno, b.col_offset)]
    return text.replace(start, end, text.segment(b) + between + text.segment(a))


def _drop_operand(text: _Text, node: ast.BoolOp) -> str:
    """`a and b` -> `a`: the last operand of a boolean condition is dropped."""
    start = text.offset(node.values[-2].end_lineno, node.values[-2].end_col_offset)
    return text.replace(start, text.offset(node.end_lineno, node.end_col_offset), "")


def _drop_if(text: _Text, node: ast.If) -> str:
    """A guard `if cond: ...` (no else) is deleted, lines and all."""
    start, end = text.starts[node.lineno - 1], text.starts[node.end_lineno]
    return text.replace(start, end, "")


def _guards(fn: Function) -> set[int]:
    """ids of the `if` statements without else that share their block with other statements."""
    blocks = [_body_without_docstring(fn.node)]
    for node in _nodes(fn):
        blocks += [b for b in (getattr(node, "body", None), getattr(node, "orelse", None),
                               getattr(node, "finalbody", None)) if isinstance(b, list)]
    return {id(s) for block in blocks if len(block) > 1 for s in block if isinstance(s, ast.If) and not s.orelse}


def _site_edits(fn: Function, source: str):
    """(operator, changed source or None, site node) for every mutation site of `fn`, unchecked."""
    text = _Text(source)
    guards = _guards(fn)
    for node in _nodes(fn):
        if isinstance(node, ast.Compare):
            yield "flip-comparison", lambda node=node: _flip(text, node), node
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield "off-by-one", lambda node=node: _off_by_one(text, node), node
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in node.args[:2]):
            yield "swap-arguments", lambda node=node: _swap(text, node), node
        elif isinstance(node, ast.BoolOp):
            yield "drop-condition", lambda node=node: _drop_operand(text, node), node
        if isinstance(node, ast.If) and id(node) in guards:
            yield "drop-condition", lambda node=node: _drop_if(text, node), node.test


class _Checker:
    """Whether a changed source parses and changes the function's AST. Only the function's own
    lines are parsed (a mutation edits nothing else), so a site in a 10,000-line file costs a
    function-sized parse."""

    def __init__(self, source: str):
        self.source = source
        self.text = _Text(source)
        self.lines = source.splitlines(keepends=True)
        self.dumps: dict[str, str | None] = {}

    def _dump(self, lines: list[str], first: int, last: int) -> str | None:
        try:
            return ast.dump(pysource.parse(textwrap.dedent("".join(lines[first - 1:last]))))
        except SyntaxError:
            return None

    def change(self, fn: Function, operator: str, changed: str | None, site: ast.AST) -> Change | None:
        if changed is None or changed == self.source:
            return None
        first, last = fn.node.lineno, fn.node.end_lineno
        new_lines = changed.splitlines(keepends=True)
        if fn.qualname not in self.dumps:
            self.dumps[fn.qualname] = self._dump(self.lines, first, last)
        dump = self._dump(new_lines, first, last + len(new_lines) - len(self.lines))
        if dump is None or dump == self.dumps[fn.qualname]:
            return None
        return Change(fn, operator, changed, site.lineno, (self.text.segment(site), self.lines[site.lineno - 1].strip()))


def mutation_sites(fn: Function, source: str, checker: "_Checker | None" = None) -> list[Change]:
    """Every single-site mutation of `fn` that parses and changes the program."""
    checker = checker or _Checker(source)
    return [c for op, make, site in _site_edits(fn, source) if (c := checker.change(fn, op, make(), site))]


def checker(source: str) -> _Checker:
    """A checker for the mutations of the functions of one file (share it between them)."""
    return _Checker(source)


def pick_mutations(fn: Function, source: str, count: int, rng: random.Random,
                   checker: _Checker | None = None) -> list[Change]:
    """Up to `count` mutations of `fn`, spread over the operators (`code_gym.grading.builder.
    pick_changes`); a site's text is made and parsed only when it is drawn."""
    checker = checker or _Checker(source)
    return pick_changes(_site_edits(fn, source), OPERATORS, count, rng,
                        lambda op, make, site: checker.change(fn, op, make(), site))
