"""The per-test records a graded run streamed on its results channel, and the checks on them.

The language's reporter (Python: the pytest plugin code_gym/languages/python/records_plugin.py)
writes one JSON line per event to a channel only the trusted parent reads: "start", a "report"
per test phase (setup, call, teardown) the moment the runner makes it (a failing one may carry
its "message"), "collect" for a file that failed to load or build, "end" with the session's exit
status. A subtest's report (unittest `subTest`, pytest's `subtests`) is marked
"sub": it is one more call report of its test, and a failed one fails the test, as in junit.
Every line carries the run's nonce and a sequence number. `read` turns the
stream into outcomes by node id, merged over phases the way pytest's junit XML merges them, and
lists what is wrong with it; `check` adds the cross-checks with the process's exit code and the
junit XML. Any problem voids the run with a finding of rule "results" (docs/security.md).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pathlib import Path
from typing import TYPE_CHECKING

from code_gym.languages.base import Finding, TestRun

if TYPE_CHECKING:
    from code_gym.languages.base import Language
    from code_gym.sandbox.base import ExecResult

RULE = "results"
_PHASES = ("setup", "call", "teardown")
_OUTCOMES = ("passed", "failed", "skipped")


@dataclass
class Records:
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed | failed | error | skipped
    end: int | None = None  # the exit status in the end record
    started: bool = False
    problems: list[str] = field(default_factory=list)
    messages: dict[str, str] = field(default_factory=dict)  # node id -> the failure message its record carried


def _merge(phases: dict[str, str]) -> str:
    """One test's outcome from its phases, as junit XML gives it: a failing setup or teardown is an
    error, a failing call a failure, a skip (or xfail) a skip."""
    if phases.get("setup") == "failed" or phases.get("teardown") == "failed":
        return "error"
    if "failed" in phases.values():
        return "failed"
    if "skipped" in phases.values():
        return "skipped"
    return "passed" if phases.get("call") == "passed" else "error"


def read(raw: bytes, nonce: str) -> Records:
    """Parse a stream. Anything that is not a record of this run in order (foreign bytes, another
    nonce, a sequence gap, a phase reported twice) and anything after the end record is a problem."""
    out = Records()
    phases: dict[str, dict[str, str]] = {}
    subfailed: set[str] = set()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        out.problems.append("the results stream ends in the middle of a record")
    for seq, line in enumerate(lines):
        if out.end is not None:
            out.problems.append("data was written to the results channel after the session ended")
            break
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or record.get("nonce") != nonce or record.get("seq") != seq:
            out.problems.append(f"record {seq} on the results channel is not the grader's plugin's")
            break
        kind = record.get("kind")
        if seq == 0 or kind == "start":
            if seq != 0 or kind != "start":
                out.problems.append("the results stream does not begin with its start record")
                break
            out.started = True
        elif kind == "report" and record.get("sub") == 1 and isinstance(record.get("id"), str) \
                and record.get("when") == "call" and record.get("outcome") in _OUTCOMES:
            if record["outcome"] == "failed":  # a failed subtest fails its test; others change nothing
                subfailed.add(record["id"])
        elif kind == "report" and isinstance(record.get("id"), str) and record.get("when") in _PHASES \
                and record.get("outcome") in _OUTCOMES and "sub" not in record:
            done = phases.setdefault(record["id"], {})
            if record["when"] in done:
                out.problems.append(f"{record['id']} ({record['when']}) was reported twice")
                break
            done[record["when"]] = record["outcome"]
            if isinstance(record.get("message"), str):
                out.messages[record["id"]] = record["message"]
        elif kind == "collect" and isinstance(record.get("id"), str):
            out.outcomes[record["id"]] = "error"
            if isinstance(record.get("message"), str):
                out.messages[record["id"]] = record["message"]
        elif kind == "end" and isinstance(record.get("exitstatus"), int):
            out.end = record["exitstatus"]
        else:
            out.problems.append(f"record {seq} on the results channel is malformed")
            break
    out.outcomes.update({node_id: _merge(p) for node_id, p in phases.items()})
    for node_id in subfailed:  # as junit gives it: a test with a failed subtest has a failure
        if out.outcomes.get(node_id) != "error":
            out.outcomes[node_id] = "failed"
    return out


def check(records: Records, report: dict[str, str] | None, exit_code: int | None,
          run_ok: tuple[int, ...] = (0, 1)) -> list[Finding]:
    """Findings of a finished run (its exit code one of `run_ok`) whose stream is broken, lacks
    its end record, disagrees with the exit code, or disagrees with the runner's own `report`
    (test id -> outcome; pytest's junit XML; None for a runner without one) about any pass."""
    if exit_code not in run_ok:
        return []  # the run itself failed (crash, usage error, timeout): it scores nothing already
    problems = list(records.problems)
    if not records.started:
        problems.append("the grader's reporter did not start (a test command that replaces the variables "
                        "that name it, such as PYTHONPATH or PYTEST_PLUGINS, keeps it out)")
    elif records.end is None and not problems:
        problems.append("the results stream has no end record")
    elif records.end is not None and records.end != exit_code:
        problems.append(f"the session ended with status {records.end} but the run exited {exit_code}")
    if report is None:
        return [Finding("", 0, RULE, p) for p in problems]
    passed = {t for t, o in records.outcomes.items() if o == "passed"}
    in_report = {t for t, o in report.items() if o == "passed"}
    for test_id in sorted(passed ^ in_report)[:3]:
        side = "the stream" if test_id in passed else "the runner's report"
        problems.append(f"only {side} records {test_id} as passed")
    return [Finding("", 0, RULE, p) for p in problems]


def run_outcomes(language: Language, run: ExecResult, nonce: str | None, results: Path,
                 lookup: tuple[str, ...] = (), plan: TestRun | None = None) -> tuple[dict[str, str], list[Finding]]:
    """(outcomes by test id, findings that void the run) of a finished test run whose reporter
    streamed under `nonce` and whose runner wrote its own report into the host folder `results`:
    the records checked against that report and the exit code, or (without a nonce) the report
    alone. `plan`: the run's TestRun, which says whether the runner writes a report: when it does,
    a report the run left out (deleted by the code under test) is an empty one, which disagrees
    with every recorded pass. A timed-out run has no outcomes."""
    if run.timed_out:
        return {}, []
    if nonce is None:
        return language.report_outcomes(results, lookup or None) or {}, []
    stream = read(run.records or b"", nonce)
    report = language.report_outcomes(results, tuple(dict.fromkeys(lookup + tuple(stream.outcomes))))
    if report is None and plan is not None and plan.report is not None:
        report = {}
    return stream.outcomes, check(stream, report, run.exit_code, language.run_ok)
