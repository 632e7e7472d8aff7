"""Go environments: task.toml's [environment] checked, the files the grader owns, cgo chosen by the
repository's own files, the Debian packages of the dependencies unpacked once per set and found on
GOPATH by a build, and the build cache warmed once per task in a sandbox and reused.

The Debian parts use the machine's apt lists and mirror (a private code-gym cache per module);
without them they skip. go runs only inside the sandbox; in CI (CI=true) nothing here skips."""
from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from code_gym import languages
from code_gym.languages.go import environments, files
from code_gym.languages.go.environments import GoSpec
from code_gym.tasks.task import TaskError, load_task
from sandbox_backends import IN_CI, require

GO = languages.get("go")
WHERE = Path("/tasks/t/task.toml")


def fail_or_skip(why: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run the Go environment tests: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A private code-gym cache for the module: downloads, environments and build caches."""
    root = tmp_path_factory.mktemp("code-gym-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODE_GYM_CACHE", str(root))
        yield root


def needs_debian() -> None:
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        fail_or_skip("apt-get/dpkg-deb are missing: Go environments come from Debian packages")
    from code_gym.tasks import debian

    if "golang-github-kr-text-dev" not in debian.index("golang-"):
        fail_or_skip("apt's lists have no golang-github-kr-text-dev (run apt-get update)")


def needs_go() -> None:
    if shutil.which("go") is None:
        fail_or_skip("Debian's go is not installed (apt-get install golang-go)")
    require("bwrap")


# -- task.toml

def test_the_environment_names_the_import_path_and_the_packages():
    spec = GO.read_environment({"import_path": "github.com/kr/text", "packages": ["golang-github-creack-pty-dev"]},
                               WHERE)
    assert spec == GoSpec("github.com/kr/text", ("golang-github-creack-pty-dev",))
    assert GO.read_environment({"import_path": "gopkg.in/yaml.v3"}, WHERE) == GoSpec("gopkg.in/yaml.v3", ())


@pytest.mark.parametrize("table, message", [
    (None, "needs \\[environment\\] with import_path"),
    ("x", "must be a table"),
    ({"import_path": "github.com/a/b", "python": "3"}, "unknown key"),
    ({"packages": []}, "import_path must be a Go import path"),
    ({"import_path": "/abs/path"}, "import_path must be a Go import path"),
    ({"import_path": "github.com/../etc"}, "import_path must be a Go import path"),
    ({"import_path": "github.com/a/b", "packages": "golang-x-dev"}, "list of Debian package names"),
    ({"import_path": "github.com/a/b", "packages": ["golang-x-dev; rm -rf /"]}, "not a Debian library package"),
    ({"import_path": "github.com/a/b", "packages": ["libc6"]}, "not a Debian library package"),
])
def test_a_malformed_environment_is_named(table, message):
    with pytest.raises(TaskError, match=message) as error:
        GO.read_environment(table, WHERE)
    assert str(WHERE) in str(error.value)


# -- the grader's files

@pytest.mark.parametrize("path, rule", [
    ("a_test.go", "test-file"), ("pkg/x_test.go", "test-file"), ("pkg/testdata/golden.txt", "test-file"),
    ("testdata/in/deep.json", "test-file"), ("go.mod", "dependencies"), ("sub/go.sum", "dependencies"),
    ("vendor/github.com/x/y/y.go", "dependencies"), ("pkg/vendor/a/a.go", "dependencies"),
    ("a.go", None), ("pkg/test.go", None), ("testdata.go", None), ("vendor.go", None), ("doc/testing.md", None),
])
def test_the_grader_owns_tests_testdata_modules_and_vendor_folders(path, rule):
    assert GO.grader_owned(path, None, b"x") == rule
    assert GO.guarded(path) is (rule is not None)
    if rule:
        assert rule in files.RULES


def test_cgo_is_on_only_when_the_repository_imports_c(tmp_path):
    (tmp_path / "a.go").write_text('package a\n\nimport (\n\t"fmt"\n)\n')
    assert not environments.needs_cgo(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.go").write_text('package sub\n\n// #include <stdio.h>\nimport "C"\n')
    assert environments.needs_cgo(tmp_path)


# -- the Debian environment and the build cache

GREET = {
    "greet.go": """\
        package greet

        import "github.com/kr/text"

        // Quote indents every line of s with "> ".
        func Quote(s string) string { return text.Indent(s, "> ") }
        """,
    "greet_test.go": """\
        package greet

        import "testing"

        func TestQuote(t *testing.T) {
        	if got := Quote("a\\nb\\n"); got != "> a\\n> b\\n" {
        		t.Fatalf("got %q", got)
        	}
        }
        """,
}


def greet_task(root: Path, packages: list[str], files: dict[str, str] = GREET) -> Path:
    task = root / "go-greet"
    for name, text in files.items():
        (task / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        (task / "repo" / name).write_text(textwrap.dedent(text))
    (task / "hidden").mkdir(exist_ok=True)
    (task / "none.patch").write_text("")
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        id = "go-greet"
        language = "go"
        statement = "Quote lines."
        visible_tests = ["greet_test.go"]
        hidden_tests = []
        protected_paths = []
        reference_patch = "none.patch"

        [environment]
        import_path = "example.com/greet"
        packages = {json.dumps(packages)}
        """))
    return task


