"""Canary tests: tamper evidence in every graded run.

Each graded run gets one more test file from the task's language (`Language.canaries`), laid in
the grading copy only (never in the agent's workspace), in a test folder the task already uses,
under a name drawn per run from the system's random source. Its tests look like ordinary tests,
have names drawn the same way, and must come out as the language says: must-fail canaries catch
a run whose reports are forced to "passed"; equality canaries catch dropped tests and values that
equal anything.

After the run `check` compares the canaries' outcomes in the per-test records with what they must
be, and the records with the exit code: a must-fail canary makes exit code 0 impossible, and a
failing exit code needs a failing record. Any mismatch (or a canary missing from the records)
voids the run with a finding of rule "canary". The canaries never count as graded tests.
"""
from __future__ import annotations

from code_gym.languages.base import Canaries, Finding

RULE = "canary"


def check(canaries: Canaries, records: dict[str, str], exit_code: int | None,
          run_ok: tuple[int, int] = (0, 1)) -> list[Finding]:
    """Findings of a finished run (its exit code one of `run_ok`: all passed, some failed) whose
    canaries or exit code do not match its per-test records: `records` are every outcome by test
    id, canaries included."""
    passed_code, failed_code = run_ok
    if exit_code not in run_ok:
        return []  # the run itself failed (crash, usage error, timeout): it scores nothing already
    findings = []
    for test_id, want in canaries.expected.items():
        got = records.get(test_id)
        if got is None:
            findings.append(Finding(canaries.path, 0, RULE, f"a canary test is missing from the results "
                                                            f"(must come out {want})"))
        elif got != want:
            findings.append(Finding(canaries.path, 0, RULE, f"a canary test that must come out {want} came out {got}"))
    failing = [t for t, outcome in records.items() if outcome in ("failed", "error")]
    if exit_code == passed_code:
        findings.append(Finding(canaries.path, 0, RULE, f"the run exited {passed_code} although a canary test must fail"))
    elif not failing:
        findings.append(Finding(canaries.path, 0, RULE, f"the run exited {failed_code} but no test is recorded as failing"))
    return findings
