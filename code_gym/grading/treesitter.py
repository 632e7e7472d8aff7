"""Source read with tree-sitter: what the languages whose source.py parses with a tree-sitter grammar
share (a thread's parser, where and why a tree does not parse, a node's text, a walk of its nodes).
Nothing here knows a language: the caller gives its grammar (a tree_sitter `Language`) or a tree."""
from __future__ import annotations

import threading
from collections.abc import Iterator

from tree_sitter import Language, Node, Parser, Tree

_LOCAL = threading.local()


def parse(language: Language, data: bytes, old: Tree | None = None) -> Tree:
    """The syntax tree of `data` in `language` (never raises: errors are ERROR and MISSING nodes);
    `old`: the tree of an earlier version, edited to match (`Tree.edit`), whose unchanged parts are
    reused. Parsers are not shared between threads: each thread has one per language."""
    parsers = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = Parser(language)
    return parser.parse(data, old) if old is not None else parser.parse(data)


def syntax_error(tree: Tree) -> str | None:
    """Where and why the tree does not parse ("line 3: unexpected `)`"), or None when it does."""
    node = tree.root_node
    if not node.has_error:
        return None
    while not (node.is_missing or node.type == "ERROR"):  # down to the first ERROR or MISSING node
        inner = next((c for c in node.children if c.has_error or c.is_missing), None)
        if inner is None:
            return f"line {node.start_point[0] + 1}: syntax error"
        node = inner
    return describe_error(node)


def describe_error(node: Node) -> str:
    """Where and why a tree does not parse at an ERROR or MISSING `node` ("line 3: unexpected `~`")."""
    where = f"line {node.start_point[0] + 1}"
    if node.is_missing:
        return f"{where}: missing `{node.type}`"
    return f"{where}: unexpected `{cut(node_text(node).partition(chr(10))[0])}`"


def node_text(node: Node) -> str:
    """The node's source text (invalid UTF-8 replaced)."""
    return node.text.decode("utf-8", "replace")


def cut(text: str, limit: int = 40) -> str:
    """`text` on one line, its whitespace runs one space, at most `limit` characters ("..." ends a cut one)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), depth first, without recursion."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))
