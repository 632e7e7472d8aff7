"""Rust tasks end to end through `grade`: a crate with no dependency and a Debian crate (semver,
with serde in its environment) built into task folders here, graded with records and canaries in
bubblewrap (and the small one in Docker): the untouched crate fails what it must, the reference
passes everything, a wrong fix fails its tests, a patch that does not compile fails them with the
compiler's message in the run's output (never a void run), and the agent's run_tests tool reads
the records in an episode.

Needs Debian's cargo and rustc (and, for semver, apt's lists and the Debian mirror): without them
these tests skip, and in CI (CI=true) they fail instead. The Docker test needs an image with cargo
(`code-gym image build` adds it)."""
from __future__ import annotations

import difflib
import shutil
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

from code_gym.actions.parse import ToolCall
from code_gym.actions.tools import run_tool
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.languages.rust import environments
from code_gym.tasks.task import TaskError, load_task
from sandbox_backends import IN_CI, require

ADDER_LIB = """\
/// The sum of `a` and `b`.
pub fn add(a: i64, b: i64) -> i64 {
    a - b
}

/// Twice `a`.
pub fn double(a: i64) -> i64 {
    a * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles() {
        assert_eq!(double(4), 8);
    }
}
"""
ADDER_TESTS = """\
use adder::{add, double};

#[test]
fn adds() {
    assert_eq!(add(2, 3), 5);
}

#[test]
fn doubles_a_sum() {
    assert_eq!(double(add(1, 0)), 2);
}
"""
FIXED = ADDER_LIB.replace("    a - b\n", "    a + b\n")
WRONG = ADDER_LIB.replace("    a - b\n", "    a * b\n")
BROKEN = ADDER_LIB.replace("    a - b\n", "    a + \n")


def _unavailable(why: str):
    if IN_CI:
        pytest.fail(f"CI must run the Rust grading tests: {why}")
    pytest.skip(why)


def _patch(rel: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}")
    return f"diff --git a/{rel} b/{rel}\n" + "".join(lines)


def _task(folder: Path, toml: str, patch: str):
    (folder / "hidden").mkdir(exist_ok=True)
    (folder / "fix.patch").write_text(patch)
    (folder / "task.toml").write_text(textwrap.dedent(toml))
    return load_task(folder)


@pytest.fixture(scope="module")
def adder(tmp_path_factory):
    if not (Path(environments.CARGO).is_file() and Path(environments.RUSTC).is_file()):
        _unavailable("Debian's cargo and rustc are not installed (scripts/setup.sh installs them)")
    folder = tmp_path_factory.mktemp("tasks") / "adder"
    repo = folder / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "Cargo.toml").write_text('[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2018"\n')
    (repo / "src" / "lib.rs").write_text(ADDER_LIB)
    (repo / "tests" / "basic.rs").write_text(ADDER_TESTS)
    environments.generate_lockfile(repo, environments.environment(environments.RustSpec()))
    return _task(folder, """
        id = "adder"
        language = "rust"
        statement = "add subtracts its arguments instead of adding them"
        visible_tests = ["tests/basic.rs"]
        hidden_tests = []
        reference_patch = "fix.patch"
        fail_to_pass = ["tests/basic.rs::adds"]
        pass_to_pass = ["tests/basic.rs::doubles_a_sum", "src/lib.rs::tests::doubles"]
        """, _patch("src/lib.rs", ADDER_LIB, FIXED))


SEMVER_BUG = ("            true => return Ordering::Greater,", "            true => return Ordering::Less,")


@pytest.fixture(scope="module")
def semver(tmp_path_factory):
    """Debian's semver crate with a prerelease comparison turned around, its serde (an optional
    dependency cargo resolves all the same) in the environment."""
    if not (Path(environments.CARGO).is_file() and Path(environments.RUSTC).is_file()):
        _unavailable("Debian's cargo and rustc are not installed (scripts/setup.sh installs them)")
    from code_gym.tasks import debian

    scratch = tmp_path_factory.mktemp("debian")
    try:
        unpacked = debian.extract(debian.closure(["librust-semver-dev"]), scratch / "x")
        env = environments.environment(environments.RustSpec(("librust-serde-dev",)))
    except (debian.DebianError, TaskError) as error:
        _unavailable(f"the Debian librust packages cannot be fetched here: {error}")
    shipped = next((unpacked / "usr/share/cargo/registry").glob("semver-1.*"))
    folder = tmp_path_factory.mktemp("tasks") / "semver"
    repo = folder / "repo"
    shutil.copytree(shipped, repo)
    (repo / ".cargo-checksum.json").unlink()
    source = (repo / "src" / "impls.rs").read_text()
    assert source.count(SEMVER_BUG[0]) == 1, "Debian's semver changed: pick another line to break"
    (repo / "src" / "impls.rs").write_text(source.replace(*SEMVER_BUG))
    environments.generate_lockfile(repo, env)
    return _task(folder, """
        id = "semver"
        language = "rust"
        statement = "a release compares below its own prereleases"
        visible_tests = ["tests/test_version.rs"]
        hidden_tests = ["tests/test_version_req.rs"]
        reference_patch = "fix.patch"

        [environment]
        packages = ["librust-serde-dev"]
        """, _patch("src/impls.rs", source.replace(*SEMVER_BUG), source)) if _hide(repo, folder) else None


def _hide(repo: Path, folder: Path) -> bool:
    (folder / "hidden" / "tests").mkdir(parents=True)
    shutil.move(repo / "tests" / "test_version_req.rs", folder / "hidden" / "tests" / "test_version_req.rs")
    return True


def _graded(task, changes, isolation="bwrap"):
    # the audit is rust-audit's (tests/test_rust_audit.py): these runs show the runner's side
    return grade(task, changes, isolation=isolation, audit=False)