def test_packages_are_unpacked_once_per_set_with_their_closure(cache):
    needs_debian()
    first = environments.build_environment(GoSpec("example.com/greet", ("golang-github-kr-text-dev",)))
    assert not first.cached
    assert {p.split()[0] for p in first.installed} == {"golang-github-kr-text-dev", "golang-github-creack-pty-dev"}
    gopath = Path(first.gopath)
    assert (gopath / "src/github.com/kr/text/indent.go").is_file()
    assert (gopath / "src/github.com/creack/pty").is_dir()
    again = environments.build_environment(GoSpec("example.com/other", ("golang-github-kr-text-dev",)))
    assert again.cached and again.folder == first.folder
    empty = environments.build_environment(GoSpec("example.com/x", ()))
    assert empty.folder is None and empty.gopath == ""


def test_an_unknown_package_is_named(cache):
    needs_debian()
    with pytest.raises(TaskError, match="golang-no-such-thing-dev"):
        environments.build_environment(GoSpec("example.com/x", ("golang-no-such-thing-dev",)))


def test_the_runtime_builds_in_gopath_mode_against_the_packages_with_a_cache_made_once(cache, tmp_path):
    needs_debian()
    needs_go()
    task = load_task(greet_task(tmp_path, ["golang-github-kr-text-dev"]))
    runtime = GO.runtime(task)
    env = dict(runtime.env)
    assert env["GO111MODULE"] == "off" and env["GOFLAGS"] == "" and env["GOPROXY"] == "off"
    assert env["CGO_ENABLED"] == "0" and env["CODE_GYM_GO_PACKAGE"] == "example.com/greet"
    assert env["GOPATH"] == f"/tmp/code-gym-gopath:{env['CODE_GYM_GO_DEPENDENCIES']}"
    built = Path(env["CODE_GYM_GO_CACHE"])
    assert built in runtime.folders and Path(env["CODE_GYM_GO_DEPENDENCIES"]).parents[2] in runtime.folders
    record = json.loads((built / environments.CACHE_RECORD).read_text())
    assert record["exit_code"] == 0, record["output"]  # the dependency and the package compiled
    assert sum(1 for _ in built.rglob("*-d")) > 0  # compiled outputs ("-d" entries) are in it
    stamp = (built / environments.CACHE_RECORD).stat().st_mtime_ns
    again = GO.runtime(task)
    assert again == runtime and (built / environments.CACHE_RECORD).stat().st_mtime_ns == stamp
    (task.repo / "greet.go").write_text((task.repo / "greet.go").read_text() + "\n// Changed.\n")
    changed = dict(GO.runtime(task).env)["CODE_GYM_GO_CACHE"]
    assert changed != str(built)  # a repository of other files warms a cache of its own


def test_a_repository_that_imports_c_runs_with_cgo_and_asks_for_a_compiler(cache, tmp_path):
    needs_go()
    files = {"c.go": 'package greet\n\n// int one(void) { return 1; }\nimport "C"\n\nfunc One() int { return int(C.one()) }\n',
             "greet_test.go": 'package greet\n\nimport "testing"\n\nfunc TestOne(t *testing.T) {}\n'}
    task = load_task(greet_task(tmp_path, [], files))
    runtime = GO.runtime(task)
    assert dict(runtime.env)["CGO_ENABLED"] == "1"
    assert {"gcc", "libc6-dev"} <= set(runtime.packages)


def test_without_a_local_sandbox_there_is_no_cache(cache, tmp_path, monkeypatch):
    from code_gym.sandbox import local

    monkeypatch.setattr(local, "available_isolation", lambda: ["none"])
    task = load_task(greet_task(tmp_path, [], {"a.go": "package greet\n", "greet_test.go": GREET["greet_test.go"]}))
    runtime = GO.runtime(task)
    assert "CODE_GYM_GO_CACHE" not in dict(runtime.env)
    assert runtime.folders == (Path(runtime.path[0]),)  # the go wrapper's folder alone
    assert (Path(runtime.path[0]) / "go").read_text() == environments.GO_WRAPPER


def test_environment_folders_are_readable_by_every_uid(cache, tmp_path):
    needs_go()
    task = load_task(greet_task(tmp_path, [], {"a.go": "package greet\n", "greet_test.go": GREET["greet_test.go"]}))
    built = Path(dict(GO.runtime(task).env)["CODE_GYM_GO_CACHE"])
    assert os.stat(built).st_mode & 0o005 == 0o005


# -- the agent's own go: the wrapper first on every command's PATH

