"""Changes that turn a working JavaScript function into a task: remove its body (its signature and
JSDoc kept), or inject one bug by a mutation of its syntax tree. The operators are Python's
(`code_gym.languages.python.builder.mutations`), read through tree-sitter-javascript:

  flip-comparison  `<` -> `>`, `===` -> `!==`, ... (one comparison reversed)
  off-by-one       an integer literal plus one, or a bound moved (`<` <-> `<=`, `>` <-> `>=`)
  swap-arguments   a call's first two arguments exchanged
  drop-condition   `a && b` -> `a` (the last operand dropped), or a guard `if` (no else, in a
                   block with other statements) deleted with its lines
  remove-body      the body becomes `throw new Error("not implemented");`

Edits are made on the source bytes at the node's position, so the rest of the file keeps its
formatting and comments, and every change is checked to parse. The functions are the module's
top-level ones: function declarations, functions and classes assigned to a variable or to a
member (`module.exports.f = function ...`, `Foo.prototype.bar = ...`), the methods of top-level
classes and of top-level object literals, also inside a top-level IIFE (`(function () {...})()`).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node

from code_gym.grading import builder
from code_gym.grading.builder import REMOVE_BODY, Change
from code_gym.grading.tree_edits import Edit, EditChecker, SourceText, binary_edits, entry_points, swapped
from code_gym.languages.javascript import source as jssource

OPERATORS = ("flip-comparison", "off-by-one", "swap-arguments", "drop-condition")
NOT_IMPLEMENTED = 'throw new Error("not implemented");'
_FLIPS = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "!=", "!=": "==", "===": "!==", "!==": "==="}
_INTEGER = re.compile(r"0|[1-9][0-9]*")
_FUNCTIONS = frozenset({"function_expression", "arrow_function", "generator_function"})
_DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration"})
# the computations of a body ("parse(text)", "a < b"): a statement quoting one reveals the code
_COMPUTATIONS = frozenset({"call_expression", "new_expression", "binary_expression", "unary_expression",
                           "ternary_expression", "subscript_expression", "arrow_function", "function_expression",
                           "augmented_assignment_expression", "update_expression"})
_LICENSE = re.compile(r"copyright|licen[cs]e|\(c\)", re.I)


@dataclass(frozen=True)
class Lines:
    """A definition's 1-based first and last line (the attributes a Python ast node has, which the
    built-in policy reads as `fn.node.lineno`, `fn.node.end_lineno`)."""
    lineno: int
    end_lineno: int


@dataclass(frozen=True)
class Function(builder.Function):
    """A top-level function or a method of a top-level class or object (see the module docstring):
    its signature is its header up to the body's "{" (`function area(w, h)`, `total()`), its
    docstring the comment just above it (JSDoc), cleaned, its module_doc the file's leading comment
    when that is no license header, its body_lines those of the body's statements (after
    directives), its node the Lines from its statement's first line to its last."""
    span: tuple[int, int] = field(compare=False, repr=False)  # the function node's bytes in the UTF-8 source


class _Source(SourceText):
    """A source file as text, UTF-8 bytes and tree-sitter tree, edited by byte offsets."""

    def __init__(self, text: str):
        super().__init__(text, jssource.parse)

    def function_node(self, fn: Function) -> Node:
        """The node of `fn` (found by its byte span); ValueError when the source has none there."""
        node = self.tree.root_node.descendant_for_byte_range(*fn.span)
        while node is not None and not ((node.start_byte, node.end_byte) == fn.span and node.child_by_field_name("body")):
            node = node.parent
        if node is None:
            raise ValueError(f"{fn.path}: no function {fn.qualname} at bytes {fn.span}")
        return node


# -- the functions of a module ------------------------------------------------------------------

def _unwrapped(node: Node | None) -> Node | None:
    """The expression inside parentheses and a leading `!`/`void` (how IIFEs are written)."""
    while node is not None and node.type in ("parenthesized_expression", "unary_expression"):
        node = node.named_children[-1] if node.named_children else None
    return node


def _iife_body(statement: Node) -> Node | None:
    """The body of a statement that calls a function expression at once, or None."""
    if statement.type != "expression_statement" or not statement.named_children:
        return None
    call = _unwrapped(statement.named_children[0])
    if call is None or call.type != "call_expression":
        return None
    callee = _unwrapped(call.child_by_field_name("function"))
    body = callee.child_by_field_name("body") if callee is not None and callee.type in _FUNCTIONS else None
    return body if body is not None and body.type == "statement_block" else None


def _top_statements(node: Node) -> Iterator[Node]:
    """The module's top-level statements, a top-level IIFE's replaced by those of its body."""
    for child in node.named_children:
        body = _iife_body(child)
        if body is not None:
            yield from _top_statements(body)
        else:
            yield child


