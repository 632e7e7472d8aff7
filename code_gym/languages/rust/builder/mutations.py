"""Changes that turn a working Rust function into a task: remove its body (its signature and doc
comment kept), or inject one bug by a mutation of its syntax tree. The operators are the other
languages' (`code_gym.languages.javascript.builder.mutations`), read through tree-sitter-rust:

  flip-comparison  `<` -> `>`, `==` -> `!=`, ... (one comparison reversed)
  off-by-one       an integer literal plus one (its suffix kept: `1usize` -> `2usize`), or a bound
                   moved (`<` <-> `<=`, `>` <-> `>=`)
  swap-arguments   a call's first two arguments exchanged (when they look alike: two literals of
                   one kind, or two names, fields or indexed values)
  drop-condition   `a && b` -> `a` (the last operand dropped), or a guard `if` (no else, a
                   statement of a block with other statements) deleted with its lines
  remove-body      the body becomes `todo!()` (not for a function returning `impl Trait`: `!`
                   cannot stand for an opaque type)

Edits are made on the source bytes at the node's position, so the rest of the file keeps its
formatting and comments, and every change is checked to parse. Tree-sitter checks syntax only: a
change that parses but does not type-check (two arguments of different types swapped) is caught
by the builder's run, which rejects a change whose code does not compile (gate "fails").

The functions are free functions (at the top level and in inline modules), the methods of `impl`
blocks and the default methods of traits, with their doc comments (`///`, `/** */`). Test code
is left out: items marked `#[test]`, `#[bench]` or `#[cfg(test)]` (a `mod tests` so marked with
everything in it). Macro bodies are token trees to tree-sitter: nothing inside a macro call
(`assert!(a < b)`, `vec![0; n]`) is mutated.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node, Parser, Tree

from code_gym.grading import builder
from code_gym.grading.builder import REMOVE_BODY, Change
from code_gym.grading.tree_edits import Edit, EditChecker, SourceText, binary_edits, entry_points, swapped
from code_gym.languages.rust import source as rust_source

OPERATORS = ("flip-comparison", "off-by-one", "swap-arguments", "drop-condition")
NOT_IMPLEMENTED = "todo!()"
_FLIPS = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "!=", "!=": "=="}
_SUFFIXES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_INTEGER = re.compile(rf"(0|[1-9][0-9_]*)({'|'.join(_SUFFIXES)})?")
_MAX = {"i8": 127, "u8": 255, "i16": 32767, "u16": 65535}
# the computations of a body (`parse(text)`, `a < b`): a statement quoting one reveals the code
_COMPUTATIONS = frozenset({"call_expression", "binary_expression", "unary_expression", "index_expression",
                           "macro_invocation", "closure_expression", "compound_assignment_expr", "range_expression",
                           "try_expression", "if_expression", "match_expression"})
# places where an integer literal is part of a type or a name, not a value
_NOT_VALUES = frozenset({"array_type", "type_arguments", "attribute_item", "token_tree", "field_expression"})
_LITERALS = frozenset({"integer_literal", "float_literal", "string_literal", "raw_string_literal", "char_literal",
                       "boolean_literal"})
_PLAIN_VALUES = frozenset({"identifier", "field_expression", "index_expression", "self"})
_PLACEHOLDERS = frozenset({"todo", "unimplemented", "panic", "unreachable"})
_TEST_ATTRIBUTE = re.compile(r"^(test|bench|tokio::test|cfg\s*\((?!.*\bnot\s*\(\s*test\b).*\btest\b.*\))$", re.S)
_LOCAL = threading.local()


def parse(data: bytes, old: Tree | None = None) -> Tree:
    """The tree-sitter-rust tree of `data` (`code_gym.languages.rust.source.parse`, and incremental):
    `old` is an earlier version's tree, edited to match, whose unchanged parts are reused. Parsers
    are not shared between threads."""
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(rust_source.LANGUAGE)
    return parser.parse(data, old) if old is not None else parser.parse(data)


def syntax_error(tree: Tree) -> str | None:
    """Where the tree does not parse ("line 3: syntax error"), or None when it does."""
    found = rust_source.errors(tree)
    return f"line {found[0].start_point[0] + 1}: syntax error" if found else None


def walk(node: Node, skip: frozenset[str] = frozenset()) -> Iterator[Node]:
    """Every node under `node` (itself included), depth first; the subtrees of `skip` types left out."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in reversed(node.children) if c.type not in skip)


