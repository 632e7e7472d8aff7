"""SWE-bench-family JSONL -> task folders, against a git repository built here."""
import json
import textwrap

import pytest

from code_gym.env import CodeRepoEnv
from code_gym.loaders.swebench import load_swebench
from code_gym.replay import hermes, patch_to_calls
from code_gym.task import TaskError
from code_gym.validate import validate_task

from conftest import git

BUGGY = textwrap.dedent("""\
    def total(xs):
        return sum(xs)


    def mean(xs):
        return sum(xs) / (len(xs) + 1)
    """)
OLD_TESTS = textwrap.dedent("""\
    from stats.ops import total


    def test_total():
        assert total([1, 2, 3]) == 6
    """)
NEW_TESTS = OLD_TESTS.replace("from stats.ops import total", "from stats.ops import mean, total") + textwrap.dedent("""\


    def test_mean():
        assert mean([1, 2, 3]) == 2
    """)
NEW_FILE = "from stats.ops import mean\n\n\ndef test_mean_of_one():\n    assert mean([4]) == 4\n"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A clone at <root>/acme__stats (beside the JSONL files: the default place) whose base commit
    has the bug, the fix committed after it, and a record describing it."""
    root = tmp_path_factory.mktemp("swebench")
    repo = root / "acme__stats"
    (repo / "stats").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "stats" / "__init__.py").write_text("")
    (repo / "stats" / "ops.py").write_text(BUGGY)
    (repo / "tests" / "test_ops.py").write_text(OLD_TESTS)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    (repo / "stats" / "ops.py").write_text(BUGGY.replace("(len(xs) + 1)", "len(xs)"))
    (repo / "tests" / "test_ops.py").write_text(NEW_TESTS)
    (repo / "tests" / "test_mean.py").write_text(NEW_FILE)
    git("add", "-A", cwd=repo)
    patch = git("diff", "--cached", "--", "stats", cwd=repo)
    test_patch = git("diff", "--cached", "--", "tests", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fix", cwd=repo)
    record = {
        "instance_id": "acme__stats-1", "repo": "acme/stats", "base_commit": base, "patch": patch,
        "test_patch": test_patch, "problem_statement": "mean() is too small: mean([1, 2, 3]) gives 1.5.",
        "FAIL_TO_PASS": json.dumps(["tests/test_ops.py::test_mean", "tests/test_mean.py::test_mean_of_one"]),
        "PASS_TO_PASS": ["tests/test_ops.py::test_total"], "image_name": "acme/stats:base", "version": "1.0",
    }
    return root, record


def write_jsonl(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_record_becomes_a_task_at_base_commit(dataset, tmp_path):
    root, record = dataset
    jsonl = write_jsonl(root / "data.jsonl", record)
    [task] = load_swebench(jsonl, cache_dir=tmp_path)
    assert task.id == "acme-stats-1"
    assert task.statement.startswith("mean() is too small")
    assert task.fail_to_pass == ("tests/test_ops.py::test_mean", "tests/test_mean.py::test_mean_of_one")
    assert task.pass_to_pass == ("tests/test_ops.py::test_total",)
    assert task.image == "acme/stats:base"
    assert (task.repo / "stats/ops.py").read_text() == BUGGY  # base commit, not the clone's HEAD
    assert not (task.repo / ".git").exists()
    # the agent sees the old test file; the grader lays test_patch's version over it
    assert (task.repo / "tests/test_ops.py").read_text() == OLD_TESTS
    assert set(task.hidden_tests) == {"tests/test_ops.py", "tests/test_mean.py"}
    assert (task.hidden_dir / "tests/test_ops.py").read_text() == NEW_TESTS
    assert task.is_protected("tests/test_ops.py") and not task.is_protected("stats/ops.py")
    assert task.reference_patch == record["patch"]


def test_cached_folders_are_reused(dataset, tmp_path):
    root, record = dataset
    jsonl = write_jsonl(root / "data.jsonl", record)
    [first] = load_swebench(jsonl, cache_dir=tmp_path)
    stamp = (first.root / "task.toml").stat().st_mtime_ns
    [again] = load_swebench(jsonl, cache_dir=tmp_path)
    assert again.root == first.root and (again.root / "task.toml").stat().st_mtime_ns == stamp


def test_validate_checks_fail_to_pass_and_pass_to_pass(dataset, tmp_path):
    root, record = dataset
    wrong = dict(record, instance_id="acme__stats-2",
                 FAIL_TO_PASS=["tests/test_ops.py::test_mean", "tests/test_ops.py::test_total"])
    good, bad = load_swebench(write_jsonl(root / "two.jsonl", record, wrong), cache_dir=tmp_path)
    verdict = validate_task(good, runs=1)
    assert verdict.ok, verdict.problems
    assert (verdict.untouched_failing, verdict.untouched_total) == (2, 2)
    verdict = validate_task(bad, runs=1)
    assert verdict.problems == ["FAIL_TO_PASS tests pass before the reference: tests/test_ops.py::test_total"]


def test_reference_replayed_in_the_env_resolves(dataset, tmp_path):
    root, record = dataset
    [task] = load_swebench(write_jsonl(root / "data.jsonl", record), cache_dir=tmp_path)
    env = CodeRepoEnv(task=task)
    try:
        env.reset(seed=0)
        env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
        _, reward, terminated, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
    finally:
        env.close()
    assert terminated and reward == 1.0 and info["resolved"]


@pytest.mark.parametrize("change, message", [
    ({"base_commit": None}, "missing field 'base_commit'"),
    ({"FAIL_TO_PASS": "not json"}, "field 'FAIL_TO_PASS'"),
    ({"FAIL_TO_PASS": []}, "'FAIL_TO_PASS' is empty"),
    ({"repo": "acme/unknown"}, "no local clone of 'acme/unknown'"),
    ({"base_commit": "0" * 40}, "cannot export commit"),
    ({"test_patch": "not a diff"}, "changes no file"),
    ({"test_patch": "--- a/tests/x.py\n+++ b/tests/x.py\n@@ -1 +1 @@\n-a\n+b\n"}, "does not apply at base_commit"),
    ({"instance_id": "acme__stats-1"}, "same task id"),
])
def test_bad_records_name_the_line_and_field(dataset, tmp_path, change, message):
    root, record = dataset
    broken = {k: v for k, v in {**record, "instance_id": "acme__stats-9", **change}.items() if v is not None}
    jsonl = write_jsonl(tmp_path / "bad.jsonl", record, broken)
    with pytest.raises(TaskError, match=message) as err:
        load_swebench(jsonl, repos_dir=root, cache_dir=tmp_path / "cache")
    if "field" in message:
        assert "bad.jsonl:2" in str(err.value)
