"""Rust environments and the files a Rust grader owns: task.toml's [environment] read and refused
with what is wrong, Debian's librust-*-dev packages unpacked once into an offline directory
source (cargo resolves a Cargo.lock against it, a missing crate is named), CARGO_HOME read-only in
the sandbox, and the per-task target cache: built once in bubblewrap (a proc macro and a build
script run there, within the sandbox's 4 GB address-space limit), reused by runs, which compile
only the crate.

Needs Debian's cargo and rustc, and apt's lists with the librust packages (downloads from the
Debian mirror): without them these tests skip, and in CI (CI=true) they fail instead."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from code_gym.languages.rust import environments, files, runner
from code_gym.sandbox import Limits, LocalSandbox
from code_gym.tasks.task import Task, TaskError, load_task
from sandbox_backends import IN_CI, require

WHERE = Path("task.toml")


def _unavailable(why: str):
    if IN_CI:
        pytest.fail(f"CI must run the Rust environment tests: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def toolchain():
    if not (Path(environments.CARGO).is_file() and Path(environments.RUSTC).is_file()):
        _unavailable("Debian's cargo and rustc are not installed (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def serde_env(toolchain):
    """The environment of librust-serde-dev and librust-serde-derive-dev (proc-macro2, quote, syn ...)."""
    try:
        return environments.environment(environments.RustSpec(("librust-serde-derive-dev", "librust-serde-dev")))
    except TaskError as error:
        _unavailable(f"the Debian librust packages cannot be fetched here: {error}")


def write(root: Path, files_: dict[str, str]) -> Path:
    for rel, text in files_.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# -- task.toml

def test_environment_table_names_librust_packages():
    read = environments.read_environment
    assert read(None, WHERE) == environments.RustSpec()
    assert read({"packages": ["librust-serde-dev", "librust-itoa-dev", "librust-serde-dev"]}, WHERE).packages == \
        ("librust-itoa-dev", "librust-serde-dev")
    for bad, why in (({"crates": []}, "unknown key"), ({"packages": "librust-serde-dev"}, "list"),
                     ({"packages": ["serde"]}, "not a Debian Rust library"), ([], "table"),
                     ({"packages": ["librust-serde-dev; rm -rf /"]}, "not a Debian Rust library")):
        with pytest.raises(TaskError, match=why) as caught:
            read(bad, WHERE)
        assert "task.toml" in str(caught.value)


# -- the grader's files

@pytest.mark.parametrize("path, rule", [
    ("Cargo.toml", "cargo-config"), ("Cargo.lock", "cargo-lock"), ("build.rs", "build-script"),
    (".cargo/config.toml", "cargo-config"), ("rust-toolchain.toml", "cargo-config"), ("tests/parse.rs", "rust-tests"),
    ("tests/common/mod.rs", "rust-tests"), ("benches/speed.rs", "rust-tests"), ("target/debug/x", "build-output"),
    ("src/nested/Cargo.toml", "cargo-config"), ("src/.cargo/config", "cargo-config"),
    ("src/lib.rs", None), ("src/build.rs", None), ("src/bin/tool.rs", None), ("examples/demo.rs", None),
])
def test_the_grader_keeps_the_manifest_lock_build_script_and_integration_tests(path, rule):
    assert files.grader_owned(path, None, b"x") == rule
    assert rule is None or rule in files.RULES


def test_runs_must_leave_the_build_files_and_tests_alone():
    assert all(files.guarded(p) for p in ("Cargo.toml", "build.rs", ".cargo/config.toml", "tests/a.rs", "benches/b.rs"))
    assert not any(files.guarded(p) for p in ("src/lib.rs", "src/main.rs", "README.md", "Cargo.lock"))


# -- environments from Debian packages

def test_the_environment_is_a_directory_source_made_once(serde_env):
    env = serde_env
    assert any(p.startswith("librust-serde-dev=") for p in env.packages)
    assert any(c.startswith("serde-1.") for c in env.crates) and any(c.startswith("syn-1.") for c in env.crates)
    for crate in env.crates:  # cargo refuses a directory source whose crates lack their checksum file
        assert (env.registry / crate / ".cargo-checksum.json").is_file()
    config = (env.cargo_home / "config.toml").read_text()
    assert 'replace-with = "code-gym-debian"' in config and str(env.registry) in config and "offline = true" in config
    again = environments.environment(environments.RustSpec(("librust-serde-dev", "librust-serde-derive-dev")))
    assert again.cached and again.folder == env.folder


def test_an_unknown_package_is_named(toolchain):
    with pytest.raises(environments.EnvironmentBuildError, match="librust-no-such-crate-at-all-dev"):
        environments.environment(environments.RustSpec(("librust-no-such-crate-at-all-dev",)))


def test_cargo_lock_is_resolved_offline_and_a_missing_crate_is_named(serde_env, tmp_path):
    repo = write(tmp_path / "ok", {"Cargo.toml": """
        [package]
        name = "uses-serde"
        version = "0.1.0"
        edition = "2018"

        [dependencies]
        serde = { version = "1", optional = true }

        [dev-dependencies]
        serde_derive = "1"
        """, "src/lib.rs": ""})
    environments.generate_lockfile(repo, serde_env)
    lock = (repo / "Cargo.lock").read_text()
    assert 'name = "serde"' in lock and 'name = "serde_derive"' in lock and 'name = "syn"' in lock
    missing = write(tmp_path / "missing", {"Cargo.toml": """
        [package]
        name = "needs-more"
        version = "0.1.0"

        [dev-dependencies]
        regex-but-not-here = "1"
        """, "src/lib.rs": ""})
    with pytest.raises(environments.EnvironmentBuildError, match="regex-but-not-here") as caught:
        environments.generate_lockfile(missing, serde_env)
    assert caught.value.package == "regex-but-not-here"


DERIVING = {
    "Cargo.toml": """
        [package]
        name = "derives"
        version = "0.1.0"
        edition = "2018"

        [dependencies]
        serde = "1"

        [dev-dependencies]
        serde_derive = "1"
        """,
    "build.rs": 'fn main() { println!("cargo:rustc-env=BUILT_BY=build-script"); }\n',
    "src/lib.rs": """
        pub fn built_by() -> &'static str {
            env!("BUILT_BY")
        }
        """,
    "tests/derive.rs": """
        use serde_derive::Serialize;

        #[derive(Serialize)]
        struct Point { x: i32 }

        fn assert_serialize<T: serde::Serialize>(_: &T) {}

        #[test]
        fn derives_and_builds() {
            assert_serialize(&Point { x: 1 });
            assert_eq!(derives::built_by(), "build-script");
        }
        """,
}


def test_the_target_cache_is_built_once_in_the_sandbox_and_runs_compile_only_the_crate(serde_env, tmp_path):
    """A proc macro (serde_derive: syn, quote, proc-macro2) and a build script run in the cache's
    sandboxed build, under the address-space limit graded runs have; a run from the cache compiles
    the crate alone, one without it every dependency."""
    require("bwrap")
    task_dir = tmp_path / "task"
    repo = write(task_dir / "repo", DERIVING)
    (task_dir / "hidden").mkdir()
    environments.generate_lockfile(repo, serde_env)
    (task_dir / "fix.patch").write_text("")
    (task_dir / "task.toml").write_text(textwrap.dedent("""
        id = "task"
        language = "rust"
        statement = "x"
        visible_tests = ["tests/derive.rs"]
        hidden_tests = []
        reference_patch = "fix.patch"

        [environment]
        packages = ["librust-serde-dev", "librust-serde-derive-dev"]
        """))
    task = load_task(task_dir)
    root = tmp_path / "caches"
    before = sorted(str(p) for p in serde_env.folder.rglob("*"))
    cache = environments.target_cache(task, serde_env, root=root)
    assert cache is not None and not cache.cached and cache.ok, cache
    assert environments.CACHE_MEMORY == Limits().memory_bytes  # the limit a graded run has
    assert (cache.target / "debug").is_dir() and cache.size > 0
    assert environments.target_cache(task, serde_env, root=root).cached

    def graded_like(with_cache):
        runtime = environments.runtime(serde_env, cache if with_cache else None)
        sandbox = LocalSandbox(repo, "bwrap", Limits(timeout=900, max_output=1 << 20), runtime=runtime)
        return sandbox.exec(runner.test_run(task.test_command, ("tests/derive.rs",), "").command, records="n")

    warm = graded_like(True)
    assert warm.exit_code == 0, warm.output[-3000:]
    assert "Compiling serde_derive" not in warm.output and "Compiling syn" not in warm.output
    assert "test derives_and_builds ... ok" in warm.output
    cold = graded_like(False)
    assert cold.exit_code == 0 and "Compiling syn" in cold.output, cold.output[-3000:]
    # an agent's own cargo call in its shell starts from the cache too (the cargo wrapper on PATH)
    runtime = environments.runtime(serde_env, cache)
    own = LocalSandbox(repo, "bwrap", Limits(timeout=900, max_output=1 << 20), runtime=runtime).exec(
        "command -v cargo && cargo test --offline")
    assert own.exit_code == 0 and str(serde_env.bin) in own.output, own.output[-3000:]
    assert "Compiling syn" not in own.output and "test derives_and_builds ... ok" in own.output
    # CARGO_HOME and the registry are read-only to the runs: nothing was written there
    assert sorted(str(p) for p in serde_env.folder.rglob("*")) == before


def test_crates_sharing_an_environment_get_their_own_target_cache_even_when_hidden_dir_is_the_repo(
        toolchain, tmp_path):
    """The cache's key hashes the repository's files in every case: a task whose hidden_dir is its
    repository (no hidden folder) does not share another crate's target cache."""
    env = environments.environment(environments.RustSpec())
    keys = {}
    for name in ("one", "two"):
        repo = write(tmp_path / name, {"Cargo.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\n',
                                       "src/lib.rs": f"pub fn {name}() {{}}\n"})
        task = Task(id=name, statement="x", repo=repo, hidden_dir=repo, visible_tests=(), hidden_tests=(),
                    protected_paths=(), reference_patch="", test_command="cargo test", language="rust")
        keys[name] = environments.cache_key(task, env)
    assert keys["one"] != keys["two"]
    (tmp_path / "two" / "src" / "lib.rs").write_text("pub fn one() {}\n")
    (tmp_path / "two" / "Cargo.toml").write_text('[package]\nname = "one"\nversion = "0.1.0"\n')
    task = Task(id="two", statement="x", repo=tmp_path / "two", hidden_dir=tmp_path / "two", visible_tests=(),
                hidden_tests=(), protected_paths=(), reference_patch="", test_command="cargo test", language="rust")
    assert environments.cache_key(task, env) == keys["one"]  # the same files: the same cache
