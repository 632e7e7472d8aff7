"""Hint-conditioned episodes: show part of the reference solution in the prompt, for a curriculum
on tasks whose rewards are all zero.

The reference patch is cut into syntax units: each hunk belongs to the innermost function or class
of the patched file that contains all of its changed lines (module-level code of a file is one
unit), and hunks of the same unit are shown or hidden together, so a hint never shows half of a
function's change. `hint=f` shows round(f * units) of them (at least one when f > 0).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from unidiff import PatchSet

from code_gym import languages
from code_gym.tasks.task import Task
from code_gym.grading.reference import reference_changes
@dataclass(frozen=True)
class HintUnit:
    path: str
    name: str  # the function or class ("" for module-level code or a whole file)
    header: str  # "--- a/x.py\n+++ b/x.py\n"
    hunks: tuple[str, ...]  # unified-diff hunk texts, in patch order

    def render(self) -> str:
        return self.header + "".join(self.hunks)


@dataclass(frozen=True)
class Hint:
    text: str  # the prompt section ("" when nothing is shown)
    shown: int
    total: int


_UNITS: dict[tuple, tuple[HintUnit, ...]] = {}


def hint_units(task: Task) -> tuple[HintUnit, ...]:
    """The reference patch's syntax units, in patch order (cached per task)."""
    key = (task.id, str(task.root), hashlib.sha1(task.reference_patch.encode()).hexdigest())
    if key not in _UNITS:
        _UNITS[key] = _split(task)
    return _UNITS[key]


def _split(task: Task) -> tuple[HintUnit, ...]:
    patched = reference_changes(task)
    language = languages.of(task)
    units: dict[tuple[str, str], list[str]] = {}
    headers: dict[str, str] = {}
    for patched_file in PatchSet(task.reference_patch):
        path = patched_file.path
        headers[path] = f"--- {patched_file.source_file}\n+++ {patched_file.target_file}\n"
        if patched_file.is_added_file or patched_file.is_removed_file or not path.endswith(language.source_suffixes):
            units.setdefault((path, ""), []).extend(str(h) for h in patched_file)
            continue
        new = patched.get(path)
        old = (task.repo / path).read_bytes()
        for hunk in patched_file:
            added = [line.target_line_no for line in hunk if line.is_added]
            removed = [line.source_line_no for line in hunk if line.is_removed]
            source, lines = (new, added) if added else (old, removed)
            units.setdefault((path, language.enclosing_definition(source, lines)), []).append(str(hunk))
    return tuple(HintUnit(path, name, headers[path], tuple(hunks)) for (path, name), hunks in units.items())


def reference_hint(task: Task, fraction: float, rng: np.random.Generator | None = None) -> Hint:
    """The prompt section that reveals round(fraction * units) units of the reference patch, drawn
    with `rng` (the first ones when None)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"hint must be a fraction between 0 and 1, got {fraction}")
    if fraction == 0:
        return Hint("", 0, 0)
    units = hint_units(task)
    if not units:
        return Hint("", 0, 0)
    count = min(len(units), max(1, round(fraction * len(units))))
    picked = sorted(rng.choice(len(units), count, replace=False)) if rng is not None else range(count)
    shown = [units[i] for i in picked]
    body = "".join(u.render() for u in shown)
    text = (f"## Hint\nPart of a reference solution ({count} of {len(units)} changes), as a diff against the "
            f"starting repository. The rest is up to you.\n```diff\n{body}```")
    return Hint(text, count, len(units))
