"""Step shaping (off by default): a bonus when `run_tests` shows more visible tests passing than
ever before in the episode, and a penalty for each invalid action. The reference DiDPO runs used
0.15 and 0.01.

The count comes from pytest's own summary line of a `run_tests` call that ran all the visible
tests (no `paths`, or paths covering every visible test file), and counts only while the workspace
passes the integrity audit: edited tests cannot earn it. The first such run sets the baseline. If
the final patch fails the audit, the episode's progress bonuses are taken back at the last step.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from code_gym.actions import ToolCall
from code_gym.integrity import audit
from code_gym.task import Task
from code_gym.tools import ToolResult

# pytest's closing line: "3 failed, 5 passed in 0.12s" (-q) or "==== 5 passed in 0.12s ====".
_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s\b.*$")
_PASSED = re.compile(r"(\d+) passed")


def passed_count(output: str) -> int | None:
    """Tests passed according to the last pytest summary line of `output` (None: no summary)."""
    for line in reversed(output.splitlines()):
        match = _SUMMARY.match(line.strip())
        if match:
            found = _PASSED.search(match.group(1))
            return int(found.group(1)) if found else 0
    return None


@dataclass(frozen=True)
class StepShaping:
    """Coefficients: `progress` per new best count of passing visible tests, `invalid` per invalid action."""
    progress: float = 0.15
    invalid: float = 0.01

    def __post_init__(self):
        if self.progress < 0 or self.invalid < 0:
            raise ValueError(f"shaping coefficients must be >= 0, got progress={self.progress}, invalid={self.invalid}")

    def episode(self, task: Task, changes: Callable[[], dict[str, bytes | None]], gated: bool = True) -> "ShapingState":
        return ShapingState(self, task, changes, gated)


class ShapingState:
    """One episode's shaping: the best visible pass count so far and the bonus paid."""

    def __init__(self, shaping: StepShaping, task: Task, changes: Callable[[], dict[str, bytes | None]], gated: bool):
        self.shaping = shaping
        self.task = task
        self.changes = changes
        self.gated = gated
        self.best: int | None = None
        self.paid = 0.0

    def _covers_visible(self, call: ToolCall) -> bool:
        paths = call.arguments.get("paths") or list(self.task.visible_tests)
        return isinstance(paths, list) and set(self.task.visible_tests) <= set(paths)

    def step(self, pairs: list[tuple[ToolCall | None, ToolResult]], invalid: bool) -> dict[str, dict]:
        entries: dict[str, dict] = {}
        if invalid and self.shaping.invalid:
            entries["invalid_action"] = {"value": 1.0, "weight": -self.shaping.invalid, "reward": -self.shaping.invalid}
        counts = [passed_count(r.output) for c, r in pairs
                  if c is not None and c.name == "run_tests" and not r.error and self._covers_visible(c)]
        counts = [n for n in counts if n is not None]
        if counts and self.shaping.progress and not (self.gated and audit(self.changes(), self.task)):
            best = max(counts)
            improved = self.best is not None and best > self.best
            self.best = best if self.best is None else max(self.best, best)
            if improved:
                self.paid += self.shaping.progress
                entries["progress"] = {"value": float(best), "weight": self.shaping.progress,
                                       "reward": self.shaping.progress}
        return entries

    def clawback(self) -> dict[str, dict]:
        """Takes back the progress bonuses (the final patch failed the audit)."""
        if not self.paid:
            return {}
        return {"progress_clawback": {"value": self.paid, "weight": -1.0, "reward": -self.paid}}
