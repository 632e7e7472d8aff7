"""Split a step's unified diff into sub-diffs at several levels.

A sub-diff (unit) is a set of changed lines of one edit type (added or deleted) of one step:

  file    all added (or deleted) lines of one file
  hunk    all added (or deleted) lines of one hunk
  syntax  the changed lines inside one function / class / compound statement: tree-sitter-python
          parses the hunk side (its changed lines and the context between them) for Python files;
          other files, and Python that does not parse, use indentation blocks (a line and the more
          indented lines below it, a closing bracket at the same indent included)
  block   a maximal run of consecutive changed lines of one edit type

Units with the same line set are kept once (the coarsest level wins). Binary files and pure
renames have no changed lines and give no units. This is DiDPO's sub-diff decomposition
(reference: verl-code `didpo/snippet.py`), applied to the diffs the environment observed.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import unidiff

LEVELS = ("file", "hunk", "syntax", "block")
SYNTAX_MODES = ("tree-sitter", "indent")
ADDED, DELETED = 1, -1

_PYTHON_BLOCKS = (
    "function_definition", "class_definition", "decorated_definition", "if_statement",
    "for_statement", "while_statement", "try_statement", "with_statement", "match_statement",
)
_CLOSERS = ("}", ")", "]", "end")


@dataclass(frozen=True, eq=False)
class SubDiffs:
    """The changed lines of one diff and its units, as flat arrays.

    Attributes:
      paths: (L,) file path of each changed line (the new path; the old one for deleted files).
      kinds: (L,) int8 edit type, ADDED (+1) or DELETED (-1).
      line_numbers: (L,) 1-based line number in the new file (added) or old file (deleted).
      texts: (L,) line text without the +/- marker and line break.
      unit_levels: (U,) int8 index into LEVELS of each unit.
      unit_ptr: (U + 1,) CSR pointers: unit u holds lines unit_lines[unit_ptr[u]:unit_ptr[u + 1]].
      unit_lines: (M,) line indices, ascending inside each unit.
    """

    paths: tuple[str, ...]
    kinds: np.ndarray
    line_numbers: np.ndarray
    texts: tuple[str, ...]
    unit_levels: np.ndarray
    unit_ptr: np.ndarray
    unit_lines: np.ndarray

    @property
    def n_units(self) -> int:
        return len(self.unit_levels)

    def unit(self, u: int) -> np.ndarray:
        """Line indices of unit u."""
        return self.unit_lines[self.unit_ptr[u]:self.unit_ptr[u + 1]]

    def unit_text(self, u: int) -> str:
        """The unit's lines, joined (a readable preview)."""
        return "\n".join(self.texts[i] for i in self.unit(u))


