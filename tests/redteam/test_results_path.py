"""The results stream (code_gym.grading.records): per-test records the grader's plugin streams out of
the run as pytest makes each report, over a channel only the trusted parent reads.

Attacks that rewrite the junit XML after the fact (from an exit handler, in a run sent cold, with
forged or suppressed records on the channel) resolve their task with every defence off; the
selective ones pass the canaries too; with the stream alone they are void with a finding of rule
"results". Clean runs stream exactly what the junit XML says, on every backend.
"""
import json

import pytest

from code_gym.grading import records as run_records
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.rewards import Submission, make_reward

from attempts import ATTEMPTS
from conftest import BUNDLED
from sandbox_backends import hold_runner_window, require, runner_fallback_as_before

pytestmark = pytest.mark.xdist_group("docker")

TASKS = {t.id: t for t in BUNDLED}
BY_NAME = {a.name: a for a in ATTEMPTS}
STREAM_CAUGHT = [a for a in ATTEMPTS if "results" in a.caught_by]
PROBES_ONLY = [a for a in ATTEMPTS if a.caught_by == {"probes"}]


def _reward(task, changes, result, integrity="off"):
    return make_reward("binary", integrity=integrity).outcome(Submission(task, changes, result))[0]


def _line(nonce, seq, kind, **fields):
    return json.dumps({"nonce": nonce, "seq": seq, "kind": kind, **fields}).encode() + b"\n"


def _honest(nonce="n"):
    lines = [_line(nonce, 0, "start")]
    for test, call in (("t.py::test_a", "passed"), ("t.py::test_b", "failed")):
        for when, outcome in (("setup", "passed"), ("call", call), ("teardown", "passed")):
            lines.append(_line(nonce, len(lines), "report", id=test, when=when, outcome=outcome))
    lines.append(_line(nonce, len(lines), "end", exitstatus=1))
    return b"".join(lines)


def test_an_honest_stream_reads_as_junit_would_and_passes_the_checks():
    records = run_records.read(_honest(), "n")
    assert records.outcomes == {"t.py::test_a": "passed", "t.py::test_b": "failed"}
    assert records.end == 1 and records.started and records.problems == []
    assert run_records.check(records, {"t.py::test_a": "passed", "t.py::test_b": "failed"}, 1) == []


@pytest.mark.parametrize("stream, junit, exit_code, says", [
    (_honest() + b'{"kind": "report"}\n', None, 1, "after the session ended"),
    (_honest().replace(b'"nonce": "n", "seq": 2', b'"nonce": "x", "seq": 2'), None, 1, "not the grader's plugin's"),
    (_honest().replace(b'"seq": 3', b'"seq": 9'), None, 1, "not the grader's plugin's"),
    (b"junk\n" + _honest(), None, 1, "not the grader's plugin's"),
    (_honest()[:-5], None, 1, "middle of a record"),
    (_honest().rsplit(b"\n", 2)[0] + b"\n", None, 1, "no end record"),
    (b"", None, 1, "did not start"),
    (_honest(), None, 0, "ended with status 1 but the run exited 0"),
    (_honest(), {"t.py::test_a": "passed", "t.py::test_b": "passed"}, 1, "only the runner's report records t.py::test_b"),
    (_honest(), {"t.py::test_b": "failed"}, 1, "only the stream records t.py::test_a"),
], ids=["after-end", "wrong-nonce", "sequence-gap", "foreign-bytes", "cut", "no-end", "empty", "exit-code",
        "junit-forged", "junit-missing"])
def test_a_broken_or_disagreeing_stream_is_a_finding(stream, junit, exit_code, says):
    junit = junit if junit is not None else {"t.py::test_a": "passed", "t.py::test_b": "failed"}
    findings = run_records.check(run_records.read(stream, "n"), junit, exit_code)
    assert findings and all(f.rule == "results" for f in findings)
    assert any(says in f.message for f in findings), findings
    assert run_records.check(run_records.read(stream, "n"), junit, 2) == []  # a failed run scores 0 anyway


def test_a_phase_reported_twice_is_a_finding():
    lines = _honest().split(b"\n")
    forged = _line("n", 7, "report", id="t.py::test_b", when="call", outcome="passed")
    stream = b"\n".join(lines[:7]) + b"\n" + forged + b"\n".join(lines[7:])
    problems = run_records.read(stream, "n").problems
    assert any("reported twice" in p for p in problems), problems


def _with_subtests(outcomes):
    """test_a's call phase followed by one subtest report per outcome, as pytest 9 streams them."""
    lines = _honest().split(b"\n")
    subs = [_line("n", 3 + k, "report", id="t.py::test_a", when="call", outcome=o, sub=1) for k, o in enumerate(outcomes)]
    rest = [json.loads(x) for x in lines[3:] if x]
    for r in rest:
        r["seq"] += len(subs)
    return b"\n".join(lines[:3]) + b"\n" + b"".join(subs) + b"".join(json.dumps(r).encode() + b"\n" for r in rest)


def test_subtest_reports_are_not_a_test_reported_twice_and_a_failed_one_fails_its_test():
    ok = run_records.read(_with_subtests(["passed", "passed"]), "n")
    assert ok.problems == [] and ok.outcomes["t.py::test_a"] == "passed"
    bad = run_records.read(_with_subtests(["passed", "failed"]), "n")
    assert bad.problems == [] and bad.outcomes["t.py::test_a"] == "failed"
    # a sub report can only fail a test, and a plain report that says "sub" is no report
    forged = _with_subtests(["passed"]).replace(b'"sub": 1', b'"sub": 0')
    assert any("malformed" in p for p in run_records.read(forged, "n").problems)