CALC = {
    "calc.go": """\
        package calc

        // Add returns a + b.
        func Add(a, b int) int { return a + b }
        """,
    "greet_test.go": """\
        package calc

        import "testing"

        func TestAdd(t *testing.T) {
        	if Add(2, 3) != 5 {
        		t.Fatalf("Add(2, 3) = %d", Add(2, 3))
        	}
        }
        """,
    "sub/sub.go": """\
        package sub

        import "example.com/greet"

        // Twice returns 2a.
        func Twice(a int) int { return greet.Add(a, a) }
        """,
    "sub/sub_test.go": """\
        package sub_test

        import (
        	"testing"

        	"example.com/greet/sub"
        )

        func TestTwice(t *testing.T) {
        	if got := sub.Twice(2); got != 4 {
        		t.Errorf("Twice(2) = %d, want 4", got)
        	}
        }
        """,
}


def episode_sandbox(tmp_path: Path, files: dict[str, str]):
    """A bubblewrap sandbox over a copy of a Go task's repository, with the task's runtime, as an
    episode's bash tool runs commands (no reporter involved)."""
    from code_gym.sandbox import Limits, LocalSandbox

    task = load_task(greet_task(tmp_path / "task", [], files))
    runtime = GO.runtime(task)
    repo = tmp_path / "repo"
    shutil.copytree(task.repo, repo)
    return LocalSandbox(repo, "bwrap", Limits(timeout=300), runtime=runtime), repo, runtime


def greet_calc() -> dict[str, str]:
    return {name: text.replace("package calc", "package greet") for name, text in CALC.items()}


def test_the_agents_go_test_builds_the_import_path_from_the_repository_and_its_folders(cache, tmp_path):
    needs_go()
    sandbox, repo, runtime = episode_sandbox(tmp_path, greet_calc())
    assert runtime.path and Path(runtime.path[0]) in runtime.folders
    try:
        run = sandbox.exec("go test -v ./...")
        assert run.exit_code == 0, run.output
        assert "--- PASS: TestAdd" in run.output and "--- PASS: TestTwice" in run.output
        assert "ok  \texample.com/greet\t" in run.output and "ok  \texample.com/greet/sub\t" in run.output
        deeper = sandbox.exec("cd sub && go test -v -run TestTwice . && go vet ./... && go build ./... && pwd")
        assert deeper.exit_code == 0, deeper.output
        assert "--- PASS: TestTwice" in deeper.output and "TestAdd" not in deeper.output
        assert deeper.output.rstrip().endswith("/repo/sub")  # the caller's folder is the caller's
        # a broken patch: the agent's run fails, naming the test and the package
        (repo / "calc.go").write_text((repo / "calc.go").read_text().replace("a + b", "a - b"))
        broken = sandbox.exec("go test ./...")
        assert broken.exit_code == 1, broken.output
        assert "--- FAIL: TestAdd" in broken.output and "--- FAIL: TestTwice" in broken.output
        assert "FAIL\texample.com/greet\t" in broken.output and "FAIL\texample.com/greet/sub\t" in broken.output
        below = sandbox.exec("cd sub && go test ./...")
        assert below.exit_code == 1 and "--- FAIL: TestTwice" in below.output and "TestAdd" not in below.output
        # what does not compile says where, with the repository's paths
        (repo / "calc.go").write_text((repo / "calc.go").read_text().replace("a - b", "a - "))
        unbuilt = sandbox.exec("go build ./... ; go vet . ; gofmt -l . ; echo done")
        assert "calc.go:4" in unbuilt.output and unbuilt.output.rstrip().endswith("done"), unbuilt.output
    finally:
        sandbox.close()


def test_the_agents_go_starts_from_the_build_cache_once_per_command(cache, tmp_path):
    needs_go()
    sandbox, repo, runtime = episode_sandbox(tmp_path, greet_calc())
    try:
        run = sandbox.exec("go env GOCACHE GOPATH GO111MODULE GOFLAGS GOPROXY GOENV && ls /tmp/code-gym-gocache | wc -l "
                           "&& touch /tmp/code-gym-gocache/mark && go list . && ls /tmp/code-gym-gocache/mark "
                           "&& readlink /tmp/code-gym-gopath/src/example.com/greet")
        assert run.exit_code == 0, run.output
        lines = run.output.splitlines()
        assert lines[:5] == ["/tmp/code-gym-gocache", dict(runtime.env)["GOPATH"], "off", "", "off"], run.output
        assert int(lines[6]) > 2  # the seeded cache's entries
        assert lines[7:] == ["example.com/greet", "/tmp/code-gym-gocache/mark", "/repo"], run.output  # seeded once
        # warm: nothing of the untouched repository compiles again (go says "(cached)" for its test run after one)
        warm = sandbox.exec("go build -x ./... 2>&1 | grep -c '/compile ' || true")
        assert warm.output.strip() == "0", warm.output
        # a GOCACHE the caller set is kept
        own = sandbox.exec("GOCACHE=/tmp/mine go env GOCACHE")
        assert own.output.strip() == "/tmp/mine"
    finally:
        sandbox.close()
