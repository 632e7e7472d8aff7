"""Block spans of hunk sides in languages whose blocks are braces and no tree-sitter grammar is
installed (Dafny: no maintained tree-sitter-dafny wheel is on PyPI).

The reader of such a grammar (`credit.syntax.Grammar.reader`) answers every side: a block opens at
a `{` and closes at its `}` on a later row; it spans from its header row (the `{` row itself, or,
for a `{` alone on its row below clause rows such as Dafny's `requires`, `invariant`, the nearest
row above the clauses at the same or a lower indent; the topmost clause row when the side starts
below the header) to the `}` row. A `{` whose `}`
falls outside the side closes at the side's last row; a `}` without its `{` in the side is
ignored. `{:` opens an attribute, not a block; braces inside strings and comments do not count
(a block comment may run across rows). Blocks that close on their own row are expressions (a set
display), not blocks.
"""

from __future__ import annotations

import re

import numpy as np

# rows that continue a header above them (Dafny's specification and loop clauses)
CLAUSE_WORDS = ("requires", "ensures", "reads", "modifies", "decreases", "invariant", "yield", "free", "returns")
_SCAN = re.compile(r'//|/\*|\*/|"(?:[^"\\]|\\.)*"?|\{:|[{}]')


def brace_spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(answered (n_groups,) all True, first (k,), last (k,)): inclusive row spans of the brace
    blocks of each group of rows (`credit.pyspans.python_spans` has the contract)."""
    raw = data.tobytes()
    rows = [raw[s:e].decode("utf-8", "replace") for s, e in zip(starts.tolist(), ends.tolist())]
    first: list[int] = []
    last: list[int] = []
    bounds = np.searchsorted(group, np.arange(n_groups + 1)).tolist()
    for g in range(n_groups):
        spans = _group_spans(rows[bounds[g]:bounds[g + 1]])
        first += [bounds[g] + a for a, _ in spans]
        last += [bounds[g] + b for _, b in spans]
    return np.ones(n_groups, bool), np.asarray(first, np.int64), np.asarray(last, np.int64)


def _group_spans(rows: list[str]) -> list[tuple[int, int]]:
    spans: set[tuple[int, int]] = set()
    stack: list[int] = []
    in_comment = False
    for r, row in enumerate(rows):
        for match in _SCAN.finditer(row):
            token = match.group()
            if in_comment:
                in_comment = token != "*/"
            elif token == "//":
                break
            elif token == "/*":
                in_comment = True
            elif token == "{":
                stack.append(r)
            elif token == "}" and stack:
                opened = stack.pop()
                if opened != r:
                    spans.add((_header(rows, opened), r))
    spans.update((_header(rows, opened), len(rows) - 1) for opened in stack if opened != len(rows) - 1)
    return sorted(spans)


def _indent(row: str) -> int:
    return len(row) - len(row.lstrip())


def _header(rows: list[str], r: int) -> int:
    """The row a block opened on row `r` starts at: its header above a `{` alone on its row, past
    the clause rows between them (the topmost clause row when the header is not in the side)."""
    if not rows[r].lstrip().startswith("{"):
        return r
    top = r
    for above in range(r - 1, -1, -1):
        text = rows[above].strip()
        if not text or text.startswith("//"):
            continue
        if text.split()[0].startswith(CLAUSE_WORDS):
            top = above
        elif _indent(rows[above]) <= _indent(rows[r]):
            return above
        else:
            break
    return top