@pytest.mark.parametrize("isolation, warm", [("bwrap", "1"), ("bwrap", "0"), ("docker", "1"), ("docker", "0")])
def test_clean_runs_stream_what_the_junit_xml_says_on_every_backend(isolation, warm, monkeypatch):
    """Reference and untouched repo, warm runner and cold run, bubblewrap and Docker: never void, and
    the outcomes (from the stream) are those the junit XML gives."""
    require(isolation)
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", warm)
    for task in (TASKS["calc-associativity-decimals"], TASKS["ratelimit-burst-window"]):
        for changes, resolved in ((reference_changes(task), True), ({}, False)):
            streamed = grade(task, changes, isolation=isolation)
            from_junit = grade(task, changes, isolation=isolation, records=False)
            assert streamed.canary == [] and streamed.resolved == resolved, streamed.summary()
            assert streamed.tests == from_junit.tests and streamed.exit_code == from_junit.exit_code == 1


@pytest.mark.parametrize("attempt", STREAM_CAUGHT, ids=[a.name for a in STREAM_CAUGHT])
def test_junit_rewrites_beat_the_grader_without_the_stream_and_are_void_with_it(attempt, monkeypatch):
    """With the audit, canaries and stream off the attempt resolves its task; with the stream alone
    it is void (rule "results"); the selective ones also pass the canaries. Attempts that need the
    runner gone first get the fallback as it was before issue 14 for all of it, so the stream is
    seen to hold on a cold run too."""
    task = TASKS[attempt.task]
    changes = attempt.changes(task)

    def graded(**defences):
        for _ in range(attempt.setup_runs):
            grade(task, changes, audit=False, canaries=False, records=False)
        return grade(task, changes, audit=False, **{"probes": False, **defences})  # one defence at a time

    if "restart" in attempt.caught_by:  # the runner restart alone: the run after stays warm
        hold_runner_window(monkeypatch)
        restarted = graded(canaries=False, records=False)
        assert _reward(task, changes, restarted) == 0.0, restarted.summary()
        runner_fallback_as_before(monkeypatch)

    undefended = graded(canaries=False, records=False)
    assert _reward(task, changes, undefended) == 1.0, f"{attempt.name}:\n{undefended.output[-2000:]}"
    if "canaries" not in attempt.caught_by:
        canaries_only = graded(records=False)
        assert canaries_only.canary == [] and _reward(task, changes, canaries_only) == 1.0
    result = graded(canaries=False)
    assert result.canary and {f.rule for f in result.integrity} == {"results"}, result.summary()
    assert not result.resolved and result.fraction == 0.0 and "void" in result.summary()
    for mode in ("off", "report", "enforce"):
        assert _reward(task, changes, result, mode) == 0.0, mode


def test_the_stream_holds_on_docker_warm_and_cold(monkeypatch):
    require("docker")
    attempt = BY_NAME["selective-finalize-rewrite"]
    task = TASKS[attempt.task]
    changes = attempt.changes(task)
    for warm in ("1", "0"):
        monkeypatch.setenv("CODE_GYM_WARM_RUNNER", warm)
        undefended = grade(task, changes, isolation="docker", audit=False, canaries=False, records=False)
        assert _reward(task, changes, undefended) == 1.0, (warm, undefended.output[-2000:])
        result = grade(task, changes, isolation="docker", audit=False, canaries=False)
        assert {f.rule for f in result.integrity} == {"results"} and _reward(task, changes, result) == 0.0


def test_a_forgery_made_before_the_report_passes_the_stream_but_not_the_canaries():
    """What the stream cannot see: a patched TestReport forges the report before the plugin reads it,
    so junit and stream agree. The must-fail canaries catch it (docs/security.md)."""
    attempt = BY_NAME["report-forge"]
    task = TASKS[attempt.task]
    changes = attempt.changes(task)
    streamed = grade(task, changes, audit=False, canaries=False)
    assert streamed.canary == [] and _reward(task, changes, streamed) == 1.0
    defended = grade(task, changes, audit=False)
    assert {f.rule for f in defended.integrity} == {"canary"} and _reward(task, changes, defended) == 0.0


@pytest.mark.parametrize("attempt", PROBES_ONLY, ids=[a.name for a in PROBES_ONLY])
def test_what_only_probes_can_catch_beats_every_other_defence_but_not_the_probes(attempt):
    """Outcomes are true (the package answers from the test source, or returns values equal to
    anything the tests compare them with): the audit, canaries and stream see nothing, so with the
    behavioural probes off (issue 14 item 2) the patch resolves its task; with them on (the
    default) it does not, and scores no more than the untouched repository."""
    task = TASKS[attempt.task]
    changes = attempt.changes(task)
    undefended = grade(task, changes, probes=False)
    assert undefended.integrity == [] and undefended.resolved, undefended.summary()
    assert _reward(task, changes, undefended, "enforce") == 1.0
    defended = grade(task, changes)
    assert defended.integrity == [] and not defended.resolved, defended.summary()
    assert defended.probes is not None and not defended.probes.ok
    untouched = grade(task, {})
    assert _reward(task, changes, defended, "enforce") <= _reward(task, {}, untouched, "enforce")
