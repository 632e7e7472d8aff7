"""Line alignment in bounded host time: the matcher every diff and provenance's attribution use.

difflib's SequenceMatcher (without autojunk, so that no line is ever skipped) looks at every
occurrence in the new text of each old line it tries: a file of repeated lines makes it quadratic,
and its splitting makes it worse (2,000 identical lines, every other one changed: 89 s measured).
`BoundedMatcher` spends at most `MAX_MATCH_WORK` steps of SequenceMatcher's inner loop: within
that budget its alignment is SequenceMatcher's, line for line; a part it cannot afford has its
common first and last lines matched (as git's xdiff does before diffing), what lies between them
matched within the budget left, or else replaced. The result is always a correct alignment, so a
diff made with it applies, and the smallest one wherever the budget sufficed.
"""
from __future__ import annotations

import difflib
from collections.abc import Sequence

# steps of SequenceMatcher's inner loop (one candidate line pair each, 140-550 ns measured), about
# half a second at most; a 5,800-line module (many blank lines) with 1% of its lines edited here
# and there needs 4 million, the same edits in a 1,000-line one 10-30 thousand
MAX_MATCH_WORK = 1_000_000


def _common_ends(a: Sequence, b: Sequence, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int]:
    """(the length of the common start, of the common end) of a[alo:ahi] and b[blo:bhi], not overlapping."""
    start = 0
    while alo + start < ahi and blo + start < bhi and a[alo + start] == b[blo + start]:
        start += 1
    end = 0
    while alo + start < ahi - end and blo + start < bhi - end and a[ahi - end - 1] == b[bhi - end - 1]:
        end += 1
    return start, end


class BoundedMatcher(difflib.SequenceMatcher):
    """`difflib.SequenceMatcher(None, a, b, autojunk=False)` with the common ends matched first and
    a budget (`work`) on the rest (the module docstring)."""

    def __init__(self, a: Sequence, b: Sequence, work: int | None = None):
        self.work = MAX_MATCH_WORK if work is None else work
        super().__init__(None, a, b, autojunk=False)

    def _cost(self, alo: int, ahi: int) -> int:
        """The steps find_longest_match takes on a[alo:ahi]: each line, and each of its occurrences in b."""
        b2j = self.b2j
        return (ahi - alo) + sum(len(b2j.get(line, ())) for line in self.a[alo:ahi])

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is not None:
            return self.matching_blocks
        a, b = self.a, self.b
        la, lb = len(a), len(b)
        blocks: list[tuple[int, int, int]] = []
        queue = [(0, la, 0, lb)]
        while queue:  # SequenceMatcher.get_matching_blocks, within the budget
            alo, ahi, blo, bhi = queue.pop()
            if alo >= ahi or blo >= bhi:
                continue
            cost = self._cost(alo, ahi)
            if cost > self.work:  # too costly: its common ends, then what lies between them
                head, tail = _common_ends(a, b, alo, ahi, blo, bhi)
                blocks += [(alo, blo, head), (ahi - tail, bhi - tail, tail)]
                if head or tail:
                    queue.append((alo + head, ahi - tail, blo + head, bhi - tail))
                continue
            self.work -= cost
            i, j, k = self.find_longest_match(alo, ahi, blo, bhi)
            if k:
                blocks.append((i, j, k))
                queue += [(alo, i, blo, j), (i + k, ahi, j + k, bhi)]
        merged: list[tuple[int, int, int]] = []
        for i, j, k in sorted(x for x in blocks if x[2]):
            if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
                merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + k)
            else:
                merged.append((i, j, k))
        self.matching_blocks = [difflib.Match(*x) for x in merged + [(la, lb, 0)]]
        return self.matching_blocks