@dataclass(frozen=True)
class Lines:
    """A definition's 1-based first and last line (`fn.node.lineno`, `fn.node.end_lineno`)."""
    lineno: int
    end_lineno: int


@dataclass(frozen=True)
class Function(builder.Function):
    """A free function, a method of an `impl` block or a trait's default method: its qualname
    `Type::method` (`module::function` in an inline module), its signature its header up to the
    body's "{" (attributes left out), its docstring its doc comment, its module_doc the file's
    `//!` comment, its class_doc the doc comment of the type an impl block is for (when this file
    defines it), its body_lines those of the body's statements, its node the Lines of the item."""
    span: tuple[int, int] = field(compare=False, repr=False)  # the function_item's bytes in the UTF-8 source


class _Source(SourceText):
    """A source file as text, UTF-8 bytes and tree-sitter tree, edited by byte offsets."""

    def __init__(self, text: str):
        super().__init__(text, parse)

    def function_node(self, fn: Function) -> Node:
        """The function_item of `fn` (found by its byte span); ValueError when there is none."""
        node = self.tree.root_node.descendant_for_byte_range(*fn.span)
        while node is not None and not ((node.start_byte, node.end_byte) == fn.span and node.type == "function_item"):
            node = node.parent
        if node is None:
            raise ValueError(f"{fn.path}: no function {fn.qualname} at bytes {fn.span}")
        return node


# -- the functions of a file -------------------------------------------------------------------

def _is_doc(node: Node) -> bool:
    return node.type in ("line_comment", "block_comment") and any(
        c.type == "outer_doc_comment_marker" for c in node.children)


def _is_inner_doc(node: Node) -> bool:
    return node.type in ("line_comment", "block_comment") and any(
        c.type == "inner_doc_comment_marker" for c in node.children)


def _doc_text(comments: list[Node]) -> str | None:
    """The words of doc comments: their `doc_comment` parts, a block's leading `*`s removed."""
    lines = []
    for comment in comments:
        part = next((c for c in comment.children if c.type == "doc_comment"), None)
        text = part.text.decode("utf-8", "replace") if part is not None else ""
        if comment.type == "block_comment":
            text = "\n".join(re.sub(r"^\s*\*? ?", "", line, count=1) for line in text.splitlines())
        lines += [line[1:] if line.startswith(" ") else line for line in text.rstrip("\n").split("\n")]
    text = "\n".join(line.rstrip() for line in lines).strip()
    return text or None


def _attribute(node: Node) -> str:
    """The attribute of `#[...]` or `#![...]` on one line: `cfg(test)`."""
    inner = next((c for c in node.named_children if c.type == "attribute"), None)
    return " ".join((inner or node).text.decode("utf-8", "replace").split())


def _leading(item: Node) -> tuple[list[Node], list[str]]:
    """The doc comments and the attributes' texts just above an item (they may interleave)."""
    docs, attributes, node = [], [], item.prev_sibling
    while node is not None and (node.type == "attribute_item" or _is_doc(node)):
        if node.type == "attribute_item":
            attributes.append(_attribute(node))
        else:
            docs.insert(0, node)
        node = node.prev_sibling
    return docs, attributes


def _is_test_code(item: Node) -> bool:
    return any(_TEST_ATTRIBUTE.match(a) for a in _leading(item)[1])


def _type_name(node: Node | None) -> str | None:
    """`Foo` of `Foo`, `Foo<T>`, `a::Foo`, `&'a Foo<T>`."""
    if node is None:
        return None
    if node.type in ("generic_type", "reference_type", "pointer_type"):
        return _type_name(node.child_by_field_name("type"))
    if node.type == "scoped_type_identifier":
        return _type_name(node.child_by_field_name("name"))
    return node.text.decode("utf-8", "replace") if node.type in ("type_identifier", "primitive_type") else None


