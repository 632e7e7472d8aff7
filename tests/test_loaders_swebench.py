"""SWE-bench-family JSONL -> task folders, against a git repository built here."""
import json
import textwrap

import pytest

from code_gym.env.environment import CodeRepoEnv
from code_gym.tasks.loaders.swebench import load_swebench
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.tasks.task import TaskError
from code_gym.grading.gates import validate_task

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


# --- crafted rows: the attacker writes the JSONL and the repository it points at -------------------

def attacker_repo(folder, files, links=()):
    """A git repository at `folder` holding `files` ({path: text}) and `links` ({path: target}),
    committed; its commit id."""
    folder.mkdir(parents=True)
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    for rel, target in dict(links).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).symlink_to(target)
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=folder)
    return git("rev-parse", "HEAD", cwd=folder).strip()


def crafted(instance_id, base, test_patch, repo="evil/proj"):
    return {"instance_id": instance_id, "repo": repo, "base_commit": base, "patch": "",
            "test_patch": test_patch, "problem_statement": "x",
            "FAIL_TO_PASS": ["tests/test_one.py::test_one"], "PASS_TO_PASS": []}


NEW_TEST = ("diff --git a/tests/test_one.py b/tests/test_one.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/tests/test_one.py\n@@ -0,0 +1 @@\n+def test_one(): pass\n")


def modify(path, old="nothing", new="x"):
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


def test_traversing_test_patch_path_writes_nothing_outside(tmp_path, monkeypatch):
    """Row 1's repository holds a link L -> a/b/c and OUT/PWNED; row 2's test_patch names
    ../i1/repo/L/../../../OUT/PWNED: read beside the export (cache/<hash>/i1/repo/OUT/PWNED, the
    attacker's file) and, without the fix, written beside the scratch folder: the host's temp
    folder (systmp/OUT/PWNED)."""
    monkeypatch.setattr("tempfile.tempdir", str((tmp_path / "systmp").resolve()))
    (tmp_path / "systmp").mkdir()
    base = attacker_repo(tmp_path / "repos" / "evil__proj", {"a/b/c/keep": "", "OUT/PWNED": "nothing\n"},
                         {"L": "a/b/c"})
    evil = "../i1/repo/L/../../../OUT/PWNED"
    jsonl = write_jsonl(tmp_path / "w.jsonl", crafted("i1", base, NEW_TEST), crafted("i2", base, modify(evil)))
    with pytest.raises(TaskError, match=r"instance i2: test_patch: path .*not a plain relative path"):
        load_swebench(jsonl, repos_dir=tmp_path / "repos", cache_dir=tmp_path / "cache", environments=False)
    assert list((tmp_path / "systmp").iterdir()) == []  # nothing written, not even the scratch folder


@pytest.mark.parametrize("path", ["/abs/x.py", "tests/../x.py", "./x.py", "tests//x.py", "tests/./x.py"])
def test_patch_paths_must_be_plain_and_relative(dataset, tmp_path, path):
    root, record = dataset
    for field in ("test_patch", "patch"):
        row = dict(record, **{field: modify(path)})
        with pytest.raises(TaskError, match=rf"{field}: path .*not a plain relative path"):
            load_swebench(write_jsonl(tmp_path / "bad.jsonl", row), repos_dir=root, cache_dir=tmp_path / "c",
                          environments=False)


def test_patch_through_a_link_in_the_repository_is_refused(tmp_path):
    """tests/d -> real: the file behind the link is neither followed nor copied."""
    base = attacker_repo(tmp_path / "repos" / "evil__proj", {"real/test_one.py": "nothing\n"},
                         {"tests/d": "../real", "tests/test_l.py": "../real/test_one.py"})
    for path in ("tests/d/test_one.py", "tests/test_l.py"):
        jsonl = write_jsonl(tmp_path / "l.jsonl", crafted("i1", base, modify(path)))
        with pytest.raises(TaskError, match="symbolic link"):
            load_swebench(jsonl, repos_dir=tmp_path / "repos", cache_dir=tmp_path / "cache", environments=False)


def test_hidden_test_that_is_a_symlink_is_refused(tmp_path):
    """A test_patch adding tests/test_leak.py as a link (mode 120000) to a host file: never read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-4711\n")
    base = attacker_repo(tmp_path / "repos" / "evil__proj", {"pkg/__init__.py": ""})
    leak = ("diff --git a/tests/test_leak.py b/tests/test_leak.py\nnew file mode 120000\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/tests/test_leak.py\n@@ -0,0 +1 @@\n+{secret}\n\\ No newline at end of file\n")
    jsonl = write_jsonl(tmp_path / "a.jsonl", crafted("i-A", base, leak))
    with pytest.raises(TaskError, match=r"instance i-A: test_patch: 'tests/test_leak.py' is a symbolic link"):
        load_swebench(jsonl, repos_dir=tmp_path / "repos", cache_dir=tmp_path / "cache", environments=False)
    cached = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and not p.is_symlink()]
    assert not any(b"TOP-SECRET" in p.read_bytes() for p in cached)


@pytest.mark.parametrize("repo", ["../other/o__p", "../../x/y", "a/b/c", "noslash", "/abs/x", "a/..", "a..b/c",
                                  "a/b c", "", "a/"])
def test_repo_must_be_owner_slash_name(tmp_path, repo):
    """`repo` = ../other/o__p made find_clone export any git repository on the host."""
    base = attacker_repo(tmp_path / "other" / "o__p", {"pkg/__init__.py": "nothing\n"})
    (tmp_path / "repos").mkdir()
    jsonl = write_jsonl(tmp_path / "e.jsonl", crafted("i-E", base, NEW_TEST, repo=repo))
    with pytest.raises(TaskError, match=r"e\.jsonl:1: field 'repo' must be a GitHub 'owner/name'"):
        load_swebench(jsonl, repos_dir=tmp_path / "repos", cache_dir=tmp_path / "cache", environments=False)
    assert not (tmp_path / "cache").exists()


def test_repo_names_with_dots_dashes_and_underscores_are_accepted(tmp_path):
    base = attacker_repo(tmp_path / "repos" / "my-org__py.proj_2", {"pkg/__init__.py": ""})
    jsonl = write_jsonl(tmp_path / "ok.jsonl", crafted("i-ok", base, NEW_TEST, repo="my-org/py.proj_2"))
    [task] = load_swebench(jsonl, repos_dir=tmp_path / "repos", cache_dir=tmp_path / "cache", environments=False)
    assert task.hidden_tests == ("tests/test_one.py",)
