"""The `probes` outcome component: the behavioural probes' verdict (`code_gym.languages.python.probes`), scored
like `f2p` over probes instead of tests."""
from __future__ import annotations

from dataclasses import dataclass

from code_gym.rewards.base import Score, Submission
from code_gym.rewards.tests import FailToPass


@dataclass(frozen=True)
class ProbeScore:
    """    value = passed(fix probes) / |fix probes| - penalty * failed(regression probes) / |regression probes|

    A fix probe is one the untouched repository fails (the fix must change its result); a
    regression probe is one it passes. So the untouched repository scores 0 and the reference 1,
    like `f2p`. A patch that passes the tests without doing what the reference does (an oracle
    that answers from the test files, an always-equal object) fails the probes: 0 or below.
    Without fix probes the first term is the `f2p` value (which credits no FAIL_TO_PASS test that
    has no fix probe: `rewards.tests.unchecked`). A task without probes (no reference solution,
    none could be made) takes the `f2p` value, which then credits no FAIL_TO_PASS test; a grade
    that ran without probes takes the plain `f2p` value. The breakdown says which, and lists the
    FAIL_TO_PASS tests without fix probes (`without_fix_probes`).
    """
    penalty: float = 1.0

    def __post_init__(self):
        if self.penalty < 0:
            raise ValueError(f"probes 'penalty' must be >= 0, got {self.penalty}")

    def __call__(self, sub: Submission) -> Score:
        report = sub.result.probes
        tests = FailToPass(self.penalty)(sub)
        tests = tests.value if isinstance(tests, Score) else tests
        if report is None or not report.total:
            why = "the grade ran without probes" if report is None else report.unavailable
            return Score(tests, {"probes": 0, "fallback": "f2p", "reason": why,
                                 "dropped": list(report.dropped[:5]) if report else [],
                                 **({"without_fix_probes": list(sub.task.fail_to_pass[:10])} if report else {})})
        if not sub.result.run_ok:
            return Score(-self.penalty, {"probes": report.total, "passed": 0, "reason": "the test run failed"})
        fixed = report.fix_passed / report.fix_total if report.fix_total else tests
        regressions = report.total - report.fix_total
        broken = report.regression_failed / regressions if regressions else 0.0
        details = {"probes": report.total, "passed": report.passed, "fix_probes": report.fix_total,
                   "fix_passed": report.fix_passed, "regressions": report.regression_failed,
                   "dropped": len(report.dropped)}
        unchecked = report.unchecked(sub.task.fail_to_pass)
        if unchecked:
            details["without_fix_probes"] = list(unchecked[:10])
        if report.failures:
            details["failures"] = list(report.failures[:5])
        return Score(fixed - self.penalty * broken, details)