def split_diff(
    diff: str,
    *,
    levels: Sequence[str] = LEVELS,
    syntax: str = "tree-sitter",
    min_syntax_lines: int = 3,
) -> SubDiffs:
    """Split a unified diff (git format) into units at the requested levels.

    Args:
      diff: the diff text; "" gives no units.
      levels: any of "file", "hunk", "syntax", "block".
      syntax: "tree-sitter" (Python files parsed by tree-sitter-python, indentation blocks for the
        rest) or "indent" (indentation blocks everywhere, faster).
      min_syntax_lines: hunk sides with fewer changed lines get no syntax units (a block of one
        or two lines is the same as its line block).

    Returns:
      SubDiffs.
    """
    check_options(levels, syntax)
    if not diff.strip():
        return _EMPTY
    try:
        patch = unidiff.PatchSet(diff)
    except unidiff.UnidiffParseError as err:
        raise ValueError(f"diff is not a valid unified diff: {err}") from None
    if len(patch) == 0:
        raise ValueError(
            "diff is not empty but has no file header ('diff --git', '---' / '+++'): pass the "
            "unified diff the step made, or '' when it changed nothing")

    want = tuple(lv in levels for lv in LEVELS)
    lines = _Lines()
    units: list[tuple[int, tuple[int, ...]]] = []
    for pf in patch:
        if not pf.is_binary_file and len(pf):
            _split_file(pf, lines, units, want, syntax == "tree-sitter", min_syntax_lines)

    seen: set[tuple[int, ...]] = set()
    kept = [(lv, idx) for lv, idx in units if idx and not (idx in seen or seen.add(idx))]
    sizes = np.fromiter((len(idx) for _, idx in kept), np.int64, len(kept))
    ptr = np.zeros(len(kept) + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return SubDiffs(
        paths=tuple(lines.paths),
        kinds=np.asarray(lines.kinds, np.int8),
        line_numbers=np.asarray(lines.numbers, np.int64),
        texts=tuple(lines.texts),
        unit_levels=np.fromiter((lv for lv, _ in kept), np.int8, len(kept)),
        unit_ptr=ptr,
        unit_lines=np.fromiter(itertools.chain.from_iterable(idx for _, idx in kept), np.int64, int(ptr[-1])),
    )


def check_options(levels: Sequence[str], syntax: str) -> None:
    if isinstance(levels, str) or not levels or any(lv not in LEVELS for lv in levels):
        raise ValueError(f"levels must be a non-empty subset of {LEVELS}, got {levels!r}")
    if syntax not in SYNTAX_MODES:
        raise ValueError(f"syntax must be one of {SYNTAX_MODES}, got {syntax!r}")


class _Lines:
    __slots__ = ("paths", "kinds", "numbers", "texts")

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.kinds: list[int] = []
        self.numbers: list[int] = []
        self.texts: list[str] = []


def _split_file(pf, lines: _Lines, units: list, want: tuple[bool, ...], tree_sitter: bool,
                min_syntax_lines: int) -> None:
    path = pf.path
    python = tree_sitter and path.endswith((".py", ".pyi"))
    in_file: dict[int, list[int]] = {ADDED: [], DELETED: []}
    hunk_units, syntax_units, block_units = [], [], []
    for hunk in pf:
        body = [ln for ln in hunk if ln.line_type != "\\"]
        types = [ln.line_type for ln in body]
        texts = [ln.value.rstrip("\r\n") for ln in body]
        changed = [k for k, t in enumerate(types) if t != " "]
        if not changed:
            continue
        base = len(lines.texts)
        kinds = [ADDED if types[k] == "+" else DELETED for k in changed]
        lines.kinds.extend(kinds)
        lines.numbers.extend([body[k].target_line_no if kind == ADDED else body[k].source_line_no
                              for k, kind in zip(changed, kinds)])
        lines.texts.extend([texts[k] for k in changed])
        lines.paths.extend([path] * len(changed))
        # line blocks: runs of consecutive hunk positions with one edit type
        cuts = [j for j in range(1, len(changed)) if changed[j] != changed[j - 1] + 1 or kinds[j] != kinds[j - 1]]
        block_units.extend(tuple(range(base + a, base + b)) for a, b in zip([0] + cuts, cuts + [len(changed)]))
        id_at = [-1] * len(body)
        for j, k in enumerate(changed):
            id_at[k] = base + j
        for kind, other in ((ADDED, "-"), (DELETED, "+")):
            idx = [base + j for j, kd in enumerate(kinds) if kd == kind]
            in_file[kind].extend(idx)
            hunk_units.append(tuple(idx))
            if want[2] and len(idx) >= min_syntax_lines:
                lo, hi = changed[idx[0] - base], changed[idx[-1] - base]
                rows = [k for k in range(lo, hi + 1) if types[k] != other]
                for first, last in _block_spans(tuple(texts[k] for k in rows), python):
                    unit = [id_at[k] for k in rows[first:last + 1] if id_at[k] >= 0]
                    if unit:
                        syntax_units.append(tuple(unit))
    for level, group in enumerate((
            [tuple(in_file[ADDED]), tuple(in_file[DELETED])], hunk_units, syntax_units, block_units)):
        if want[level]:
            units.extend((level, idx) for idx in group)


@functools.lru_cache(maxsize=8192)
def _block_spans(rows: tuple[str, ...], python: bool) -> tuple[tuple[int, int], ...]:
    """Inclusive (first, last) row spans of the blocks in `rows`; memoised on the text."""
    indents = [len(r) - len(r.lstrip()) if r.strip() else -1 for r in rows]
    if python and not any(":" in r for r in rows):
        return ()  # every Python block header has a colon
    if python:
        spans = _python_spans(rows, indents)
        if spans is not None:
            return spans
    return _indent_spans(rows, indents)


def _python_spans(rows: tuple[str, ...], indents: list[int]) -> Optional[tuple[tuple[int, int], ...]]:
    """Block spans from tree-sitter-python, or None when the snippet does not parse cleanly."""
    parser, query = _tree_sitter()
    base = min((d for d in indents if d >= 0), default=0)
    source = "\n".join(r[base:] if d >= 0 else "" for r, d in zip(rows, indents)).encode("utf-8")
    root = parser.parse(source).root_node
    if root.has_error:
        return None
    from tree_sitter import QueryCursor

    spans = []
    for node in QueryCursor(query).captures(root).get("block", ()):
        (first, _), (last, col) = node.start_point, node.end_point
        spans.append((first, last - 1 if col == 0 and last > first else last))
    return tuple(sorted(set(spans)))


def _indent_spans(rows: tuple[str, ...], indents: list[int]) -> tuple[tuple[int, int], ...]:
    """Language-agnostic blocks: a line plus the following more-indented lines.

    A line at the block's own indent that starts with a closing bracket (or `end`) closes it.
    """
    spans = []
    stack: list[list[int]] = []  # [indent, first row, last row]
    for r, d in enumerate(indents):
        if d < 0:
            continue
        closes = rows[r].lstrip().startswith(_CLOSERS)
        while stack and stack[-1][0] >= d:
            indent, first, last = stack.pop()
            if closes and indent == d:
                last, closes = r, False
                d = -1  # consumed: this row is part of the popped block, not a new one
            if last > first:
                spans.append((first, last))
            if stack:
                stack[-1][2] = max(stack[-1][2], last)
            if d < 0:
                break
        if d >= 0:
            if stack:
                stack[-1][2] = r
            stack.append([d, r, r])
    while stack:
        indent, first, last = stack.pop()
        if last > first:
            spans.append((first, last))
        if stack:
            stack[-1][2] = max(stack[-1][2], last)
    return tuple(sorted(spans))


@functools.lru_cache(maxsize=1)
def _tree_sitter():
    import tree_sitter
    import tree_sitter_python

    language = tree_sitter.Language(tree_sitter_python.language())
    query = tree_sitter.Query(language, "[" + " ".join(f"({t})" for t in _PYTHON_BLOCKS) + "] @block")
    return tree_sitter.Parser(language), query


_EMPTY = SubDiffs(
    paths=(), kinds=np.zeros(0, np.int8), line_numbers=np.zeros(0, np.int64), texts=(),
    unit_levels=np.zeros(0, np.int8), unit_ptr=np.zeros(1, np.int64), unit_lines=np.zeros(0, np.int64),
)
