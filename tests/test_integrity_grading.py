"""Grading that the patch cannot steer: grader-owned files, graded ids known before the run,
per-file collection errors, timeouts, files rewritten during the run, and a workspace whose git
holds one base commit and nothing else."""
import dataclasses
import subprocess
import textwrap

from code_gym.grading.file_policy import apply_changes
from code_gym.grading.grade import grade
from code_gym.languages.python.junit import parse_junit
from code_gym.sandbox import make_sandbox
from code_gym.tasks.task import Timeouts
from code_gym.workspace.working_copy import Workspace

from conftest import git

FIXED_ADD = b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
VISIBLE, HIDDEN_ADD, HIDDEN_MUL = ("tests/test_calc.py::test_add_zero", "tests/test_hidden_calc.py::test_add",
                                   "tests/test_hidden_calc.py::test_mul")


def test_grader_keeps_the_tasks_own_tests_conftest_config_and_hooks(tiny_task, tmp_path):
    root = tmp_path / "copy"
    root.mkdir()
    changes = {"tests/test_calc.py": b"", "conftest.py": b"", "calc/conftest.py": b"", "pytest.ini": b"",
               "sitecustomize.py": b"", "setup.cfg": b"[metadata]\nname = calc\n", "calc/ops.py": FIXED_ADD}
    ignored = apply_changes(tiny_task, root, changes)
    assert sorted(ignored) == ["calc/conftest.py", "conftest.py", "pytest.ini", "sitecustomize.py", "tests/test_calc.py"]
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == ["ops.py", "setup.cfg"]


def test_graded_ids_are_known_before_the_run_and_a_collection_error_fails_only_its_file(tiny_task):
    no_mul = {"calc/__init__.py": b"from calc.ops import add\n", "calc/ops.py": FIXED_ADD}
    result = grade(tiny_task, no_mul)
    assert result.tests == {VISIBLE: "passed", HIDDEN_ADD: "error", HIDDEN_MUL: "error"}
    assert result.run_ok and result.fraction == 1 / 3 and not result.resolved
    assert result.integrity == []


def test_a_run_that_dies_fails_every_graded_test(tiny_task):
    result = grade(tiny_task, {"calc/ops.py": FIXED_ADD + b"\nimport os\nos._exit(0)\n"}, audit=False)
    # exit code 0 with no records: impossible with a must-fail canary in the run, and a results stream
    # without its end record, so it is void twice over
    assert result.exit_code == 0 and {f.rule for f in result.integrity} == {"canary", "results"} and result.canary
    assert result.tests == {VISIBLE: "error", HIDDEN_ADD: "error", HIDDEN_MUL: "error"}
    assert not result.resolved


def test_a_task_command_that_stops_at_the_first_failure_still_runs_every_test(tiny_task):
    """The must-fail canaries would end a `-x` session early; the grader runs on past them."""
    task = dataclasses.replace(tiny_task, test_command=tiny_task.test_command + " -x")
    fixed = FIXED_ADD.replace(b"return a + b\n", b"return a * b\n").replace(b"return a * b\n", b"return a + b\n", 1)
    result = grade(task, {"calc/ops.py": fixed})
    assert result.resolved and result.canary == [] and result.exit_code == 1, result.output[-2000:]


def test_timeout_fails_every_graded_test(tiny_task):
    task = dataclasses.replace(tiny_task, timeouts=Timeouts(command=5, tests=1.5))
    result = grade(task, {"calc/ops.py": FIXED_ADD.replace(b"return a + b", b"import time; time.sleep(60)", 1)})
    assert result.timed_out and set(result.tests.values()) == {"error"} and result.fraction == 0.0


def test_test_files_rewritten_during_the_run_void_it(tiny_task):
    rewrite = textwrap.dedent("""
        import pathlib
        pathlib.Path("tests/test_hidden_calc.py").write_text("def test_add():\\n    pass\\n\\ndef test_mul():\\n    pass\\n")
    """).encode()
    result = grade(tiny_task, {"calc/ops.py": FIXED_ADD + rewrite}, audit=False)
    assert result.tampered == ["tests/test_hidden_calc.py"]
    assert not result.run_ok and set(result.tests.values()) == {"error"}


def test_declared_fail_to_pass_and_pass_to_pass_are_the_graded_tests(tiny_task):
    task = dataclasses.replace(tiny_task, fail_to_pass=(HIDDEN_ADD,), pass_to_pass=(VISIBLE,))
    result = grade(task, {"calc/ops.py": FIXED_ADD})
    assert result.tests == {HIDDEN_ADD: "passed", VISIBLE: "passed"}
    assert result.exit_code == 1 and result.resolved  # test_mul fails, but it is not graded


def test_junit_testcases_match_by_address_not_by_where_the_code_lives(tmp_path):
    xml = tmp_path / "junit.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="tests.test_x.TestC" name="test_y[1-a]" file="pkg/helpers.py"/>'
                   '<testcase classname="tests.test_x" name="test_z" file="tests/test_x.py"><failure/></testcase>'
                   '</testsuite></testsuites>')
    expected = ("tests/test_x.py::TestC::test_y[1-a]", "tests/test_x.py::test_z")
    assert parse_junit(xml, expected) == {expected[0]: "passed", expected[1]: "failed"}
    assert "pkg/helpers.py::test_y[1-a]" in parse_junit(xml)  # without the ids only `file` is there to go on


def test_workspace_git_has_exactly_one_base_commit(tiny_task):
    ws = Workspace(tiny_task.repo, git=True)
    try:
        sandbox = make_sandbox("auto", ws.root, mask=(tiny_task.root,))
        (ws.root / "calc" / "ops.py").write_bytes(FIXED_ADD)
        out = sandbox.exec("git log --all --oneline | wc -l; git status --short; git diff --stat | tail -1").output
        assert out.split("\n")[:2] == ["1", " M calc/ops.py"] and "1 file changed" in out
        ws.scan_changes()
        assert list(ws.changed_files()) == ["calc/ops.py"]  # .git is not part of the patch
    finally:
        ws.close()


def test_a_source_with_history_shows_none_of_it(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.py").write_text("x = 1\n")
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    git("init", "-q", cwd=source)
    git("add", ".", cwd=source)
    git(*env, "commit", "-qm", "old", cwd=source)
    (source / "fix.py").write_text("gold = True\n")
    git("add", ".", cwd=source)
    git(*env, "commit", "-qm", "the future fix", cwd=source)
    git("reset", "-q", "--hard", "HEAD~1", cwd=source)
    for strategy in ("auto", "copy"):
        ws = Workspace(source, strategy=strategy, git=True)
        try:
            log = subprocess.run("git log --all --format=%s; git reflog | wc -l",
                                 shell=True, cwd=ws.root, capture_output=True, text=True).stdout
            assert log.split("\n")[:2] == ["base", "0"], (strategy, log)  # one commit, no reflog
            assert "the future fix" not in subprocess.run(["git", "log", "--all", "-p"], cwd=ws.root,
                                                          capture_output=True, text=True).stdout
        finally:
            ws.close()
