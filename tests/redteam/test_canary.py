"""Canary tests in every graded run (code_gym.grading.canary): patches that force every report to "passed"
score above the untouched repo with the canaries off and are void with them on, graded with the
integrity audit and the results stream off so the canaries are the only defence; clean references are never voided; the
canary file is new each run and never in the agent's workspace."""
import pickle

import pytest

from code_gym.grading import canary as canary_tests
from code_gym.languages.python import canary as python_canary
from code_gym.languages.python.junit import parse_junit
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.rewards import Submission, make_reward
from code_gym.workspace.working_copy import Workspace

from attempts import ATTEMPTS, FORCE_PASS_REPORTS, _ExecOnLoad
from conftest import BUNDLED

PYTHON_TASKS = [t for t in BUNDLED if t.language == "python"]  # `drawn` spies on pytest canaries

TASKS = {t.id: t for t in BUNDLED}
# attempts that make pytest record tests as passed whatever they do: report factories, makereport
# hooks (through pluggy, found at import time, defined through globals()), no-op runtest /
# pyfunc_call (plain, computed, marshalled, compressed), a shadowing pytest, and junit XML rewritten
# on the way out
FORGING = tuple(a.name for a in ATTEMPTS if "canaries" in a.caught_by)
BY_NAME = {a.name: a for a in ATTEMPTS}


def _reward(task, changes, result, integrity):
    return make_reward("binary", integrity=integrity).outcome(Submission(task, changes, result))[0]


@pytest.fixture
def drawn(monkeypatch):
    """The canaries each grade() draws, in order."""
    made, original = [], python_canary.make

    def make(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(python_canary, "make", make)
    return made


@pytest.mark.parametrize("name", FORGING)
def test_forged_reports_beat_the_grader_without_canaries_and_are_void_with_them(name):
    attempt = BY_NAME[name]
    task = TASKS[attempt.task]
    changes = attempt.changes(task)
    untouched = grade(task, {}, audit=False)
    assert not untouched.canary and _reward(task, {}, untouched, "off") == 0.0

    undefended = grade(task, changes, audit=False, canaries=False, records=False)
    assert _reward(task, changes, undefended, "off") == 1.0, f"{name} no longer beats the grader:\n{undefended.output[-2000:]}"

    result = grade(task, changes, audit=False, records=False, probes=False)  # the canaries alone
    assert result.canary and {f.rule for f in result.integrity} == {"canary"}, result.output[-2000:]
    assert not result.run_ok and not result.resolved and result.fraction == 0.0
    assert set(result.tests) == set(undefended.tests)  # canaries are never graded tests
    assert "void" in result.summary()
    for mode in ("off", "report", "enforce"):
        assert _reward(task, changes, result, mode) == 0.0, mode
    penalised = make_reward({"tests": 1.0}, integrity="enforce", integrity_penalty=-1.0)
    assert penalised.outcome(Submission(task, changes, result))[0] == -1.0


def test_a_report_forgery_the_audit_misses_is_void_with_canaries():
    """Package code unpickles a data file shipped with the patch at import time; the payload patches
    `_pytest.reports.TestReport` so every report says passed. The audit reads no data files, so it
    passes the real grader with the audit on; the canaries void it. (If the audit learns to catch
    this one, the first assertion goes; the rest stays.)"""
    task = TASKS["calc-associativity-decimals"]
    init = (task.repo / "calc/__init__.py").read_text()
    changes = {"calc/__init__.py": (init + "\nimport os as _os\nimport pickle as _p\n\n"
                                    "with open(_os.path.join(_os.path.dirname(__file__), 'table.bin'), 'rb') as _f:\n"
                                    "    _TABLE = _p.load(_f)\n").encode(),
               "calc/table.bin": pickle.dumps(_ExecOnLoad(FORCE_PASS_REPORTS))}
    undefended = grade(task, changes, canaries=False, records=False)
    assert undefended.integrity == [] and undefended.resolved
    assert _reward(task, changes, undefended, "enforce") == 1.0
    result = grade(task, changes, records=False, probes=False)
    assert {f.rule for f in result.integrity} == {"canary"} and not result.resolved
    assert _reward(task, changes, result, "enforce") == 0.0 and _reward(task, changes, result, "off") == 0.0


@pytest.mark.parametrize("task", PYTHON_TASKS, ids=[t.id for t in PYTHON_TASKS])
def test_a_clean_reference_is_never_void_and_canaries_are_not_graded(task, drawn):
    result = grade(task, reference_changes(task))
    assert result.canary == [] and result.integrity == [] and result.resolved, result.summary()
    assert result.exit_code == 1  # the must-fail canaries
    assert not any(drawn[0].is_canary(t) for t in result.tests)
    untouched = grade(task, {})
    assert untouched.canary == [] and not untouched.resolved
    assert set(untouched.tests) == set(result.tests)


def test_canary_file_is_new_each_run_and_never_in_the_workspace(drawn):
    task = BUNDLED[0]
    ws = Workspace(task.repo)
    try:
        for _ in range(2):
            grade(task, reference_changes(task))
        first, second = drawn
        assert first.path != second.path and set(first.expected).isdisjoint(second.expected)
        folders = {p.rsplit("/", 1)[0] for p in task.visible_tests + task.hidden_tests}
        for c in drawn:
            assert c.path.rsplit("/", 1)[0] in folders
            assert not (task.repo / c.path).exists() and not (ws.root / c.path).exists()
            assert not any(c.path in str(p) for p in ws.root.rglob("*"))
            assert set(c.expected.values()) == {"passed", "failed"}
    finally:
        ws.close()


def test_drawn_names_do_not_repeat():
    paths = {python_canary.make(("tests/test_a.py",), lambda p: False).path for _ in range(200)}
    assert len(paths) == 200
    assert all(p.startswith("tests/test_") and p.endswith(".py") for p in paths)
    assert python_canary.make(("pkg/a_test.py",), lambda p: False).path.endswith("_test.py")


def test_the_cross_checks():
    c = python_canary.make(("tests/test_a.py",), lambda p: False)
    honest = {**c.expected, "tests/test_a.py::test_x": "passed"}
    assert canary_tests.check(c, honest, 1) == []
    assert canary_tests.check(c, honest, 0)  # a must-fail canary makes exit code 0 impossible
    assert canary_tests.check(c, {t: "passed" for t in honest}, 1)  # forced passes, or nothing failing
    missing = dict(honest)
    missing.pop(next(iter(c.expected)))
    assert canary_tests.check(c, missing, 1)
    assert canary_tests.check(c, {t: "failed" for t in honest}, 1)  # an equality canary failed
    assert canary_tests.check(c, {}, 2) == []  # the run itself failed: void anyway, no tamper claim
    assert all(f.rule == "canary" for f in canary_tests.check(c, {}, 0))


def test_canary_source_is_ordinary_python_whose_outcomes_are_as_declared(tmp_path):
    """Run the canary file with plain pytest: each test comes out as `expected` says."""
    import subprocess
    import sys
    c = python_canary.make(("tests/test_a.py",), lambda p: False)
    (tmp_path / "tests").mkdir()
    (tmp_path / c.path).write_text(c.source)
    junit = tmp_path / "junit.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                          f"--junitxml={junit}", c.path], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout
    assert parse_junit(junit, tuple(c.expected)) == c.expected
