"""Changes that turn a working Go function into a task: remove its body (its signature and doc
comment kept), or inject one bug by a mutation of its syntax tree. The operators are Python's and
JavaScript's, read through tree-sitter-go:

  flip-comparison  `<` -> `>`, `==` -> `!=`, ... (one comparison reversed)
  off-by-one       a decimal integer literal plus one (not an array length), or a bound moved
                   (`<` <-> `<=`, `>` <-> `>=`)
  swap-arguments   a call's first two arguments exchanged (not a conversion `T(x)` or a variadic `xs...`)
  drop-condition   `a && b` -> `a` (the last operand dropped), or a guard `if` (no else, in a
                   block with other statements) deleted with its lines
  remove-body      the body becomes `panic("not implemented")`

Go refuses what other languages take: a variable declared in the function and no longer read, an
import no longer used. So a drop is made only where every local variable the dropped code reads is
read elsewhere too, and an import that the change leaves unused (its name was used before, and no
longer is) is taken out of the file's import list. Mutants that still do not compile (arguments of
different types swapped) are the builder's to reject: its run shows the compiler's error.

Edits are made on the source bytes at the node's position, so the rest of the file keeps its
formatting and comments, and every change is checked to parse. The functions are the file's
top-level `func` declarations and methods with a body of several lines.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from code_gym.grading import builder
from code_gym.grading.builder import REMOVE_BODY, Change
from code_gym.grading.tree_edits import Edit, EditChecker, SourceText, binary_edits, entry_points, swapped
from code_gym.languages.go.source import parse, receiver_type, syntax_error, walk

OPERATORS = ("flip-comparison", "off-by-one", "swap-arguments", "drop-condition")
NOT_IMPLEMENTED = 'panic("not implemented")'
_FLIPS = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "!=", "!=": "=="}
_INTEGER = re.compile(r"0|[1-9][0-9]*")
_DECLARATIONS = frozenset({"function_declaration", "method_declaration"})
# the computations of a body (`parse(text)`, `a < b`): a statement quoting one reveals the code
_COMPUTATIONS = frozenset({"call_expression", "binary_expression", "unary_expression", "index_expression",
                           "slice_expression", "func_literal", "type_assertion_expression", "composite_literal"})
_LICENSE = re.compile(r"copyright|licen[cs]e|spdx", re.I)
_BUILD_TAG = re.compile(r"^//\s*(\+build|go:build)\b")


@dataclass(frozen=True)
class Lines:
    """A definition's 1-based first and last line (what the built-in policy reads as
    `fn.node.lineno`, `fn.node.end_lineno`)."""
    lineno: int
    end_lineno: int


@dataclass(frozen=True)
class Function(builder.Function):
    """A top-level function or method: its signature is its header up to the body's "{"
    (`func (b *Buffer) Len() int`), its qualname `Len` or `Buffer.Len` (the receiver's type), its
    docstring the comment lines just above it, cleaned, its module_doc the file's package comment,
    its class_doc the receiver type's doc comment (when the type is declared in the same file), its
    body_lines those of the body's statements, its node the Lines from its doc comment's first line
    to its last line."""
    span: tuple[int, int] = field(compare=False, repr=False)  # the declaration's bytes in the UTF-8 source


class _Source(SourceText):
    """A source file as text, UTF-8 bytes and tree-sitter tree, edited by byte offsets."""

    def __init__(self, text: str):
        super().__init__(text, parse)

    def function_node(self, fn: Function) -> Node:
        """The declaration of `fn` (found by its byte span); ValueError when the source has none there."""
        for node in self.tree.root_node.named_children:
            if node.type in _DECLARATIONS and (node.start_byte, node.end_byte) == fn.span:
                return node
        raise ValueError(f"{fn.path}: no function {fn.qualname} at bytes {fn.span}")


# -- the functions of a file --------------------------------------------------------------------

def _comment_text(comment: str) -> str:
    """A comment's words without its markers: `// Adds.` -> "Adds.", `/* a */` -> "a"."""
    if comment.startswith("/*"):
        lines = comment.removeprefix("/*").removesuffix("*/").splitlines()
        return "\n".join(re.sub(r"^\s*\*?\s?", "", line, count=1).rstrip() for line in lines).strip()
    return re.sub(r"^//\s?", "", comment).rstrip()


def _doc_comments(anchor: Node) -> list[Node]:
    """The comment nodes just above `anchor` (the last one on the line before it, and the run of
    comments on the lines above that)."""
    found, row, node = [], anchor.start_point[0], anchor.prev_sibling
    while node is not None and node.type == "comment" and node.end_point[0] == row - 1:
        found.insert(0, node)
        row, node = node.start_point[0], node.prev_sibling
    return found


def _doc(anchor: Node | None) -> str | None:
    """The doc comment of a declaration, cleaned; None when it has none."""
    if anchor is None:
        return None
    lines = [_comment_text(c.text.decode("utf-8", "replace")) for c in _doc_comments(anchor)]
    text = "\n".join(line for line in lines if not _BUILD_TAG.match("//" + line)).strip()
    return text or None


def _module_doc(root: Node) -> str | None:
    """The package comment (the comment just above `package x`), when it is no license header."""
    clause = next((c for c in root.named_children if c.type == "package_clause"), None)
    text = _doc(clause)
    return None if text is None or _LICENSE.search(text) else text


def _type_docs(root: Node) -> dict[str, str]:
    """Type name -> its doc comment, for the types the file declares at its top level."""
    docs = {}
    for declaration in root.named_children:
        if declaration.type != "type_declaration":
            continue
        specs = [s for s in declaration.named_children if s.type in ("type_spec", "type_alias")]
        for spec in specs:
            name = spec.child_by_field_name("name")
            doc = _doc(declaration if len(specs) == 1 else spec)
            if name is not None and doc:
                docs[name.text.decode()] = doc
    return docs


def _statements(body: Node) -> list[Node]:
    """A block's statements, comments left out."""
    listed = next((c for c in body.named_children if c.type == "statement_list"), body)
    return [c for c in listed.named_children if c.type != "comment"]


def _does_something(statements: list[Node]) -> bool:
    """False for an empty body and for a lone `panic(...)` or bare `return`."""
    if len(statements) != 1:
        return bool(statements)
    only = statements[0]
    if only.type == "return_statement":
        return bool(only.named_children)
    if only.type == "expression_statement":
        call = only.named_children[0]
        callee = call.child_by_field_name("function") if call.type == "call_expression" else None
        return not (callee is not None and callee.text == b"panic")
    return True


def _function(path: str, src: _Source, node: Node, module_doc: str | None, type_docs: dict[str, str]) -> Function | None:
    """The Function of one declaration, None when its body is no multi-line block that does something."""
    body = node.child_by_field_name("body")
    if body is None:
        return None
    work = _statements(body)
    if not _does_something(work) or work[0].start_point[0] <= body.start_point[0]:
        return None
    name = node.child_by_field_name("name").text.decode()
    owner = receiver_type(node) if node.type == "method_declaration" else None
    comments = _doc_comments(node)
    first = comments[0] if comments else node
    signature = " ".join(src.data[node.start_byte:body.start_byte].decode("utf-8", "replace").split())
    return Function(path, f"{owner}.{name}" if owner else name, signature, _doc(node), module_doc,
                    type_docs.get(owner) if owner else None,
                    (work[0].start_point[0] + 1, work[-1].end_point[0] + 1),
                    Lines(first.start_point[0] + 1, node.end_point[0] + 1), (node.start_byte, node.end_byte))


def functions(path: str, source: str) -> list[Function]:
    """The file's top-level functions and methods whose body does something, in file order;
    SyntaxError when the source does not parse."""
    src = _Source(source)
    error = syntax_error(src.tree)
    if error is not None:
        raise SyntaxError(f"{path}: {error}")
    root = src.tree.root_node
    module_doc, type_docs = _module_doc(root), _type_docs(root)
    found = (_function(path, src, n, module_doc, type_docs) for n in root.named_children if n.type in _DECLARATIONS)
    return [fn for fn in found if fn is not None]


# -- imports a change leaves unused -------------------------------------------------------------

def _import_name(spec: Node) -> str | None:
    """The name a file uses an import by: its alias, else the path's last element without a
    version suffix or `go-` prefix (a guess: the package clause of the import is not read); None for
    `_` and `.` imports."""
    alias = spec.child_by_field_name("name")
    if alias is not None:
        text = alias.text.decode()
        return None if text in ("_", ".") else text
    path = spec.child_by_field_name("path").text.decode().strip('"`')
    parts = path.split("/")
    last = parts[-1]
    if re.fullmatch(r"v[0-9]+", last) and len(parts) > 1:
        last = parts[-2]
    last = re.sub(r"\.v[0-9]+$", "", last).removeprefix("go-")
    return last.replace("-", "_").replace(".", "_")


def _used_names(root: Node) -> set[str]:
    """The package names the file uses: the operands of `pkg.Name` selectors and qualified types."""
    used = set()
    for node in walk(root):
        if node.type == "selector_expression":
            operand = node.child_by_field_name("operand")
            if operand is not None and operand.type == "identifier":
                used.add(operand.text.decode())
        elif node.type == "qualified_type":
            package = node.child_by_field_name("package")
            if package is not None:
                used.add(package.text.decode())
    return used


def _unused_import_edits(before: Node, after: Tree, data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of `data` (parsed as `after`) to delete: the import specs whose name `before`
    used and `after` no longer does; a whole `import "x"` or `import (...)` left empty goes too."""
    gone = _used_names(before) - _used_names(after.root_node)
    if not gone:
        return []
    cuts = []
    for declaration in after.root_node.named_children:
        if declaration.type != "import_declaration":
            continue
        specs = [s for n in declaration.named_children for s in ([n] if n.type == "import_spec" else n.named_children)
                 if s.type == "import_spec"]
        dropped = [s for s in specs if _import_name(s) in gone]
        if dropped and len(dropped) == len(specs):
            cuts.append((declaration.start_byte, declaration.end_byte))
        else:
            cuts += [(data.rfind(b"\n", 0, s.start_byte) + 1, (data.find(b"\n", s.end_byte) + 1) or len(data))
                     for s in dropped]
    return cuts


def _without_unused_imports(original: Tree, data: bytes) -> bytes:
    """`data` (an edit of the source parsed as `original`) with the imports the edit left unused removed."""
    cuts = _unused_import_edits(original.root_node, parse(data), data)
    for start, end in sorted(cuts, reverse=True):
        data = data[:start] + data[end:]
    return data


# -- removing a body ----------------------------------------------------------------------------

def _previous(node: Node) -> Node | None:
    """The node before `node` in its block (a block's leading comments are outside its statement_list)."""
    if node.prev_sibling is None and node.parent is not None and node.parent.type == "statement_list":
        return node.parent.prev_sibling
    return node.prev_sibling


def remove_body(fn: Function, source: str) -> Change | None:
    """The body's statements (with the comments on lines of their own just above the first)
    become `panic("not implemented")`."""
    src = _Source(source)
    body = src.function_node(fn).child_by_field_name("body")
    work = _statements(body)
    first = work[0]
    while (above := _previous(first)) is not None and above.type == "comment" and \
            above.start_point[0] > body.start_point[0]:
        first = above
    start = src.line_start(first.start_byte)
    indent = src.data[start:first.start_byte].decode("utf-8", "surrogatepass")
    if indent.strip():
        start, indent = first.start_byte, ""
    closing = body.children[-1]  # the body's "}", on a line of its own in gofmt's layout
    if b"\n" not in src.data[work[-1].end_byte:closing.start_byte]:
        return None
    end = src.line_start(closing.start_byte)
    data = src.data[:start] + (indent + NOT_IMPLEMENTED + "\n").encode() + src.data[end:]
    data = _without_unused_imports(src.tree, data)
    if syntax_error(parse(data)) is not None:
        return None
    removed = tuple(src.segment(n) for statement in work for n in walk(statement) if n.type in _COMPUTATIONS)
    return Change(fn, REMOVE_BODY, data.decode("utf-8", "surrogatepass"), work[0].start_point[0] + 1, removed)


# -- single-site mutations ----------------------------------------------------------------------

_Edit = Edit  # bytes [start, end) replaced by a text


def _declarations(body: Node) -> list[Node]:
    """The name nodes of the local variables a body declares (`x :=`, `var x`, `for k, v := range`)."""
    names = []
    for node in walk(body):
        if node.type in ("short_var_declaration", "range_clause"):
            left = node.child_by_field_name("left")
            names += [c for c in (left.named_children if left is not None else ()) if c.type == "identifier"]
        elif node.type == "var_spec":
            names += node.children_by_field_name("name")
    return names


def _written(node: Node) -> bool:
    """Whether an identifier is only written where it stands (the left side of `=` or `:=`)."""
    parent = node.parent
    if parent is None or parent.type != "expression_list":
        return False
    holder = parent.parent
    return holder is not None and holder.type in ("assignment_statement", "short_var_declaration", "range_clause") \
        and holder.child_by_field_name("left") == parent and (holder.type != "assignment_statement" or
                                                              holder.child_by_field_name("operator").text == b"=")


def _reads(node: Node) -> list[Node]:
    return [n for n in walk(node) if n.type == "identifier" and not _written(n)]


def _droppable(body: Node, dropped: Node, declared: list[Node]) -> bool:
    """Whether every local variable `dropped` reads and does not declare itself is read elsewhere
    in the body too (Go refuses a variable that is declared and never read)."""
    inside = range(dropped.start_byte, dropped.end_byte)
    outer = {n.text.decode() for n in declared if n.start_byte not in inside}
    names = {n.text.decode() for n in _reads(dropped)} & outer
    if not names:
        return True
    elsewhere = {n.text.decode() for n in _reads(body) if n.start_byte not in inside}
    return names <= elsewhere


def _swappable(call: Node) -> bool:
    """A call with two or more arguments, none of the first two spread (`xs...`), that is no
    conversion or built-in whose first argument is a type (`make([]int, n)`)."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None or arguments.type != "argument_list":
        return False
    items = [c for c in arguments.named_children if c.type != "comment"]
    if len(items) < 2 or any(c.type == "variadic_argument" for c in items[:2]):
        return False
    callee = call.child_by_field_name("function")
    return not (callee is not None and callee.text in (b"make", b"new", b"append", b"copy", b"delete")) and \
        not any(c.type.endswith("_type") or c.type == "type_identifier" for c in items[:2])


def _swap(src: _Source, call: Node) -> _Edit | None:
    arguments = call.child_by_field_name("arguments")
    a, b = [c for c in arguments.named_children if c.type != "comment"][:2]
    return swapped(src, a, b)


def _guards(src: _Source, body: Node) -> list[Node]:
    """The `if` statements without else that share their block with other statements and have
    their lines to themselves."""
    out = []
    for block in walk(body):
        if block.type not in ("block", "expression_case", "default_case", "type_case"):
            continue
        statements = _statements(block)
        if len(statements) > 1:
            out += [s for s in statements if s.type == "if_statement" and s.child_by_field_name("alternative") is None
                    and src.alone_on_lines(s)]
    return out


def _in_array_length(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "array_type" and parent.child_by_field_name("length") == node


def _site_edits(fn: Function, src: _Source) -> Iterator[tuple[str, _Edit | None, Node]]:
    """(operator, edit or None, site node) for every mutation site of `fn`, unchecked."""
    body = src.function_node(fn).child_by_field_name("body")
    declared = _declarations(body)
    guards = {g.id for g in _guards(src, body)}
    for node in walk(body):
        if node.type == "binary_expression":
            yield from binary_edits(src, node, _FLIPS, lambda right: _droppable(body, right, declared))
        elif node.type == "int_literal" and _INTEGER.fullmatch(src.segment(node)) and not _in_array_length(node):
            yield "off-by-one", (node.start_byte, node.end_byte, str(int(src.segment(node)) + 1)), node
        elif node.type == "call_expression" and _swappable(node):
            yield "swap-arguments", _swap(src, node), node
        if node.id in guards and _droppable(body, node, declared):
            yield "drop-condition", (src.line_start(node.start_byte), src.line_end(node.end_byte), ""), \
                node.child_by_field_name("condition")


class _Checker(EditChecker):
    """The original source, parsed once for the sites of all its functions; an edit is checked by
    reparsing only what it touched (`code_gym.grading.tree_edits.EditChecker`)."""

    def __init__(self, source: str):
        # the edited source's bytes keep no import the edit left unused
        super().__init__(_Source(source), parse, syntax_error,
                         lambda src, data: _without_unused_imports(src.tree, data))


# checker(source), mutation_sites(fn, source, checker=None), pick_mutations(fn, source, count, rng,
# checker=None): the shared entry points over this language's sites
checker, mutation_sites, pick_mutations = entry_points(_Checker, _site_edits, OPERATORS)
