"""The builder on project shapes met on PyPI: a test file with tests that fail on the untouched
project (only those are deselected, the rest of the file counts), and a src layout whose own pytest
`pythonpath` also puts its tests folder on the path (semver: the builder's `-o pythonpath=src`
replaced it, and its conftest could not import its helper module)."""
import shlex
import textwrap

from code_gym.languages.python.builder import BuildOptions, build_tasks
from code_gym.languages.python.builder.project import make_test_command
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.grading.gates import validate_task

CALC = {
    "calc/__init__.py": "",
    "calc/ops.py": '''\
        """Arithmetic helpers."""


        def clamp(x, low, high):
            """`x` limited to [low, high]."""
            if x < low:
                return low
            if x > high:
                return high
            return x


        def mean(values):
            """The arithmetic mean of a non-empty list."""
            return sum(values) / len(values)
        ''',
    # two tests here fail on the untouched project (one parametrized, its id with a space and brackets)
    "tests/test_ops.py": '''\
        import pytest

        from calc.ops import clamp, mean


        def test_clamp_low():
            assert clamp(-5, 0, 10) == 0


        def test_clamp_high():
            assert clamp(50, 0, 10) == 10


        def test_mean():
            assert mean([1, 2, 3]) == 2


        def test_broken_upstream():
            assert mean([1, 2]) == 2  # wrong on the untouched project


        @pytest.mark.parametrize("text", ["a b", "c"])
        def test_broken_param(text):
            assert clamp(len(text), 5, 9) == len(text)
        ''',
    # every test fails here: the whole file is left out
    "tests/test_hopeless.py": '''\
        from calc.ops import clamp


        def test_nothing_right():
            assert clamp(1, 2, 3) == 1
        ''',
}


def _write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_only_the_failing_tests_of_a_file_are_deselected(tmp_path):
    project = _write(tmp_path / "calc", CALC)
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, progress=False,
                                                                 multi_ratio=0, workers=1))
    baseline = report.manifest["baseline"]
    assert baseline["deselected_tests"] == {"tests/test_ops.py": 3}
    assert set(baseline["excluded_test_files"]) == {"tests/test_hopeless.py"}
    assert baseline["tests"] == 3  # the three passing tests of test_ops.py count
    # before, a file with a failing test was left out whole: no task could have test_ops.py's tests
    assert report.tasks and all(t.hidden_tests == ("tests/test_ops.py",) for t in report.tasks)
    task = report.tasks[0]
    words = shlex.split(task.test_command)
    deselected = {b for a, b in zip(words, words[1:]) if a == "--deselect"}
    assert deselected == {"tests/test_ops.py::test_broken_upstream", "tests/test_ops.py::test_broken_param[a b]",
                          "tests/test_ops.py::test_broken_param[c]"}
    assert not deselected & set(task.pass_to_pass + task.fail_to_pass)
    # the grader runs the task's own command: the deselected tests do not run, the reference resolves
    result = grade(task, reference_changes(task))
    assert result.resolved and not deselected & set(result.tests), result.summary()
    assert not grade(task, {}).resolved
    verdict = validate_task(task, runs=1)
    assert verdict.ok, verdict.problems


SEMVER_LIKE = {
    # importlib mode (as semver's addopts): pytest puts no test folder on sys.path of its own
    "setup.cfg": "[metadata]\nname = verlib\n\n[tool:pytest]\npythonpath = src tests\naddopts = --import-mode=importlib\n",
    "src/verlib/__init__.py": '''\
        """Version strings."""


        def parse(text):
            """(major, minor, patch) of "MAJOR.MINOR.PATCH"."""
            major, minor, patch = text.split(".")
            return int(major), int(minor), int(patch)
        ''',
    "tests/helpers.py": "def version(a, b, c):\n    return f'{a}.{b}.{c}'\n",
    "tests/conftest.py": "from helpers import version  # noqa: F401  (found through the project's pythonpath)\n",
    "tests/test_parse.py": '''\
        from helpers import version
        from verlib import parse


        def test_parse():
            assert parse(version(1, 2, 3)) == (1, 2, 3)


        def test_parse_zero():
            assert parse("0.0.10") == (0, 0, 10)
        ''',
}