def _type_docs(root: Node) -> dict[str, str]:
    """The doc comments of the structs, enums, unions and traits a file defines, by name."""
    found = {}
    for node in walk(root, frozenset({"function_item", "token_tree"})):
        if node.type in ("struct_item", "enum_item", "union_item", "trait_item"):
            name = _type_name(node.child_by_field_name("name"))
            doc = _doc_text(_leading(node)[0])
            if name and doc:
                found.setdefault(name, doc)
    return found


def _owner(item: Node) -> str | None:
    """The name an impl's or trait's methods go by: the type (`Foo` of `impl<T> Trait for Foo<T>`),
    the trait when the type is one of the impl's type parameters (`impl<T: AsRef<str>> Trait for T`)."""
    if item.type == "trait_item":
        return _type_name(item.child_by_field_name("name"))
    owner = _type_name(item.child_by_field_name("type"))
    parameters = item.child_by_field_name("type_parameters")
    generic = {_type_name(p.child_by_field_name("name")) for p in parameters.named_children} if parameters else set()
    trait = item.child_by_field_name("trait")
    return _type_name(trait) if owner in generic and trait is not None else owner


def _items(container: Node, prefix: str) -> Iterator[tuple[Node, str, str | None]]:
    """(function_item, qualname, the name of its impl's or trait's type or None) for the functions
    of a file or an inline module, its impl blocks and traits; test code left out."""
    for item in container.named_children:
        if _is_test_code(item):
            continue
        if item.type == "function_item":
            yield item, prefix + item.child_by_field_name("name").text.decode(), None
        elif item.type == "mod_item" and item.child_by_field_name("body") is not None:
            name = item.child_by_field_name("name").text.decode()
            yield from _items(item.child_by_field_name("body"), f"{prefix}{name}::")
        elif item.type in ("impl_item", "trait_item") and item.child_by_field_name("body") is not None:
            owner = _owner(item)
            for member in item.child_by_field_name("body").named_children:
                if member.type == "function_item" and not _is_test_code(member):
                    name = member.child_by_field_name("name").text.decode()
                    yield member, f"{prefix}{owner or '_'}::{name}", owner


def _work(body: Node) -> list[Node]:
    """The statements and the tail expression of a block, comments left out."""
    return [c for c in body.named_children if c.type not in ("line_comment", "block_comment")]


def _does_something(statements: list[Node]) -> bool:
    """False for an empty body and for placeholders: a lone `todo!()`, `unimplemented!()`,
    `panic!(..)`, `unreachable!()` or literal."""
    if len(statements) != 1:
        return bool(statements)
    only = statements[0]
    if only.type == "expression_statement" and only.named_children:
        only = only.named_children[0]
    if only.type == "macro_invocation":
        name = only.child_by_field_name("macro")
        return name is None or name.text.decode() not in _PLACEHOLDERS
    return only.type not in _LITERALS and only.type != "unit_expression"


_LINK_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*\S.*$", re.M)  # `[github]: https://...`
_LINKS = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\](?:\([^)]*\)|\[[^\]]*\])|<[^>]+>|&\w+;")


def _module_doc(root: Node) -> str | None:
    """The file's `//!` comment, when it opens the file, from its first paragraph of words (a
    crate's docs often open with badges: `[![github]](https://...)`)."""
    comments = []
    for child in root.children:
        if _is_inner_doc(child):
            comments.append(child)
        elif child.type not in ("line_comment", "block_comment", "inner_attribute_item") or comments:
            break
    text = _LINK_DEFINITION.sub("", _doc_text(comments) or "")
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    while paragraphs and len(_LINKS.sub(" ", paragraphs[0]).split()) < 3:
        paragraphs.pop(0)
    return "\n\n".join(paragraphs).strip() or None