def test_the_untouched_crate_fails_the_reference_passes_and_a_wrong_fix_fails(adder):
    require("bwrap")
    untouched = _graded(adder, {})
    assert untouched.canaries and not untouched.canary and not untouched.tampered, untouched.output[-3000:]
    assert untouched.tests == {"tests/basic.rs::adds": "failed", "tests/basic.rs::doubles_a_sum": "passed",
                               "src/lib.rs::tests::doubles": "passed"}
    fixed = _graded(adder, reference_changes(adder))
    assert not fixed.canary and not fixed.tampered and fixed.resolved, (fixed.summary(), fixed.output[-3000:])
    assert set(fixed.tests.values()) == {"passed"}
    wrong = _graded(adder, {"src/lib.rs": WRONG.encode()})
    assert not wrong.canary and wrong.tests["tests/basic.rs::adds"] == "failed" and not wrong.resolved
    assert "left: `6`" in wrong.output  # libtest's message reaches the output


def test_a_patch_that_does_not_compile_fails_with_the_compilers_message(adder):
    require("bwrap")
    result = _graded(adder, {"src/lib.rs": BROKEN.encode()})
    assert not result.canary and not result.timed_out and result.exit_code == 1, (result.summary(), result.output)
    assert set(result.tests.values()) == {"error"} and result.passed == 0
    assert "expected expression" in result.output and "src/lib.rs" in result.output


def test_a_debian_crate_task_with_its_environment(semver):
    require("bwrap")
    fixed = _graded(semver, reference_changes(semver))
    assert not fixed.canary and fixed.total >= 10, (fixed.summary(), fixed.output[-3000:])
    assert set(fixed.tests.values()) <= {"passed", "skipped"} and "passed" in fixed.tests.values()
    assert any(t.startswith("tests/test_version_req.rs::") for t in fixed.tests)  # the hidden tests ran
    assert any(t.startswith("src/lib.rs::") or t.startswith("tests/test_version.rs::") for t in fixed.tests)
    untouched = _graded(semver, {})
    assert not untouched.canary, untouched.output[-3000:]
    broken = [t for t, o in untouched.tests.items() if o == "failed"]
    assert broken and all(fixed.tests[t] == "passed" for t in broken), untouched.summary()


def test_the_agents_run_tests_tool_reads_records(adder):
    require("bwrap")
    env = gym.make("CodeRepo-v0", task=adder)
    env.reset(seed=0)
    try:
        result = run_tool(env.unwrapped.ctx, ToolCall("run_tests", {}))
    finally:
        env.close()
    assert result.records is not None, result.output[-3000:]
    assert result.records.tests.get("tests/basic.rs::adds") == "failed"
    assert result.records.tests.get("tests/basic.rs::doubles_a_sum") == "passed"
    assert "test adds ... FAILED" in result.output


def test_docker_grades_a_rust_task(adder):
    require("docker")
    from code_gym.sandbox.docker import client
    from code_gym.sandbox.images import DEFAULT_IMAGE, image_packages

    held = image_packages(client(), DEFAULT_IMAGE) or set()
    missing = sorted({"cargo", "rustc", "python3"} - set(held))
    if missing:
        why = f"the image {DEFAULT_IMAGE} lacks {', '.join(missing)}: rebuild it with `code-gym image build`"
        if IN_CI:
            pytest.fail(f"CI must run the Rust Docker test: {why}")
        print(f"skipped: {why}")
        pytest.skip(why)
    untouched = _graded(adder, {}, isolation="docker")
    assert not untouched.canary and untouched.tests["tests/basic.rs::adds"] == "failed", untouched.output[-3000:]
    fixed = _graded(adder, reference_changes(adder), isolation="docker")
    assert not fixed.canary and set(fixed.tests.values()) == {"passed"}, fixed.output[-3000:]
    broken = _graded(adder, {"src/lib.rs": BROKEN.encode()}, isolation="docker")
    assert not broken.canary and set(broken.tests.values()) == {"error"} and "expected expression" in broken.output


def test_a_cold_target_cache_grades_the_patch_not_the_cached_original(adder, tmp_path, monkeypatch):
    """A grade that finds no target cache builds it itself, after the patched files were written
    into its copy: cargo goes by modification times, and the patch is older than the cache's units,
    yet the patch is what is compiled and graded."""
    require("bwrap")
    monkeypatch.setattr(environments, "caches_dir", lambda: tmp_path / "caches")
    fixed = _graded(adder, reference_changes(adder))
    assert [p.name for p in (tmp_path / "caches").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert not fixed.canary and fixed.resolved and set(fixed.tests.values()) == {"passed"}, \
        (fixed.summary(), fixed.output[-3000:])


def test_the_agents_own_cargo_test_compiles_an_edit_dated_before_the_target_cache(adder, tmp_path):
    """The cargo wrapper on an agent's PATH starts from a copy of the target cache: an edited file
    whose modification time is older than the cache (restored with its times by tar, cp -p or
    touch -d) is compiled all the same, and the untouched ones are not."""
    require("bwrap")
    from code_gym.sandbox import Limits, LocalSandbox

    env = environments.task_environment(adder)
    cache = environments.target_cache(adder, env)
    repo = tmp_path / "repo"
    shutil.copytree(adder.repo, repo)
    (repo / "src" / "lib.rs").write_text(FIXED)
    sandbox = LocalSandbox(repo, "bwrap", Limits(timeout=600, max_output=1 << 20),
                           runtime=environments.runtime(env, cache))
    own = sandbox.exec("touch -d 2001-01-01 src/lib.rs && cargo test --offline")
    assert own.exit_code == 0 and "test adds ... ok" in own.output, own.output[-3000:]
    assert str(env.bin) in sandbox.exec("command -v cargo").output
