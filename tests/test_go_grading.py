"""Go tasks end to end through `grade`: a hand-written task (two packages, a hidden test, a
subtest) and a task made from Debian's go-difflib with a bug put in, each graded in bubblewrap
with records and canaries: the untouched repository fails its tests, the reference passes, a
wrong fix fails, a patch that does not compile fails its tests with the compiler's message (not a
void run), changes to the grader's files are kept out; the agent's run_tests reads records; and
(smaller) the Docker backend.

go runs only in the sandboxes; without Debian's go, bubblewrap, Docker (or an image with
golang-go) or apt's lists the tests that need them skip saying why, and in CI (CI=true) they fail."""
from __future__ import annotations

import json
import shutil
import textwrap
from difflib import unified_diff
from pathlib import Path

import gymnasium as gym
import pytest

from code_gym import languages
from code_gym.actions.parse import ToolCall
from code_gym.actions.tools import run_tool
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.tasks.task import load_task
from sandbox_backends import IN_CI, require

GO = languages.get("go")


def fail_or_skip(why: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run the Go grading tests: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """A private code-gym cache: environments, build caches and downloads of this module only."""
    root = tmp_path_factory.mktemp("code-gym-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODE_GYM_CACHE", str(root))
        yield root


def needs_go(isolation: str = "bwrap") -> None:
    if shutil.which("go") is None:
        fail_or_skip("Debian's go is not installed (apt-get install golang-go)")
    require(isolation)
    if isolation == "docker":
        from code_gym.sandbox import docker, images

        held = images.image_packages(docker.client(), images.DEFAULT_IMAGE) or frozenset()
        if "golang-go" not in held:
            fail_or_skip(f"the Docker image {images.DEFAULT_IMAGE} lacks golang-go: rebuild it with "
                         "`code-gym image build` (it adds every language's packages)")


# -- a hand-written task: example.com/calc, Add subtracts

CALC = {
    "repo/calc.go": """\
        package calc

        // Add returns a + b.
        func Add(a, b int) int { return a - b }

        // Neg returns -a.
        func Neg(a int) int { return -a }
        """,
    "repo/calc_test.go": """\
        package calc

        import "testing"

        func TestNeg(t *testing.T) {
        	if Neg(2) != -2 {
        		t.Fatal("Neg(2)")
        	}
        }
        """,
    "repo/sub/sub.go": """\
        package sub

        import "example.com/calc"

        // Twice returns 2a.
        func Twice(a int) int { return calc.Add(a, a) }
        """,
    "hidden/sub/sub_test.go": """\
        package sub_test

        import (
        	"testing"

        	"example.com/calc/sub"
        )

        func TestTwice(t *testing.T) {
        	t.Run("small", func(t *testing.T) {
        		if got := sub.Twice(2); got != 4 {
        			t.Errorf("Twice(2) = %d, want 4", got)
        		}
        	})
        }

        func TestTwiceZero(t *testing.T) {
        	if sub.Twice(0) != 0 {
        		t.Fatal("Twice(0)")
        	}
        }
        """,
    "solution.patch": """\
        --- a/calc.go
        +++ b/calc.go
        @@ -1,7 +1,7 @@
         package calc
         
         // Add returns a + b.
        -func Add(a, b int) int { return a - b }
        +func Add(a, b int) int { return a + b }
         
         // Neg returns -a.
         func Neg(a int) int { return -a }
        """,
    "task.toml": """\
        id = "go-calc"
        language = "go"
        statement = "sub.Twice(2) returns 0 instead of 4: calc.Add subtracts."
        visible_tests = ["calc_test.go"]
        hidden_tests = ["sub/sub_test.go"]
        protected_paths = []
        reference_patch = "solution.patch"
        fail_to_pass = ["sub/sub_test.go::TestTwice"]
        pass_to_pass = ["calc_test.go::TestNeg", "sub/sub_test.go::TestTwiceZero"]

        [environment]
        import_path = "example.com/calc"
        packages = []
        """,
}


@pytest.fixture(scope="module")
def calc(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks") / "go-calc"
    for name, text in CALC.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return load_task(root)


def calc_with(add: str) -> dict[str, bytes]:
    text = textwrap.dedent(CALC["repo/calc.go"]).replace("func Add(a, b int) int { return a - b }", add)
    return {"calc.go": text.encode()}


def test_untouched_fails_and_the_reference_passes_with_records_and_canaries(calc):
    needs_go()
    untouched = grade(calc, {}, isolation="bwrap")
    assert untouched.canaries and not untouched.canary and not untouched.integrity, untouched.output[-3000:]
    assert untouched.tests == {"sub/sub_test.go::TestTwice": "failed", "calc_test.go::TestNeg": "passed",
                               "sub/sub_test.go::TestTwiceZero": "passed"}
    assert "Twice(2) = 0, want 4" in untouched.output and not untouched.resolved
    fixed = grade(calc, reference_changes(calc), isolation="bwrap")
    assert not fixed.canary and not fixed.integrity and not fixed.tampered, fixed.output[-3000:]
    assert set(fixed.tests.values()) == {"passed"} and fixed.resolved, fixed.tests


def test_a_wrong_fix_fails_its_test(calc):
    needs_go()
    result = grade(calc, calc_with("func Add(a, b int) int { return a * b }"), isolation="bwrap")
    assert result.run_ok and not result.canary and not result.integrity, result.output[-3000:]
    assert result.tests["sub/sub_test.go::TestTwice"] == "passed"  # 2 * 2 == 4 ...
    assert result.tests["sub/sub_test.go::TestTwiceZero"] == "passed"
    wrong = grade(calc, calc_with("func Add(a, b int) int { return a + b + 1 }"), isolation="bwrap")
    assert wrong.tests == {"sub/sub_test.go::TestTwice": "failed", "calc_test.go::TestNeg": "passed",
                           "sub/sub_test.go::TestTwiceZero": "failed"}, wrong.output[-3000:]
    assert not wrong.canary and not wrong.resolved


def test_a_patch_that_does_not_compile_fails_its_tests_with_the_compilers_message(calc):
    needs_go()
    result = grade(calc, calc_with("func Add(a, b int) int { return a + c }"), isolation="bwrap")
    assert result.run_ok and not result.canary and not result.integrity and not result.timed_out, \
        result.output[-3000:]  # not void: the canaries ran on their own
    assert set(result.tests.values()) == {"error"} and result.fraction == 0
    assert "calc.go:4:37: undefined: c" in result.output
    assert "FAIL\texample.com/calc/sub [build failed]" in result.output


def test_a_patch_that_panics_fails_the_tests_it_reaches(calc):
    needs_go()
    result = grade(calc, calc_with("func Add(a, b int) int { var m map[int]int; m[a] = b; return a + b }"),
                   isolation="bwrap")
    assert not result.canary and not result.integrity, result.output[-3000:]
    assert result.tests == {"sub/sub_test.go::TestTwice": "failed", "calc_test.go::TestNeg": "passed",
                            "sub/sub_test.go::TestTwiceZero": "failed"}
    assert "assignment to entry in nil map" in result.output


def test_the_graders_files_keep_the_tasks_version(calc):
    """A patch that rewrites a test, adds a test file with an init, or vendors a package of its own
    is graded as if it had not: the grader keeps its files, and the audit names them."""
    needs_go()
    changes = dict(reference_changes(calc))
    changes["calc_test.go"] = b"package calc\n"
    changes["zz_test.go"] = b'package calc\n\nimport "os"\n\nfunc init() { os.Exit(0) }\n'
    changes["vendor/example.com/calc/sub/sub.go"] = b"package sub\n\nfunc Twice(a int) int { return 2 * a }\n"
    result = grade(calc, changes, isolation="bwrap")
    assert set(result.ignored) == {"calc_test.go", "zz_test.go", "vendor/example.com/calc/sub/sub.go"}
    assert set(result.tests.values()) == {"passed"}, result.output[-3000:]
    assert {f.rule for f in result.integrity} >= {"dependencies"}
    assert {f.path for f in result.integrity} >= {"calc_test.go", "zz_test.go", "vendor/example.com/calc/sub/sub.go"}


def test_the_agents_run_tests_tool_reads_records(calc):
    needs_go()
    env = gym.make("CodeRepo-v0", task=calc, isolation="bwrap")
    env.reset(seed=0)
    result = run_tool(env.unwrapped.ctx, ToolCall("run_tests", {}))
    env.close()
    assert result.records is not None, result.output[-3000:]
    assert result.records.tests.get("calc_test.go::TestNeg") == "passed"
    assert "ok  \texample.com/calc" in result.output


@pytest.mark.parametrize("isolation", ["docker"])
def test_the_docker_backend_grades_the_same(calc, isolation):
    needs_go(isolation)
    untouched = grade(calc, {}, isolation=isolation)
    assert untouched.tests["sub/sub_test.go::TestTwice"] == "failed" and not untouched.canary, untouched.output[-3000:]
    fixed = grade(calc, reference_changes(calc), isolation=isolation)
    assert fixed.resolved and not fixed.canary and not fixed.integrity, fixed.output[-3000:]
    broken = grade(calc, calc_with("func Add(a, b int) int { return a + c }"), isolation=isolation)
    assert broken.run_ok and not broken.canary and set(broken.tests.values()) == {"error"}, broken.output[-3000:]
    assert "undefined: c" in broken.output


# -- a task from a Debian package: go-difflib's ratio off by a half

DIFFLIB = "golang-github-pmezard-go-difflib-dev"
RATIO = "return 2.0 * float64(matches) / float64(length)"


@pytest.fixture(scope="module")
def difflib(tmp_path_factory):
    """github.com/pmezard/go-difflib from Debian, its ratio broken, its test file hidden; the graded
    ids are what the records of the untouched and the fixed repository say (as the builder does)."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        fail_or_skip("apt-get/dpkg-deb are missing: this task comes from a Debian package")
    from code_gym.tasks import debian

    if DIFFLIB not in debian.index("golang-"):
        fail_or_skip(f"apt's lists have no {DIFFLIB} (run apt-get update)")
    unpacked = debian.extract(debian.closure([DIFFLIB])[:1], tmp_path_factory.mktemp("deb") / "unpacked")
    source = unpacked / "usr/share/gocode/src/github.com/pmezard/go-difflib"
    root = tmp_path_factory.mktemp("tasks") / "go-difflib-ratio"
    shutil.copytree(source, root / "repo")
    (root / "hidden/difflib").mkdir(parents=True)
    shutil.move(root / "repo/difflib/difflib_test.go", root / "hidden/difflib/difflib_test.go")
    code = root / "repo/difflib/difflib.go"
    original = code.read_text()
    assert RATIO in original
    broken = original.replace(RATIO, RATIO.replace("2.0", "1.5"))
    code.write_text(broken)
    (root / "solution.patch").write_text("".join(unified_diff(
        broken.splitlines(keepends=True), original.splitlines(keepends=True),
        "a/difflib/difflib.go", "b/difflib/difflib.go")))
    manifest = textwrap.dedent(f"""\
        id = "go-difflib-ratio"
        language = "go"
        statement = "SequenceMatcher.Ratio is off."
        visible_tests = []
        hidden_tests = ["difflib/difflib_test.go"]
        protected_paths = []
        reference_patch = "solution.patch"
        %s
        [environment]
        import_path = "github.com/pmezard/go-difflib"
        packages = []
        """)
    (root / "task.toml").write_text(manifest % "")
    needs_go()
    task = load_task(root)
    before = grade(task, {}, isolation="bwrap", canaries=False).tests
    after = grade(task, reference_changes(task), isolation="bwrap", canaries=False).tests
    f2p = sorted(t for t, o in before.items() if o == "failed" and after.get(t) == "passed")
    p2p = sorted(t for t, o in before.items() if o == "passed" and after.get(t) == "passed")
    assert f2p and p2p, (before, after)
    (root / "task.toml").write_text(manifest % f"fail_to_pass = {json.dumps(f2p)}\npass_to_pass = {json.dumps(p2p)}\n")
    return load_task(root)


def test_a_debian_package_task_fails_untouched_and_passes_with_the_reference(difflib):
    assert "difflib/difflib_test.go::TestSequenceMatcherRatio" in difflib.fail_to_pass
    untouched = grade(difflib, {}, isolation="bwrap")
    assert untouched.canaries and not untouched.canary and not untouched.integrity, untouched.output[-3000:]
    assert all(untouched.tests[t] == "failed" for t in difflib.fail_to_pass)
    assert all(untouched.tests[t] == "passed" for t in difflib.pass_to_pass)
    fixed = grade(difflib, reference_changes(difflib), isolation="bwrap")
    assert fixed.resolved and not fixed.canary and not fixed.integrity, fixed.output[-3000:]
