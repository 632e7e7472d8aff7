"""Mutations of a source file parsed by tree-sitter, edited by byte offsets: what the builders of the
languages read with tree-sitter share. A language gives its parser, its syntax check and its sites
(operator, edit, node); the source's bytes, the edit's incremental reparse, the Change an edit makes
and the mutations' entry points (`checker`, `mutation_sites`, `pick_mutations`) are the same.

Nothing here knows a language: a tree is whatever the language's `parse` returns (tree-sitter's)."""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from code_gym.grading.builder import Change, pick_changes

Edit = tuple[int, int, str]  # bytes [start, end) replaced by a text


class SourceText:
    """A source file as text, UTF-8 bytes and tree-sitter tree (`parse(bytes)`), edited by byte offsets."""

    def __init__(self, text: str, parse: Callable[[bytes], Any]):
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.tree = parse(self.data)

    def segment(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def replace(self, start: int, end: int, new: str) -> str:
        return (self.data[:start] + new.encode() + self.data[end:]).decode("utf-8", "surrogatepass")

    def line_start(self, at: int) -> int:
        return self.data.rfind(b"\n", 0, at) + 1

    def line_end(self, at: int) -> int:
        end = self.data.find(b"\n", at)
        return len(self.data) if end < 0 else end + 1

    def alone_on_lines(self, node) -> bool:
        """Whether only whitespace shares the node's first and last lines."""
        before = self.data[self.line_start(node.start_byte):node.start_byte]
        after = self.data[node.end_byte:self.line_end(node.end_byte)]
        return not before.strip() and not after.strip()


BOUNDS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}  # a comparison's bound moved by one


def swapped(src: SourceText, a, b) -> Edit | None:
    """Nodes `a` and `b` (a before b) swapped, what is between them kept; None when their texts are the same."""
    if src.segment(a) == src.segment(b):
        return None
    between = src.data[a.end_byte:b.start_byte].decode("utf-8", "surrogatepass")
    return a.start_byte, b.end_byte, src.segment(b) + between + src.segment(a)


def binary_edits(src: SourceText, node, flips: dict[str, str],
                 droppable: Callable[[Any], bool] | None = None) -> Iterator[tuple[str, Edit, Any]]:
    """A binary expression's comparison flipped (`flips`: operator -> its opposite) or its bound
    moved (BOUNDS), and `a && b` / `a || b` cut to `a` (where `droppable(b)`, when given):
    (operator, edit, node) each."""
    operator = node.child_by_field_name("operator")
    text = src.segment(operator)
    if text in flips:
        yield "flip-comparison", (operator.start_byte, operator.end_byte, flips[text]), node
    if text in BOUNDS:
        yield "off-by-one", (operator.start_byte, operator.end_byte, BOUNDS[text]), node
    if text in ("&&", "||") and (droppable is None or droppable(node.child_by_field_name("right"))):
        yield "drop-condition", (node.child_by_field_name("left").end_byte, node.end_byte, ""), node


def point(data: bytes, at: int) -> tuple[int, int]:
    """The (row, byte column) of a byte offset."""
    return data.count(b"\n", 0, at), at - (data.rfind(b"\n", 0, at) + 1)


class EditChecker:
    """The original source, parsed once for the sites of all its functions; an edit is checked by
    reparsing only what it touched (tree-sitter's incremental parse from the original's tree):
    `parse(data, old_tree)` is the language's parser, `syntax_error(tree)` says what does not parse
    (None: nothing), and `finish(src, data)` (optional) the edited bytes as they are kept."""

    def __init__(self, src: SourceText, parse: Callable[..., Any], syntax_error: Callable[[Any], Any],
                 finish: Callable[[SourceText, bytes], bytes] | None = None):
        self.src, self._parse, self._syntax_error, self._finish = src, parse, syntax_error, finish

    def parses(self, edit: Edit) -> bytes | None:
        """The edited source's bytes when it parses cleanly, else None."""
        start, end, text = edit
        new = text.encode("utf-8", "surrogatepass")
        data = self.src.data[:start] + new + self.src.data[end:]
        tree = self.src.tree.copy()
        tree.edit(start_byte=start, old_end_byte=end, new_end_byte=start + len(new),
                  start_point=point(self.src.data, start), old_end_point=point(self.src.data, end),
                  new_end_point=point(data, start + len(new)))
        if self._syntax_error(self._parse(data, tree)) is not None:
            return None
        return data if self._finish is None else self._finish(self.src, data)

    def change(self, fn, operator: str, edit: Edit | None, site) -> Change | None:
        """The Change an edit makes, None when it makes none or does not parse."""
        if edit is None or self.src.data[edit[0]:edit[1]] == edit[2].encode("utf-8", "surrogatepass"):
            return None
        data = self.parses(edit)
        if data is None:
            return None
        shown = self.src.data[self.src.line_start(site.start_byte):self.src.line_end(site.start_byte)]
        return Change(fn, operator, data.decode("utf-8", "surrogatepass"), site.start_point[0] + 1,
                      (self.src.segment(site), shown.decode("utf-8", "replace").strip()))


def entry_points(make_checker: Callable[[str], EditChecker],
                 site_edits: Callable[[Any, SourceText], Iterable[tuple[str, Edit | None, Any]]],
                 operators) -> tuple[Callable, Callable, Callable]:
    """A language's `checker`, `mutation_sites` and `pick_mutations`, from its checker's maker (a
    source's text -> an EditChecker), its sites (`site_edits(fn, src)` -> (operator, edit, node)
    each) and its operators."""

    def checker(source: str) -> EditChecker:
        """A checker for the mutations of the functions of one file (share it between them)."""
        return make_checker(source)

    def mutation_sites(fn, source: str, checker: EditChecker | None = None) -> list[Change]:
        """Every single-site mutation of `fn` that parses and changes the program."""
        checker = checker or make_checker(source)
        return [c for op, edit, site in site_edits(fn, checker.src) if (c := checker.change(fn, op, edit, site))]

    def pick_mutations(fn, source: str, count: int, rng: random.Random,
                       checker: EditChecker | None = None) -> list[Change]:
        """Up to `count` mutations of `fn`, spread over the operators (`code_gym.grading.builder.
        pick_changes`); sites are checked only as they are drawn."""
        checker = checker or make_checker(source)
        return pick_changes(site_edits(fn, checker.src), operators, count, rng,
                            lambda op, edit, site: checker.change(fn, op, edit, site))

    return checker, mutation_sites, pick_mutations