def _members(body: Node | None, prefix: str, owner: Node) -> Iterator[tuple[Node, str, Node, Node]]:
    """(function, qualname, anchor, owner) for the methods of a class body or object literal, and its
    members holding a function (`parse: function (...) {...}`, a class field `= () => {...}`)."""
    for member in body.named_children if body is not None else ():
        if member.type == "method_definition":
            name = jssource.definition_name(member)
            if name is not None:
                yield member, prefix + name, member, owner
        elif member.type in ("pair", "field_definition"):
            value = member.child_by_field_name("value")
            name = jssource.definition_name(value) if value is not None and value.type in _FUNCTIONS else None
            if name is not None:
                yield value, prefix + name, member, owner


def _valued(value: Node | None, anchor: Node) -> Iterator[tuple[Node, str, Node, Node | None]]:
    """The definitions of a value put in a variable or member: a function, a class's methods, an
    object's methods."""
    if value is None:
        return
    name = jssource.definition_name(value)
    if value.type in _FUNCTIONS:
        yield value, name or "default", anchor, None
    elif value.type == "class":
        yield from _members(value.child_by_field_name("body"), f"{name or 'default'}.", anchor)
    elif value.type == "object":
        space = jssource.namespace_name(value)
        if space is not None:
            yield from _members(value, f"{space}." if space else "", value)


def _definitions(statement: Node) -> Iterator[tuple[Node, str, Node, Node | None]]:
    """(function, qualname, anchor: the node its doc comment precedes and its signature starts,
    owner: its class or object, or None) for each function a top-level statement defines."""
    node = statement
    if node.type == "export_statement":
        node = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if node is None:
            return
        if node.type in _FUNCTIONS or node.type == "class":
            yield from _valued(node, statement)
            return
    if node.type in _DECLARATIONS:
        yield node, jssource.definition_name(node), statement, None
    elif node.type == "class_declaration":
        yield from _members(node.child_by_field_name("body"), f"{jssource.definition_name(node)}.", statement)
    elif node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            if declarator.type == "variable_declarator":
                yield from _valued(declarator.child_by_field_name("value"), statement)
    elif node.type == "expression_statement" and node.named_children:
        expression = node.named_children[0]
        if expression.type == "assignment_expression":
            yield from _valued(expression.child_by_field_name("right"), statement)


def _comment_text(comment: str) -> str:
    """A comment's words without its markers: `/** Adds. */` -> "Adds.", `// a` -> "a"."""
    lines = comment.strip().removeprefix("/**").removeprefix("/*").removesuffix("*/").splitlines()
    return "\n".join(re.sub(r"^\s*(//+|\*+)?\s?", "", line, count=1).rstrip() for line in lines).strip()


def _doc(anchor: Node | None) -> str | None:
    """The comment just above a node (its last line on the line before the node's first), or a
    run of adjacent line comments there; None when there is none."""
    if anchor is None:
        return None
    found, row, node = [], anchor.start_point[0], anchor.prev_named_sibling
    while node is not None and node.type == "comment" and node.end_point[0] == row - 1:
        found.insert(0, jssource.node_text(node))
        row, node = node.start_point[0], node.prev_named_sibling
        if found[0].startswith("/*"):
            break
    text = "\n".join(_comment_text(c) for c in found).strip()
    return text or None


def _module_doc(tree_root: Node) -> str | None:
    """The file's leading comment, when a blank line parts it from the code and it is no license."""
    children = [c for c in tree_root.named_children if c.type != "hash_bang_line"]
    if len(children) < 2 or children[0].type != "comment":
        return None
    text = jssource.node_text(children[0])
    if text.startswith("/*!") or _LICENSE.search(text) or children[1].start_point[0] <= children[0].end_point[0] + 1:
        return None
    return _comment_text(text) or None


def _work(body: Node) -> list[Node]:
    """The statements of a block after its directives (`"use strict";`), comments left out."""
    statements = [c for c in body.named_children if c.type != "comment"]
    while statements and statements[0].type == "expression_statement" and \
            statements[0].named_children and statements[0].named_children[0].type == "string":
        statements.pop(0)
    return statements


def _does_something(statements: list[Node]) -> bool:
    """False for an empty body and for placeholders: a lone `throw`, `return;`, `;` or literal."""
    if len(statements) != 1:
        return bool(statements)
    only = statements[0]
    if only.type in ("throw_statement", "empty_statement"):
        return False
    if only.type == "return_statement":
        return bool(only.named_children)
    return not (only.type == "expression_statement" and only.named_children[0].type in ("string", "number"))


def _function(path: str, src: _Source, found: tuple[Node, str, Node, Node | None],
              module_doc: str | None) -> Function | None:
    """The Function of one definition, None when its body is no multi-line block that does something."""
    node, qualname, anchor, owner = found
    body = node.child_by_field_name("body")
    if body is None or body.type != "statement_block":
        return None
    work = _work(body)
    if not _does_something(work) or work[0].start_point[0] <= body.start_point[0]:
        return None
    signature = " ".join(src.data[anchor.start_byte:body.start_byte].decode("utf-8", "replace").split())
    class_anchor = owner if owner is None or owner.type == "object" else _statement_of(owner)
    return Function(path, qualname, signature, _doc(anchor), module_doc, _doc(class_anchor) if owner else None,
                    (work[0].start_point[0] + 1, work[-1].end_point[0] + 1),
                    Lines(anchor.start_point[0] + 1, node.end_point[0] + 1), (node.start_byte, node.end_byte))


