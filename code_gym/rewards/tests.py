"""Test-based outcome rewards: progress on what the task asks (`FailToPass`, the default), all
graded tests pass (`AllPass`), or the weighted fraction that passes (`PassFraction`). All read the
grader's per-test outcomes (junit XML + exit code); a test whose behavioural probes failed
(`GradeResult.credited`) earns no credit for passing, and neither does a FAIL_TO_PASS test that no
fix probe checks (`unchecked`)."""
from __future__ import annotations

from dataclasses import dataclass

from code_gym.rewards.base import Score, Submission
from code_gym.tasks.task import Task

WITHHELD = ("no fix probe checks these FAIL_TO_PASS tests (inputs near theirs on which the reference and the "
            "untouched code differ), so a pass cannot be told from a special case of their inputs: their credit "
            "is withheld")


def unchecked(sub: Submission) -> tuple[str, ...]:
    """The task's FAIL_TO_PASS tests whose credit is withheld: the grade ran with behavioural probes
    and none of the test's probes is a fix probe (a lookup table of the test's inputs would pass the
    test and every regression probe). Empty when the grade ran without probes (the language has
    none, or they were turned off; the `probes` component's breakdown says so)."""
    report = sub.result.probes
    return () if report is None else report.unchecked(sub.task.fail_to_pass)


def _probe_details(held: tuple[str, ...]) -> dict:
    return {"withheld": list(held[:10]), "withheld_count": len(held), "reason": WITHHELD} if held else {}


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
    credit (`ProbeReport.uncredited`) counts as not fixed (PASS_TO_PASS tests count as broken only when they fail).
    A FAIL_TO_PASS test without fix probes (`unchecked`) is left out of the first term, numerator
    and denominator: the reference still scores 1, the untouched repository 0, and a patch that
    special-cases the tests' inputs gains nothing from the tests the probes cannot check (with no
    checked test at all, the first term is 0 for every patch); the breakdown lists them
    (`withheld`). A failed run (timeout, crash, test files changed during the run) scores -penalty.
    A task without FAIL_TO_PASS (`code-gym tasks validate --record` computes and stores the lists)
    falls back to `PassFraction`.
    """
    penalty: float = 1.0

    def __post_init__(self):
        if self.penalty < 0:
            raise ValueError(f"f2p 'penalty' must be >= 0, got {self.penalty}")

    def __call__(self, sub: Submission) -> float | Score:
        task, result = sub.task, sub.result
        if not task.fail_to_pass:
            return PassFraction()(sub)
        if not result.run_ok:
            return -self.penalty
        credited = result.credited
        held = unchecked(sub)
        checked = [t for t in task.fail_to_pass if t not in held]
        fixed = sum(credited.get(t) == "passed" for t in checked) / len(checked) if checked else 0.0
        broken = (sum(result.tests.get(t) != "passed" for t in task.pass_to_pass) / len(task.pass_to_pass)
                  if task.pass_to_pass else 0.0)
        details = _probe_details(held)
        value = fixed - self.penalty * broken
        return Score(value, details) if details else value


@dataclass(frozen=True)
class PassFraction:
    """Weighted fraction of graded tests that pass: sum(w_t * [t passed]) / sum(w_t).

    A test's weight is the product of its class weight (`fail_to_pass` or `pass_to_pass`, for
    tasks that declare those SWE-bench lists; 1 otherwise) and its location weight (`hidden` for a
    test in the task's hidden test files, else `visible`). A failed run (timeout, crash, test files
    changed during the run) scores 0; a test whose behavioural probes failed counts as failing; a
    FAIL_TO_PASS test without fix probes (`unchecked`) weighs 0 (listed in the breakdown).
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

    def __call__(self, sub: Submission) -> float | Score:
        if not sub.result.run_ok:
            return 0.0
        credited = sub.result.credited
        held = unchecked(sub)
        weights = {t: 0.0 if t in held else self.weight(sub.task, t) for t in credited}
        total = sum(weights.values())
        value = sum(w for t, w in weights.items() if credited[t] == "passed") / total if total > 0 else 0.0
        details = _probe_details(held)
        return Score(value, details) if details else value
