"""Step shaping (off by default): a bonus when `run_tests` shows more visible tests passing than
ever before in the episode, and a penalty for each invalid action. The reference DiDPO runs used
0.15 and 0.01.

The count comes from the per-test records of a `run_tests` call that ran all the visible tests
(no `paths`, or paths covering every visible test file): the records the grader's plugin streamed
out of the run, checked against the junit XML as grading checks them (code_gym.grading.records), never
the printed text. A run whose stream is broken or disagrees with the junit XML, whose records and
exit code disagree (exit code 0 with a failure recorded, 1 with none), that timed out or crashed,
or that recorded nothing, counts nothing. It counts only while the workspace passes the integrity audit: edited tests cannot earn
it. The baseline is what the untouched repository passes (its visible tests run once per task and
isolation in a process, in the sandbox): a bonus is paid only above it. A baseline set by the
episode's first run instead paid for breaking the code and putting it back (the red team earned
0.6 with nothing fixed); where the untouched run gives no count, the first run sets it as before.
If the final patch fails the audit, the episode's progress bonuses are taken back at the last step.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from code_gym import languages
from code_gym.actions.parse import ToolCall
from code_gym.grading.audit import audit
from code_gym.tasks.task import Task
from code_gym.actions.tools import RunRecords, ToolResult

def passed_count(records: RunRecords | None, visible: tuple[str, ...], run_ok: tuple[int, ...] = (0, 1)) -> int | None:
    """Visible tests recorded as passed in a `run_tests` call's records (test ids in the files
    `visible`), or None when the run gives no count to trust. `run_ok`: the task's language's exit
    codes of a run that ran, all passed first (`Language.run_ok`; pytest's by default)."""
    if records is None or records.timed_out or records.exit_code not in run_ok or not records.tests:
        return None
    failing = any(outcome in ("failed", "error") for outcome in records.tests.values())
    if failing == (records.exit_code == run_ok[0]):
        return None  # exit code and records disagree: something rewrote one of them
    return sum(1 for test, outcome in records.tests.items() if outcome == "passed" and test.split("::")[0] in visible)


@dataclass(frozen=True)
class StepShaping:
    """Coefficients: `progress` per new best count of passing visible tests, `invalid` per invalid action."""
    progress: float = 0.15
    invalid: float = 0.01

    def __post_init__(self):
        if self.progress < 0 or self.invalid < 0:
            raise ValueError(f"shaping coefficients must be >= 0, got progress={self.progress}, invalid={self.invalid}")

    def episode(self, task: Task, changes: Callable[[], dict[str, bytes | None]], gated: bool = True,
                untouched: Callable[[], int | None] | None = None) -> "ShapingState":
        return ShapingState(self, task, changes, gated, untouched)


_UNTOUCHED: dict[tuple, int | None] = {}
_UNTOUCHED_LOCK = threading.Lock()


def untouched_passed(task: Task, isolation: str) -> int | None:
    """Visible tests the untouched repository passes (graded in the sandbox of `isolation`, once per
    task and isolation in this process); None when that run gives no count."""
    from code_gym.grading.grade import grade

    key = (task.id, str(task.repo), isolation)
    with _UNTOUCHED_LOCK:
        if key in _UNTOUCHED:
            return _UNTOUCHED[key]
    try:
        result = grade(task, {}, isolation=isolation, tests=task.visible_tests, audit=False, probes=False)
        count = None if result.timed_out else sum(
            1 for test, outcome in result.tests.items() if outcome == "passed" and test.split("::")[0] in task.visible_tests)
    except Exception:  # noqa: BLE001 - no count: the episode's first run sets the baseline
        count = None
    with _UNTOUCHED_LOCK:
        _UNTOUCHED[key] = count
    return count


class ShapingState:
    """One episode's shaping: the best visible pass count so far and the bonus paid. `untouched`
    gives the untouched repository's count, the baseline (None, or no callable: the first run's)."""

    def __init__(self, shaping: StepShaping, task: Task, changes: Callable[[], dict[str, bytes | None]], gated: bool,
                 untouched: Callable[[], int | None] | None = None):
        self.shaping = shaping
        self.task = task
        self.changes = changes
        self.gated = gated
        self.untouched = untouched
        self.best: int | None = None
        self.paid = 0.0

    def _covers_visible(self, call: ToolCall) -> bool:
        paths = call.arguments.get("paths") or list(self.task.visible_tests)
        return isinstance(paths, list) and set(self.task.visible_tests) <= set(paths)

    def step(self, pairs: list[tuple[ToolCall | None, ToolResult]], invalid: bool) -> dict[str, dict]:
        entries: dict[str, dict] = {}
        if invalid and self.shaping.invalid:
            entries["invalid_action"] = {"value": 1.0, "weight": -self.shaping.invalid, "reward": -self.shaping.invalid}
        counts = [passed_count(r.records, self.task.visible_tests, languages.of(self.task).run_ok) for c, r in pairs
                  if c is not None and c.name == "run_tests" and not r.error and self._covers_visible(c)]
        counts = [n for n in counts if n is not None]
        if counts and self.shaping.progress and not (self.gated and audit(self.changes(), self.task)):
            best = max(counts)
            if self.best is None and self.untouched is not None:
                self.best = self.untouched()
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