def _function(path: str, src: _Source, node: Node, qualname: str, owner: str | None, module_doc: str | None,
              type_docs: dict[str, str]) -> Function | None:
    """The Function of one function_item, None when it has no multi-line body that does something."""
    body = node.child_by_field_name("body")
    if body is None or body.type != "block":
        return None
    work = _work(body)
    if not _does_something(work) or work[0].start_point[0] <= body.start_point[0]:
        return None
    signature = " ".join(src.data[node.start_byte:body.start_byte].decode("utf-8", "replace").split())
    return Function(path, qualname, signature, _doc_text(_leading(node)[0]), module_doc,
                    type_docs.get(owner) if owner else None,
                    (work[0].start_point[0] + 1, work[-1].end_point[0] + 1),
                    Lines(node.start_point[0] + 1, node.end_point[0] + 1), (node.start_byte, node.end_byte))


def functions(path: str, source: str) -> list[Function]:
    """The file's functions (see the module docstring) whose body does something, in file order;
    SyntaxError when the source does not parse."""
    src = _Source(source)
    error = syntax_error(src.tree)
    if error is not None:
        raise SyntaxError(f"{path}: {error}")
    root = src.tree.root_node
    if _marked_test(root):
        return []  # a file of test code (`#![cfg(test)]`)
    module_doc, type_docs = _module_doc(root), _type_docs(root)
    found = (_function(path, src, node, name, owner, module_doc, type_docs) for node, name, owner in _items(root, ""))
    return [fn for fn in found if fn is not None]


# -- removing a body ---------------------------------------------------------------------------

def _returns_opaque(node: Node) -> bool:
    returned = node.child_by_field_name("return_type")
    return returned is not None and any(n.type == "abstract_type" for n in walk(returned))


def remove_body(fn: Function, source: str) -> Change | None:
    """The body's statements (with the comments on lines of their own just above them) become
    `todo!()`; None for a function returning `impl Trait`."""
    src = _Source(source)
    node = src.function_node(fn)
    if _returns_opaque(node):
        return None
    body = node.child_by_field_name("body")
    work = _work(body)
    first = work[0]
    while (above := first.prev_sibling).type in ("line_comment", "block_comment") and \
            above.start_point[0] > above.prev_sibling.end_point[0]:
        first = above
    start = src.line_start(first.start_byte)
    indent = src.data[start:first.start_byte].decode("utf-8", "surrogatepass")
    if indent.strip():
        start, indent = first.start_byte, ""
    last = body.named_children[-1]
    changed = src.replace(start, last.end_byte, indent + NOT_IMPLEMENTED)
    if syntax_error(parse(changed.encode("utf-8", "surrogatepass"))) is not None:
        return None
    removed = tuple(src.segment(n) for statement in work for n in walk(statement) if n.type in _COMPUTATIONS)
    return Change(fn, REMOVE_BODY, changed, work[0].start_point[0] + 1, removed)


# -- single-site mutations ---------------------------------------------------------------------

_Edit = Edit  # bytes [start, end) replaced by a text


def _arguments(call: Node) -> list[Node]:
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return []
    return [c for c in arguments.named_children
            if c.type not in ("line_comment", "block_comment", "attribute_item")]


def _alike(a: Node, b: Node) -> bool:
    """Whether two arguments look like values of one type: literals of one kind, or two names or
    fields (a call beside a name is mostly another type: a swap of them would not compile)."""
    if a.type in _LITERALS or b.type in _LITERALS:
        return a.type == b.type
    return a.type in _PLAIN_VALUES and b.type in _PLAIN_VALUES


def _swap(src: _Source, call: Node) -> _Edit | None:
    a, b = _arguments(call)[:2]
    return swapped(src, a, b) if _alike(a, b) else None