def test_a_src_layout_keeps_its_own_pythonpath(tmp_path):
    project = _write(tmp_path / "verlib", SEMVER_LIKE)
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, progress=False,
                                                                 multi_ratio=0, workers=1))
    assert report.manifest["test_command"] == "python -m pytest"  # its pythonpath has src already
    assert report.tasks and report.manifest["baseline"]["tests"] == 2
    assert validate_task(report.tasks[0], runs=1).ok
    # a pythonpath without src gets src added, not replaced, in the form the warm runner takes
    (project / "setup.cfg").write_text("[tool:pytest]\npythonpath = tests\n")
    assert make_test_command(project, src_layout=True) == "python -m pytest -o 'pythonpath=src tests'"
    (project / "setup.cfg").unlink()
    assert make_test_command(project, src_layout=True) == "python -m pytest -o pythonpath=src"
    assert make_test_command(project, src_layout=False) == "python -m pytest"


SUBTESTS = {
    "calc/__init__.py": "",
    "calc/ops.py": CALC["calc/ops.py"],
    # unittest subTest: pytest 9 reports each subtest's call phase as one more report of its test
    # (more-itertools' test files); the grader's results stream once read that as a test reported
    # twice and voided every run of such a project
    "tests/test_ops.py": '''\
        import unittest

        from calc.ops import clamp, mean


        class OpsTests(unittest.TestCase):
            def test_clamp(self):
                for x, want in ((-5, 0), (50, 10), (5, 5)):
                    with self.subTest(x=x):
                        self.assertEqual(clamp(x, 0, 10), want)

            def test_mean(self):
                self.assertEqual(mean([1, 2, 3]), 2)
        ''',
}

# a conftest that runs only the test modules the project lists (a custom selection): the builder's
# plain pytest runs see every listed test pass or fail as it should; the grader's canary file is not
# listed, so its canaries are missing from every graded run and the run is void
LISTED = {
    "calc/__init__.py": "",
    "calc/ops.py": CALC["calc/ops.py"],
    "tests/conftest.py": '''\
        OWN = {"test_ops.py"}


        def pytest_collection_modifyitems(config, items):
            items[:] = [item for item in items if item.path.name in OWN]
        ''',
    "tests/test_ops.py": '''\
        from calc.ops import clamp, mean


        def test_clamp():
            assert clamp(-5, 0, 10) == 0 and clamp(50, 0, 10) == 10


        def test_mean():
            assert mean([1, 2, 3]) == 2
        ''',
}


def test_a_project_whose_tests_use_subtests_builds_tasks_and_a_failed_subtest_fails_its_test(tmp_path):
    project = _write(tmp_path / "calc", SUBTESTS)
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, progress=False,
                                                                 multi_ratio=0, workers=1))
    assert report.tasks and not [r for r in report.rejections if "grader voids" in r.reason]
    clamp_tasks = [t for t in report.tasks if any("test_clamp" in f for f in t.fail_to_pass)]
    assert clamp_tasks
    task = clamp_tasks[0]
    # the task's mutation breaks clamp on some subtests only: the grader counts test_clamp failed
    # on the untouched repo and passed with the reference, never void
    before, after = grade(task, {}, probes=False), grade(task, reference_changes(task), probes=False)
    assert before.run_ok and after.run_ok, (before.summary(), after.summary())
    clamp_id = next(f for f in task.fail_to_pass if "test_clamp" in f)
    assert before.tests[clamp_id] == "failed" and after.tests[clamp_id] == "passed"
    assert after.resolved and not before.resolved


def test_tasks_the_grader_would_void_are_not_built(tmp_path):
    project = _write(tmp_path / "calc", LISTED)
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, progress=False,
                                                                 multi_ratio=0, workers=1))
    voided = [r for r in report.rejections if "grader voids" in r.reason]
    # every candidate passed the builder's own gates (its plain pytest runs see nothing wrong) ...
    assert voided and len(voided) + len(report.rejected("fails")) == len(report.rejections)
    # ... and the grader's run of the untouched repo is void, so none of them is a task
    assert report.tasks == [] and all(r.gate == "original" for r in voided)
    assert "canary" in voided[0].reason
