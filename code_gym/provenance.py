"""Which characters of the action wrote which diff lines."""
from __future__ import annotations

from collections import defaultdict, deque

from code_gym.tools import WrittenLine
from code_gym.diffs import FileDiff


def provenance(diffs: list[FileDiff], written: list[WrittenLine]) -> list[dict]:
    """Match each added diff line to a line a tool wrote from the action text (same file, same text).

    Lines are matched first-come in action order, so a line written twice maps to both spans in order.
    Returns dicts {"path", "line", "start", "end"}: added line `line` (1-based, new file) of `path`
    came from `action[start:end]`.
    """
    pending: dict[tuple[str, str], deque[tuple[int, int]]] = defaultdict(deque)
    for w in written:
        pending[(w.path, w.text.rstrip())].append(w.span)
    out = []
    for diff in diffs:
        for lineno, text in diff.added:
            queue = pending.get((diff.path, text.rstrip()))
            if queue:
                start, end = queue.popleft()
                out.append({"path": diff.path, "line": lineno, "start": start, "end": end})
    return out
