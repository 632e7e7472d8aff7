"""Rust source through tree-sitter: the syntax tree and its tokens, the definition around some
lines (the reference hint's units), and the static check of a changed file (the `static` reward).

Nothing here runs the toolchain. A file "compiles" when it parses without an ERROR or MISSING
node, or with only the ones its starting version already had: tree-sitter-rust 0.24 rejects a few
tokens rustc takes inside macro bodies (`~` in anyhow's macros), so a file that never parsed
cleanly is judged by what the change added. The check's findings are read per definition and
reported once per (kind, definition), so moving code does not make it new:

  Todo         todo!() or unimplemented!(): a stub where code should be
  DebugMacro   dbg!(): a debugging print left in
  UnsafeCode   an unsafe block, fn, impl or trait
  LintAllowed  an `allow` or `expect` attribute: a compiler warning silenced
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_rust
from tree_sitter import Language, Node, Query, QueryCursor, Tree

from code_gym.grading import treesitter
from code_gym.grading.treesitter import describe_error, node_text, walk
from code_gym.languages.base import FileCheck
from code_gym.util.hostfs import MAX_DIFF_BYTES

LANGUAGE = Language(tree_sitter_rust.language())
# as Python's static check: a file that grew by more than this is not parsed, and scores 0
MAX_SOURCE_BYTES = MAX_DIFF_BYTES

# the items a name is given to: what `enclosing_definition` may answer
_NAMED = frozenset({"function_item", "struct_item", "enum_item", "union_item", "trait_item", "const_item",
                    "static_item", "type_item", "macro_definition"})
COMMENTS = frozenset({"line_comment", "block_comment"})
STRINGS = frozenset({"string_literal", "raw_string_literal"})
# leaves that can be a segment of a path (`std::process::exit`, `$crate::x`, `Self::new`)
NAME_TOKENS = frozenset({"identifier", "type_identifier", "field_identifier", "shorthand_field_identifier",
                         "self", "super", "crate", "metavariable", "primitive_type"})


def parse(data: bytes) -> Tree:
    """The tree-sitter syntax tree of `data` (never raises: errors are ERROR and MISSING nodes).
    Parsers are not shared between threads."""
    return treesitter.parse(LANGUAGE, data)


def nodes_of_type(tree: Tree, kind: str) -> list[Node]:
    """Every node of type `kind` in the tree, in source order (a tree-sitter query: far faster than
    walking the tree in Python)."""
    return QueryCursor(_query(kind)).captures(tree.root_node).get("node", [])


@lru_cache(maxsize=None)
def _query(kind: str) -> Query:
    return Query(LANGUAGE, f"({kind}) @node")


def errors(tree: Tree) -> list[Node]:
    """The ERROR and MISSING nodes of the tree, outermost first, in source order."""
    if not tree.root_node.has_error:
        return []
    found, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            found.append(node)
        elif node.has_error:
            stack.extend(reversed(node.children))
    return found


def _error_key(node: Node) -> tuple[str, str]:
    return ("MISSING" if node.is_missing else "ERROR", node.type if node.is_missing else node_text(node))


def new_errors(tree: Tree, old: Tree | None) -> list[Node]:
    """The parse errors of `tree` that `old` (the starting version's tree) does not have, counted by
    kind and text: a grammar gap the task's own file has is not the change's."""
    before = Counter(_error_key(n) for n in errors(old)) if old is not None else Counter()
    fresh = []
    for node in errors(tree):
        key = _error_key(node)
        if before[key] > 0:
            before[key] -= 1
        else:
            fresh.append(node)
    return fresh


# -- tokens -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    """One token as rustc would see it, also inside macro bodies (tree-sitter keeps those as token
    trees): `kind` is the leaf's type ("identifier", "::", "#", ...; "string" for a whole string
    literal, whose decoded value is `text`), `line` 1-based, `node` the leaf or literal."""
    kind: str
    text: str
    line: int
    node: Node


def tokens(tree: Tree) -> list[Token]:
    """The file's tokens in order: comments dropped, each string literal one "string" token, raw
    identifiers (`r#type`) without their prefix."""
    return tokens_of(tree.root_node)


def tokens_of(node: Node) -> list[Token]:
    """The tokens of one node (as `tokens`), read with a tree cursor (a third of the time of
    walking `children`)."""
    out: list[Token] = []
    cursor, depth = node.walk(), 0
    while True:
        here = cursor.node
        kind = here.type
        if kind in STRINGS:
            out.append(Token("string", string_value(here), here.start_point[0] + 1, here))
        elif here.child_count == 0 and kind not in COMMENTS:
            text = node_text(here)
            out.append(Token(kind, text[2:] if kind in NAME_TOKENS and text.startswith("r#") else text,
                             here.start_point[0] + 1, here))
        elif kind not in COMMENTS and cursor.goto_first_child():
            depth += 1
            continue
        while not cursor.goto_next_sibling():
            if depth == 0 or not cursor.goto_parent():
                return out
            depth -= 1


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]+\}|\n\s*|.)", re.S)


def string_value(node: Node) -> str:
    """The value of a (byte, raw, C) string literal, escapes decoded."""
    parts = []
    for child in node.named_children:
        text = node_text(child)
        if child.type == "escape_sequence":
            parts.append(_unescape(text))
        elif child.type == "string_content":
            parts.append(text if node.type == "raw_string_literal" else _ESCAPE.sub(lambda m: _unescape(m.group(0)),
                                                                                   text))
    return "".join(parts)


def _unescape(text: str) -> str:
    body = text[1:]
    if body[:1] == "x":
        return chr(int(body[1:3], 16))
    if body[:2] == "u{":
        try:
            return chr(int(body[2:-1].replace("_", ""), 16))
        except ValueError:
            return ""
    if body[:1] == "\n":
        return ""
    return _ESCAPES.get(body, body)


# -- the definition around some lines -----------------------------------------------------------

def type_name(node: Node | None) -> str:
    """The name of the type an impl is for: `&'a Foo<T>` -> "Foo", `crate::a::Bar` -> "Bar",
    `[T]` -> "[T]" (its text when it has no name)."""
    while node is not None and node.type in ("reference_type", "generic_type", "pointer_type"):
        node = node.child_by_field_name("type")
    if node is None:
        return ""
    if node.type == "scoped_type_identifier":
        return node_text(node.child_by_field_name("name"))
    return " ".join(node_text(node).split())


def definition_name(node: Node) -> str | None:
    """The name a definition node gives the code in it: a fn, type, trait, const, static or macro
    its own; an impl its type's ("Parser" for `impl<'a> Iterator for Parser<'a>`); a module its
    own (a prefix only: `enclosing_definition` never answers a module); None otherwise."""
    if node.type == "impl_item":
        return type_name(node.child_by_field_name("type"))
    if node.type in _NAMED or node.type == "mod_item":
        name = node.child_by_field_name("name")
        return node_text(name) if name is not None else None
    return None


def qualified_name(node: Node) -> str:
    """The qualified name of the innermost definition holding `node` ("" at the top level):
    "Type::method" in an impl, "module::fn" in a module, "outer::inner" for a nested fn."""
    names = []
    while node is not None:
        name = definition_name(node)
        if name is not None:
            names.append(name)
        node = node.parent
    return "::".join(reversed(names))


def enclosing_definition(data: bytes | None, lines: list[int]) -> str:
    """The qualified name of the innermost fn (or struct, enum, trait, impl, const, static, macro)
    spanning all of `lines` (1-based): "Version::parse" in an impl, "parse::digits" in a module,
    "" when none does."""
    if not data or not lines:
        return ""
    low, high = min(lines) - 1, max(lines) - 1
    best, best_size = "", None
    stack = [(parse(data).root_node, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.children:
            name = definition_name(child)
            inner = prefix if name is None else f"{prefix}{name}::"
            first, last = _span(child)
            if name is not None and child.type != "mod_item" and first <= low and last >= high \
                    and (best_size is None or last - first <= best_size):  # a tie: the inner one
                best, best_size = f"{prefix}{name}", last - first
            if first <= low and last >= high:
                stack.append((child, inner))
    return best


def _span(node: Node) -> tuple[int, int]:
    """The rows an item covers, its attributes and doc comments included (they are siblings before
    it in tree-sitter-rust)."""
    first = node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None and (sibling.type == "attribute_item" or sibling.type in COMMENTS and
                                   sibling.end_point[0] >= first - 1):
        first = sibling.start_point[0]
        sibling = sibling.prev_sibling
    return first, node.end_point[0]


# -- the static check -------------------------------------------------------------------------------

def code_findings(tree: Tree) -> list[str]:
    """The static check's findings (see the module docstring), one per kind and definition,
    sorted."""
    found = set()
    for node in walk(tree.root_node):
        kind = _finding_kind(node)
        if kind is not None:
            where = qualified_name(attributed_item(node) or node.parent)
            found.add(f"{kind} in {where}" if where else f"{kind} at the top level")
    return sorted(found)


def attributed_item(node: Node) -> Node | None:
    """The item an outer attribute (or its `attribute_item`) is on: the next sibling that is neither
    an attribute nor a comment; None for anything else."""
    if node.type == "attribute":
        node = node.parent
    if node is None or node.type != "attribute_item":
        return None
    sibling = node.next_sibling
    while sibling is not None and (sibling.type == "attribute_item" or sibling.type in COMMENTS):
        sibling = sibling.next_sibling
    return sibling


def _finding_kind(node: Node) -> str | None:
    if node.type == "macro_invocation":
        name = node_text(node.child_by_field_name("macro")).rsplit("::", 1)[-1]
        return {"todo": "Todo", "unimplemented": "Todo", "dbg": "DebugMacro"}.get(name)
    if node.type in ("unsafe_block", "function_modifiers", "impl_item", "trait_item"):
        own = node.children if node.type != "unsafe_block" else []
        return "UnsafeCode" if node.type == "unsafe_block" or any(c.type == "unsafe" for c in own) else None
    if node.type == "attribute":
        words = [node_text(c) for c in walk(node) if c.type == "identifier"]
        return "LintAllowed" if words and (words[0] in ("allow", "expect") or
                                           words[0] == "cfg_attr" and ("allow" in words or "expect" in words)) \
            else None
    return None


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    """The `static` reward's check of one changed Rust file: it parses (no error its starting
    version lacks), and the findings its starting version `old` did not have."""
    if len(new) - len(old or b"") > MAX_SOURCE_BYTES:
        return FileCheck(path, False, f"over {MAX_SOURCE_BYTES} bytes larger than before: too large to check")
    tree = parse(new)
    old_tree = parse(old) if old is not None else None
    fresh = new_errors(tree, old_tree)
    if fresh:
        return FileCheck(path, False, describe_error(fresh[0]))
    before = set(code_findings(old_tree)) if old_tree is not None else set()
    return FileCheck(path, True, new_findings=[f for f in code_findings(tree) if f not in before])
