"""Test-based outcome rewards: progress on what the task asks (`FailToPass`, the default), all
graded tests pass (`AllPass`), or the weighted fraction that passes (`PassFraction`). All read the
grader's per-test outcomes (junit XML + exit code); a test whose behavioural probes failed
(`GradeResult.credited`) earns no credit for passing."""
from __future__ import annotations

from dataclasses import dataclass

from code_gym.rewards.base import Submission
from code_gym.tasks.task import Task


@dataclass(frozen=True)
class AllPass:
    """1.0 when the run succeeded and every graded test passed, else 0.0 (SWE-bench "resolved")."""

    def __call__(self, sub: Submission) -> float:
        return 1.0 if sub.result.resolved else 0.0


@dataclass(frozen=True)
class FailToPass:
    """FailToPass on what the task asks, not on tests that already passed:

        value = passed(FAIL_TO_PASS) / |FAIL_TO_PASS| - penalty * failing(PASS_TO_PASS) / |PASS_TO_PASS|

    so the untouched repository scores 0, the reference solution 1, and a patch that breaks what
    worked scores below 0 (down to -penalty). A FAIL_TO_PASS test the behavioural probes do not
    credit (`ProbeReport.uncredited`) counts as not fixed (PASS_TO_PASS tests count as broken only when they fail). A failed run (timeout, crash, test files changed
    during the run) scores -penalty. A task without FAIL_TO_PASS (`code-gym tasks validate
    --record` computes and stores the lists) falls back to `PassFraction`.
    """
    penalty: float = 1.0

    def __post_init__(self):
        if self.penalty < 0:
            raise ValueError(f"f2p 'penalty' must be >= 0, got {self.penalty}")

    def __call__(self, sub: Submission) -> float:
        task, result = sub.task, sub.result
        if not task.fail_to_pass:
            return PassFraction()(sub)
        if not result.run_ok:
            return -self.penalty
        credited = result.credited
        fixed = sum(credited.get(t) == "passed" for t in task.fail_to_pass) / len(task.fail_to_pass)
        broken = (sum(result.tests.get(t) != "passed" for t in task.pass_to_pass) / len(task.pass_to_pass)
                  if task.pass_to_pass else 0.0)
        return fixed - self.penalty * broken


@dataclass(frozen=True)
class PassFraction:
    """Weighted fraction of graded tests that pass: sum(w_t * [t passed]) / sum(w_t).

    A test's weight is the product of its class weight (`fail_to_pass` or `pass_to_pass`, for
    tasks that declare those SWE-bench lists; 1 otherwise) and its location weight (`hidden` for a
    test in the task's hidden test files, else `visible`). A failed run (timeout, crash, test files
    changed during the run) scores 0; a test whose behavioural probes failed counts as failing.
    """
    fail_to_pass: float = 1.0
    pass_to_pass: float = 1.0
    hidden: float = 1.0
    visible: float = 1.0

    def __post_init__(self):
        for name in ("fail_to_pass", "pass_to_pass", "hidden", "visible"):
            if getattr(self, name) < 0:
                raise ValueError(f"fraction weight '{name}' must be >= 0, got {getattr(self, name)}")

    def weight(self, task: Task, test_id: str) -> float:
        if test_id in task.fail_to_pass:
            kind = self.fail_to_pass
        elif test_id in task.pass_to_pass:
            kind = self.pass_to_pass
        else:
            kind = 1.0
        where = self.hidden if test_id.split("::")[0] in task.hidden_tests else self.visible
        return kind * where

    def __call__(self, sub: Submission) -> float:
        if not sub.result.run_ok:
            return 0.0
        credited = sub.result.credited
        weights = {t: self.weight(sub.task, t) for t in credited}
        total = sum(weights.values())
        if total <= 0:
            return 0.0
        return sum(w for t, w in weights.items() if credited[t] == "passed") / total
