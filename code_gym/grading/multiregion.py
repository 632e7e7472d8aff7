"""Multi-region tasks: two or three validated one-region changes of one project (different functions,
different files where the project has them) applied together. Every language's builder plans them
here: a change is its mutation module's `Change` (any object with `function.path`,
`function.qualname` and `source`, the whole changed file).

A region is one changed function; its part of the reference patch is what restores that function.
The gate "regions" checks that every region is needed: with any one region's fix left out (that
region still changed, the others restored) at least one test of the task fails."""
from __future__ import annotations

import difflib
import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

MAX_REGIONS = 3
MAX_USES = 2  # combinations one validated change may take part in

State = frozenset  # of (path, sha256 of the file's text): which files differ from the original, and how


class Change(Protocol):
    """A one-region change as a language's mutations make it."""
    function: Any  # with `path` (repo-relative file) and `qualname`
    source: str  # the whole changed file


@dataclass(frozen=True)
class Component:
    """A validated one-region change and the tests it fails."""
    change: Change
    fail_to_pass: frozenset[str]

    @property
    def key(self) -> tuple[str, str]:
        return self.change.function.path, self.change.function.qualname


def _edits(original: str, changed: str) -> list[tuple[int, int, list[str]]]:
    """(first line, end line, new lines) of the original that `changed` replaces."""
    a, b = original.splitlines(keepends=True), changed.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, b[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def apply_changes(originals: dict[str, str], changes: Sequence[Change]) -> dict[str, str]:
    """The changed text of every file `changes` touch, all applied together. Changes of one file
    must touch disjoint lines (they change different functions); ValueError otherwise."""
    by_file: dict[str, list[Change]] = {}
    for change in changes:
        by_file.setdefault(change.function.path, []).append(change)
    out = {}
    for path, mine in by_file.items():
        if len(mine) == 1:
            out[path] = mine[0].source
            continue
        lines = originals[path].splitlines(keepends=True)
        edits = sorted((e for c in mine for e in _edits(originals[path], c.source)), reverse=True)
        for (start, end, _), (next_start, _, _) in zip(edits[1:], edits):
            if end > next_start or (start == end == next_start):
                raise ValueError(f"{path}: the changes overlap")
        for start, end, new in edits:
            lines[start:end] = new
        out[path] = "".join(lines)
    return out


def state(files: dict[str, str]) -> State:
    return frozenset((path, hashlib.sha256(text.encode()).hexdigest()) for path, text in files.items())


def unneeded_regions(originals: dict[str, str], changes: Sequence[Change],
                     failing: Callable[[dict[str, str]], set[str]]) -> list[Change]:
    """The changes whose fix is not needed: with every other region restored and this one left
    changed, `failing(files)` (the task's tests that fail on that code) is empty."""
    return [c for c in changes if not failing(apply_changes(originals, [c]))]


def plan(components: Sequence[Component], count: int, rng: random.Random) -> list[tuple[int, ...]]:
    """Up to `count` combinations (indices into `components`), alternately of two and three
    changes: each of a different function, preferring other files, tests that do not overlap and
    changes used less often (each at most MAX_USES times); no combination twice."""
    uses: Counter[int] = Counter()
    made: list[tuple[int, ...]] = []
    seen: set[frozenset[int]] = set()
    noise = {i: rng.random() for i in range(len(components))}
    for attempt in range(4 * count):
        if len(made) >= count:
            break
        size = MAX_REGIONS if attempt % 2 and len(components) >= MAX_REGIONS else 2
        free = [i for i in range(len(components)) if uses[i] < MAX_USES]
        if len(free) < size:
            break
        first = min(free, key=lambda i: (uses[i], (noise[i] + attempt * 0.618) % 1))
        pick = [first]
        while len(pick) < size:
            keys = {components[i].key for i in pick}
            files = Counter(components[i].key[0] for i in pick)
            tests = set().union(*(components[i].fail_to_pass for i in pick))
            options = [i for i in free if i not in pick and components[i].key not in keys]
            if not options:
                break
            pick.append(min(options, key=lambda i: (files[components[i].key[0]],
                                                    len(components[i].fail_to_pass & tests) > 0,
                                                    uses[i], (noise[i] + attempt * 0.377) % 1)))
        combo = frozenset(pick)
        if len(pick) == size and combo not in seen:
            seen.add(combo)
            made.append(tuple(sorted(pick)))
            uses.update(pick)
    return made