def _statement_of(node: Node) -> Node:
    """The statement a class or object is part of (the node its doc comment precedes)."""
    while node.parent is not None and node.parent.type not in ("program", "statement_block"):
        node = node.parent
    return node


def functions(path: str, source: str) -> list[Function]:
    """The module's functions (see the module docstring) whose body does something, in file order;
    SyntaxError when the source does not parse."""
    src = _Source(source)
    error = jssource.syntax_error(src.tree)
    if error is not None:
        raise SyntaxError(f"{path}: {error}")
    module_doc = _module_doc(src.tree.root_node)
    found = (_function(path, src, d, module_doc) for s in _top_statements(src.tree.root_node) for d in _definitions(s))
    return [fn for fn in found if fn is not None]


# -- removing a body ----------------------------------------------------------------------------

def remove_body(fn: Function, source: str) -> Change | None:
    """The body's statements (after its directives, with the comments just above them) become
    `throw new Error("not implemented");`."""
    src = _Source(source)
    body = src.function_node(fn).child_by_field_name("body")
    work = _work(body)
    first = work[0]
    while (above := first.prev_sibling).type == "comment" and above.start_point[0] > above.prev_sibling.end_point[0]:
        first = above  # a comment on lines of its own just above goes with the body
    start = src.line_start(first.start_byte)
    indent = src.data[start:first.start_byte].decode("utf-8", "surrogatepass")
    if indent.strip():  # something else starts the line: keep it, cut from the statement
        start, indent = first.start_byte, ""
    last = body.named_children[-1]
    changed = src.replace(start, last.end_byte, indent + NOT_IMPLEMENTED)
    if jssource.syntax_error(jssource.parse(changed.encode("utf-8", "surrogatepass"))) is not None:
        return None
    removed = tuple(src.segment(n) for statement in work for n in jssource.walk(statement) if n.type in _COMPUTATIONS)
    return Change(fn, REMOVE_BODY, changed, work[0].start_point[0] + 1, removed)


# -- single-site mutations ----------------------------------------------------------------------

_Edit = Edit  # bytes [start, end) replaced by a text


def _swap(src: _Source, call: Node) -> _Edit | None:
    arguments = call.child_by_field_name("arguments")
    a, b = [c for c in arguments.named_children if c.type != "comment"][:2]
    return swapped(src, a, b)


def _drop_if(src: _Source, node: Node) -> _Edit:
    """A guard `if (...) ...` without else is deleted, lines and all."""
    return src.line_start(node.start_byte), src.line_end(node.end_byte), ""


def _swappable(node: Node) -> bool:
    """A call or `new` with two or more plain arguments (no spread among the first two); not
    `await (a, b)`, which tree-sitter can read as a call of `await`."""
    arguments = node.child_by_field_name("arguments")
    callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
    if arguments is None or arguments.type != "arguments" or (callee is not None and callee.text == b"await"):
        return False
    items = [c for c in arguments.named_children if c.type != "comment"]
    return len(items) >= 2 and not any(c.type == "spread_element" for c in items[:2])


def _guards(src: _Source, body: Node) -> set[int]:
    """ids of the `if` statements without else that share their block with other statements and
    have their lines to themselves."""
    out = set()
    for block in jssource.walk(body):
        if block.type not in ("statement_block", "switch_case", "switch_default"):
            continue
        statements = ([c for c in block.named_children if c.type != "comment"] if block.type == "statement_block"
                      else block.children_by_field_name("body"))
        if len(statements) > 1:
            out |= {s.id for s in statements if s.type == "if_statement" and s.child_by_field_name("alternative") is None
                    and src.alone_on_lines(s)}
    return out


def _site_edits(fn: Function, src: _Source) -> Iterator[tuple[str, _Edit | None, Node]]:
    """(operator, edit or None, site node) for every mutation site of `fn`, unchecked."""
    body = src.function_node(fn).child_by_field_name("body")
    guards = _guards(src, body)
    for node in jssource.walk(body):
        if node.type == "binary_expression":
            yield from binary_edits(src, node, _FLIPS)
        elif node.type == "number" and _INTEGER.fullmatch(src.segment(node)):
            yield "off-by-one", (node.start_byte, node.end_byte, str(int(src.segment(node)) + 1)), node
        elif node.type in ("call_expression", "new_expression") and _swappable(node):
            yield "swap-arguments", _swap(src, node), node
        if node.id in guards:
            yield "drop-condition", _drop_if(src, node), node.child_by_field_name("condition")


class _Checker(EditChecker):
    """The original source, parsed once for the sites of all its functions; an edit is checked by
    reparsing only what it touched (`code_gym.grading.tree_edits.EditChecker`)."""

    def __init__(self, source: str):
        super().__init__(_Source(source), jssource.parse, jssource.syntax_error)


# checker(source), mutation_sites(fn, source, checker=None), pick_mutations(fn, source, count, rng,
# checker=None): the shared entry points over this language's sites
checker, mutation_sites, pick_mutations = entry_points(_Checker, _site_edits, OPERATORS)