def _plus_one(src: _Source, node: Node) -> _Edit | None:
    """An integer literal plus one, its suffix kept; None past its type's range or inside a type,
    an attribute, a macro call or a tuple field (`pair.0`)."""
    match = _INTEGER.fullmatch(src.segment(node))
    parent = node.parent
    if match is None or (parent is not None and parent.type in _NOT_VALUES) or \
            any(a.type in _NOT_VALUES - {"field_expression"} for a in _ancestors(node)):
        return None
    value = int(match.group(1).replace("_", "")) + 1
    suffix = match.group(2) or ""
    if value > _MAX.get(suffix, 1 << 31):
        return None
    return node.start_byte, node.end_byte, f"{value}{suffix}"


def _ancestors(node: Node) -> Iterator[Node]:
    node = node.parent
    while node is not None and node.type != "function_item":
        yield node
        node = node.parent


def _guards(src: _Source, body: Node) -> set[int]:
    """ids of the `if` expressions without else that are a statement of a block with other
    statements and have their lines to themselves."""
    out = set()
    for block in walk(body, frozenset({"token_tree"})):
        if block.type != "block":
            continue
        statements = _work(block)
        if len(statements) < 2:
            continue
        for statement in statements:
            inner = statement.named_children[0] if statement.type == "expression_statement" and \
                statement.named_children else statement
            if inner.type == "if_expression" and inner.child_by_field_name("alternative") is None and \
                    src.alone_on_lines(statement):
                out.add(inner.id)
    return out


def _site_edits(fn: Function, src: _Source) -> Iterator[tuple[str, _Edit | None, Node]]:
    """(operator, edit or None, site node) for every mutation site of `fn`, unchecked."""
    body = src.function_node(fn).child_by_field_name("body")
    guards = _guards(src, body)
    for node in walk(body, frozenset({"token_tree", "attribute_item"})):
        if node.type == "binary_expression":
            yield from binary_edits(src, node, _FLIPS)
        elif node.type == "integer_literal":
            yield "off-by-one", _plus_one(src, node), node
        elif node.type == "call_expression" and len(_arguments(node)) >= 2:
            yield "swap-arguments", _swap(src, node), node
        if node.id in guards:
            statement = node.parent if node.parent.type == "expression_statement" else node
            yield "drop-condition", (src.line_start(statement.start_byte), src.line_end(statement.end_byte), ""), \
                node.child_by_field_name("condition")


class _Checker(EditChecker):
    """The original source, parsed once for the sites of all its functions; an edit is checked by
    reparsing only what it touched (`code_gym.grading.tree_edits.EditChecker`)."""

    def __init__(self, source: str):
        super().__init__(_Source(source), parse, syntax_error)


# checker(source), mutation_sites(fn, source, checker=None), pick_mutations(fn, source, count, rng,
# checker=None): the shared entry points over this language's sites
checker, mutation_sites, pick_mutations = entry_points(_Checker, _site_edits, OPERATORS)


# -- test code of a crate -----------------------------------------------------------------------

def is_test_file(source: str) -> bool:
    """Whether a file is marked test code as a whole (`#![cfg(test)]`)."""
    return _marked_test(parse(source.encode("utf-8", "surrogatepass")).root_node)


def _marked_test(root: Node) -> bool:
    return any(c.type == "inner_attribute_item" and _TEST_ATTRIBUTE.match(_attribute(c)) for c in root.named_children)


def _module_declarations(source: str) -> Iterator[tuple[str, bool]]:
    """(name, is test code) of each `mod name;` (a module in a file of its own) of a file, at any
    depth of inline modules."""
    root = parse(source.encode("utf-8", "surrogatepass")).root_node
    for node in walk(root, frozenset({"function_item", "token_tree", "impl_item", "trait_item"})):
        if node.type == "mod_item" and node.child_by_field_name("body") is None:
            yield node.child_by_field_name("name").text.decode(), _is_test_code(node)


def test_modules(source: str) -> list[str]:
    """The modules a file declares as test code: `#[cfg(test)] mod tests;`."""
    return [name for name, test in _module_declarations(source) if test]


def declared_modules(source: str) -> list[str]:
    """Every module a file declares in a file of its own (`mod name;`)."""
    return [name for name, _ in _module_declarations(source)]
