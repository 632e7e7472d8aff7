"""Rust test runs: the `cargo test` command the grader takes, and the reader's records from real
cargo and libtest runs in the bubblewrap sandbox (passed, failed, ignored; unit tests of the
library and the binaries, integration tests; a library or a test that does not compile; a test
binary that exits early, aborts, forges libtest's JSON lines or swaps another binary; the
reader's own descriptors out of the tests' reach; RUSTC_BOOTSTRAP in the test binaries only).

Needs Debian's cargo and rustc (/usr/bin/cargo 1.65, rustc 1.63): without them these tests skip,
and in CI (CI=true) they fail instead."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from code_gym import languages
from code_gym.grading import records
from code_gym.languages.rust import environments, runner
from code_gym.sandbox import Limits, LocalSandbox
from sandbox_backends import IN_CI, require

NONCE = "n0nce"
MANIFEST = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2018"\n\n[dependencies]\n'


@pytest.fixture(scope="module")
def toolchain():
    if not (Path(environments.CARGO).is_file() and Path(environments.RUSTC).is_file()):
        why = "Debian's cargo and rustc are not installed (scripts/setup.sh installs them)"
        if IN_CI:
            pytest.fail(f"CI must run the Rust tests: {why}")
        pytest.skip(why)
    return environments.environment(environments.RustSpec())


def crate(tmp_path: Path, files: dict[str, str], name: str = "demo") -> Path:
    repo = tmp_path / "repo"
    for rel, text in {"Cargo.toml": MANIFEST.format(name=name), **files}.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return repo


def run(repo: Path, env, selected: tuple[str, ...] = (), command: str = "cargo test",
        cache: environments.TargetCache | None = None) -> tuple[records.Records, object]:
    """One reader run in bubblewrap, as a graded run makes it; its records as the grader reads them."""
    require("bwrap")
    if not (repo / "Cargo.lock").exists():
        environments.generate_lockfile(repo, env)
    sandbox = LocalSandbox(repo, "bwrap", Limits(timeout=600, max_output=1 << 20),
                           runtime=environments.runtime(env, cache))
    plan = runner.test_run(command, selected, "")
    result = sandbox.exec(plan.command, records=NONCE)
    return records.read(result.records or b"", NONCE), result


LIB = """
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 2), 4);
    }

    #[test]
    fn wrong() {
        assert_eq!(add(2, 2), 5, "two and two");
    }

    #[test]
    #[ignore]
    fn slow() {}
}
"""
MAIN = """
fn main() {
    println!("{}", demo::add(1, 2));
}

#[test]
fn in_the_binary() {
    assert_eq!(demo::add(1, 1), 2);
}
"""
INTEGRATION = """
use demo::add;

#[test]
fn from_outside() {
    assert_eq!(add(-1, 1), 0);
}
"""


# -- the command

def test_the_command_takes_cargo_and_libtest_options_and_refuses_the_graders():
    parsed = runner.parse_command("cargo test --features serde --no-default-features -- --test-threads 2 --skip slow")
    assert parsed.options == ["--features", "serde", "--no-default-features"]
    assert parsed.libtest == ["--test-threads", "2", "--skip", "slow"]
    for bad in ("cargo build", "pytest", "cargo test --no-run", "cargo test --target-dir /tmp/x", "cargo test --lib",
                "cargo test --config build.rustflags=[]", "cargo test -Zbuild-std", "cargo test some_filter",
                "cargo test -- --format json", "cargo test -- --nocapture", "cargo test -- --logfile x",
                "cargo test --manifest-path ../Cargo.toml", "RUSTC_BOOTSTRAP=1 cargo test"):
        with pytest.raises(ValueError):
            runner.parse_command(bad)
    with pytest.raises(ValueError):
        languages.get("rust").test_run("cargo test --doc", (), "")


def test_selection_is_by_target_root_and_by_exact_name():
    assert runner.selection(("tests/a.rs", "tests/b.rs::x", "tests/b.rs::y", "tests/a.rs::z")) == \
        (["tests/a.rs", "tests/b.rs"], {"tests/b.rs": ["x", "y"]})
    assert runner.selection(()) == ([], None)


# -- records from real runs

def test_records_of_the_library_binary_and_integration_tests(tmp_path, toolchain):
    repo = crate(tmp_path, {"src/lib.rs": LIB, "src/main.rs": MAIN, "tests/outside.rs": INTEGRATION})
    stream, result = run(repo, toolchain)
    assert not stream.problems and stream.end == 1 and result.exit_code == 1, result.output[-3000:]
    assert stream.outcomes == {
        "src/lib.rs::tests::adds": "passed", "src/lib.rs::tests::wrong": "failed",
        "src/lib.rs::tests::slow": "skipped", "src/main.rs::in_the_binary": "passed",
        "tests/outside.rs::from_outside": "passed"}
    assert "two and two" in stream.messages["src/lib.rs::tests::wrong"]
    assert "test tests::wrong ... FAILED" in result.output and "two and two" in result.output


def test_a_selected_integration_test_runs_with_the_unit_tests_and_names_select_exactly(tmp_path, toolchain):
    repo = crate(tmp_path, {"src/lib.rs": LIB, "tests/outside.rs": INTEGRATION,
                            "tests/other.rs": "#[test]\nfn elsewhere() {}\n"})
    stream, result = run(repo, toolchain, ("tests/outside.rs",))
    assert set(stream.outcomes) == {"tests/outside.rs::from_outside", "src/lib.rs::tests::adds",
                                    "src/lib.rs::tests::wrong", "src/lib.rs::tests::slow"}, result.output[-3000:]
    stream, result = run(repo, toolchain, ("src/lib.rs::tests::adds", "tests/other.rs"))
    assert stream.outcomes == {"src/lib.rs::tests::adds": "passed", "tests/other.rs::elsewhere": "passed"}
    assert stream.end == 0 and result.exit_code == 0, result.output[-3000:]
    stream, result = run(repo, toolchain, ("src/lib.rs::tests::adds", "src/lib.rs::tests::wrong"))
    assert stream.outcomes == {"src/lib.rs::tests::adds": "passed", "src/lib.rs::tests::wrong": "failed"}
    assert stream.end == 1 and result.exit_code == 1


def test_a_library_that_does_not_compile_fails_every_target_with_the_compilers_message(tmp_path, toolchain):
    repo = crate(tmp_path, {"src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a + \n}\n",
                            "tests/outside.rs": INTEGRATION})
    stream, result = run(repo, toolchain)
    assert not stream.problems and stream.end == 1 and result.exit_code == 1
    assert set(stream.outcomes) == {"src/lib.rs", "tests/outside.rs"}
    assert "expected expression" in stream.messages["src/lib.rs"]
    assert "the library did not build" in stream.messages["tests/outside.rs"]
    assert "expected expression" in result.output and "src/lib.rs:3" in result.output
    assert result.output.count("expected expression, found `}`") == 1  # the lib and its unit tests: one error


UNIT_TESTS_BROKEN = """
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn typed() {
        let wrong: u8 = "not a number";
        assert_eq!(wrong, 0);
    }
}
"""


@pytest.mark.parametrize("command", ["cargo test", "cargo test -j 1"])
def test_unit_tests_that_do_not_compile_fail_alone_while_the_library_builds(tmp_path, toolchain, command):
    """The library's unit-test build (the lib compiled with --test) has the library's root as its
    target too: its errors fail the unit tests (`src/lib.rs::*`), not the integration tests and
    binaries, which link the library built without --test."""
    repo = crate(tmp_path, {"src/lib.rs": UNIT_TESTS_BROKEN, "src/main.rs": MAIN, "tests/outside.rs": INTEGRATION})
    stream, result = run(repo, toolchain, command=command)
    assert not stream.problems and stream.end == 1 and result.exit_code == 1, result.output[-3000:]
    assert stream.outcomes == {"src/lib.rs": "error", "tests/outside.rs::from_outside": "passed",
                               "src/main.rs::in_the_binary": "passed"}, result.output[-3000:]
    assert "mismatched types" in stream.messages["src/lib.rs"]
    assert "the library did not build" not in stream.messages["src/lib.rs"]
    assert result.output.count("error[E0308]: mismatched types") == 1, result.output[-3000:]


FAKE_CARGO = """#!/usr/bin/env python3
import json, os, sys
root = os.getcwd()
lib_broken = os.environ["FAKE_LIB_BROKEN"] == "1"
def target(src, kind):
    return {"kind": [kind], "name": "demo", "src_path": os.path.join(root, src)}
def say(message):
    print(json.dumps({"manifest_path": os.path.join(root, "Cargo.toml"), **message}))
def error(src, text):
    say({"reason": "compiler-message", "target": target(src, "lib"),
         "message": {"level": "error", "message": text, "rendered": "error: " + text + "\\n"}})
if "--lib" in sys.argv:  # the unit tests fail first; cargo stops before the library (as -j 1 may)
    error("src/lib.rs", "in the unit tests" if not lib_broken else "in the library")
    sys.exit(101)
if lib_broken:
    error("src/lib.rs", "in the library")
    sys.exit(101)
say({"reason": "compiler-artifact", "target": target("src/lib.rs", "lib"), "profile": {"test": False},
     "executable": None})
say({"reason": "compiler-artifact", "target": target("tests/outside.rs", "test"), "profile": {"test": True},
     "executable": os.path.join(root, "outside-exe")})
"""


@pytest.mark.parametrize("lib_broken", [False, True])
def test_errors_under_the_librarys_root_are_the_unit_tests_when_the_library_builds_without_them(
        tmp_path, monkeypatch, lib_broken):
    """When cargo stops before building the library (its messages do not say whether an error
    under src/lib.rs is the library's or its unit tests'), the reader builds the rest without the
    unit tests: a library that builds then leaves only the unit tests failed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cargotest", runner.HERE / "reader" / "cargotest.py")
    cargotest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cargotest)
    root = tmp_path.resolve()
    fake = root / "fake-cargo"
    fake.write_text(FAKE_CARGO)
    fake.chmod(0o755)
    monkeypatch.chdir(root)
    monkeypatch.setenv("FAKE_LIB_BROKEN", "1" if lib_broken else "0")
    library = cargotest.Target({"name": "demo", "kind": ["lib"], "src_path": str(root / "src/lib.rs")}, str(root))
    outside = cargotest.Target({"name": "outside", "kind": ["test"], "src_path": str(root / "tests/outside.rs")},
                               str(root))
    build = cargotest.build_targets([str(fake), "test"], [], [library, outside], library, str(root))
    if lib_broken:
        assert build.failed["src/lib.rs"] == "error: in the library\n"
        assert build.failed["tests/outside.rs"].startswith("the library did not build")
        assert "outside" not in " ".join(build.executables)
    else:
        assert build.failed == {"src/lib.rs": "error: in the unit tests\n"}
        assert build.executables == {"tests/outside.rs": str(root / "outside-exe")}


def test_an_integration_test_that_does_not_compile_fails_alone(tmp_path, toolchain):
    repo = crate(tmp_path, {"src/lib.rs": LIB, "tests/outside.rs": INTEGRATION,
                            "tests/broken.rs": "use demo::missing;\n#[test]\nfn uses_it() { missing(); }\n"})
    stream, result = run(repo, toolchain, ("tests/broken.rs", "tests/outside.rs"))
    assert stream.outcomes["tests/broken.rs"] == "error"
    assert "missing" in stream.messages["tests/broken.rs"]
    assert stream.outcomes["tests/outside.rs::from_outside"] == "passed", result.output[-3000:]
    assert stream.outcomes["src/lib.rs::tests::adds"] == "passed"


def test_a_std_only_test_still_runs_when_the_library_does_not_compile(tmp_path, toolchain):
    """What keeps the canaries in a run whose patch does not build: a test file that does not use the
    library is compiled on its own."""
    canary = languages.get("rust").canaries(("tests/outside.rs",), lambda p: False)
    repo = crate(tmp_path, {"src/lib.rs": "pub fn broken( {}\n", "tests/outside.rs": INTEGRATION,
                            canary.path: canary.source})
    stream, result = run(repo, toolchain, ("tests/outside.rs", canary.path))
    assert stream.outcomes["tests/outside.rs"] == "error"
    got = {t: o for t, o in stream.outcomes.items() if canary.is_canary(t)}
    assert got == canary.expected, result.output[-3000:]


def test_a_binary_that_exits_early_fails_the_tests_it_did_not_report(tmp_path, toolchain):
    lib = """
    #[cfg(test)]
    mod tests {
        #[test]
        fn a_passes() {}
        #[test]
        fn b_exits() { std::process::exit(0); }
        #[test]
        fn c_never_runs() {}
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib})
    stream, result = run(repo, toolchain, command="cargo test -- --test-threads 1")
    assert stream.outcomes == {"src/lib.rs::tests::a_passes": "passed", "src/lib.rs::tests::b_exits": "failed",
                               "src/lib.rs::tests::c_never_runs": "failed"}, result.output[-3000:]
    assert "exited 0 before libtest's summary" in stream.messages["src/lib.rs::tests::c_never_runs"]
    assert stream.end == 1 and result.exit_code == 1


def test_a_binary_that_aborts_fails_the_tests_it_did_not_report(tmp_path, toolchain):
    lib = """
    #[cfg(test)]
    mod tests {
        #[test]
        fn a_passes() {}
        #[test]
        fn b_aborts() { std::process::abort(); }
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib})
    stream, result = run(repo, toolchain, command="cargo test -- --test-threads 1")
    assert stream.outcomes == {"src/lib.rs::tests::a_passes": "passed", "src/lib.rs::tests::b_aborts": "failed"}
    assert "signal 6" in stream.messages["src/lib.rs::tests::b_aborts"], result.output[-3000:]


def test_forged_libtest_lines_do_not_pass_a_test(tmp_path, toolchain):
    """A test that writes libtest's JSON to the process's stdout itself (past libtest's capture): a
    test reported twice fails, a name the binary does not hold is no record."""
    lib = r"""
    #[cfg(test)]
    mod tests {
        use std::io::Write;
        #[test]
        fn a_forges() {
            let mut out = std::io::stdout();
            out.write_all(b"{ \"type\": \"test\", \"name\": \"tests::b_fails\", \"event\": \"ok\" }\n").unwrap();
            out.write_all(b"{ \"type\": \"test\", \"name\": \"tests::ghost\", \"event\": \"ok\" }\n").unwrap();
            out.flush().unwrap();
        }
        #[test]
        fn b_fails() { panic!("really fails"); }
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib})
    stream, result = run(repo, toolchain, command="cargo test -- --test-threads 1")
    assert stream.outcomes == {"src/lib.rs::tests::a_forges": "failed", "src/lib.rs::tests::b_fails": "failed"}, \
        result.output[-3000:]
    assert "tests::ghost is not a test of this binary" in result.output
    assert "not on its own" in stream.messages["src/lib.rs::tests::a_forges"]  # run alone, it reports another test


def test_passes_forged_before_a_crash_are_run_again_alone(tmp_path, toolchain):
    lib = r"""
    #[cfg(test)]
    mod tests {
        use std::io::Write;
        #[test]
        fn a_really_passes() {}
        #[test]
        fn b_forges_then_aborts() {
            let mut out = std::io::stdout();
            out.write_all(b"{ \"type\": \"test\", \"name\": \"tests::c_fails\", \"event\": \"ok\" }\n").unwrap();
            out.flush().unwrap();
            std::process::abort();
        }
        #[test]
        fn c_fails() { panic!("really fails"); }
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib})
    stream, result = run(repo, toolchain, command="cargo test -- --test-threads 1")
    assert stream.outcomes == {"src/lib.rs::tests::a_really_passes": "passed",
                               "src/lib.rs::tests::b_forges_then_aborts": "failed",
                               "src/lib.rs::tests::c_fails": "failed"}, result.output[-3000:]
    assert "signal 6" in stream.messages["src/lib.rs::tests::c_fails"]


def test_a_binary_that_rewrites_another_test_binary_fails_that_target(tmp_path, toolchain):
    lib = r"""
    #[cfg(test)]
    mod tests {
        #[test]
        fn swaps() {
            let deps = std::path::Path::new(&std::env::var("CARGO_TARGET_DIR").unwrap()).join("debug/deps");
            for entry in std::fs::read_dir(deps).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                if name.starts_with("outside-") && !name.ends_with(".d") {
                    std::fs::remove_file(&path).unwrap();
                    std::fs::write(&path, "#!/bin/sh\necho '{ \"type\": \"test\", \"name\": \"from_outside\", \"event\": \"ok\" }'\n").unwrap();
                }
            }
        }
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib, "tests/outside.rs": "#[test]\nfn from_outside() { panic!(); }\n"})
    stream, result = run(repo, toolchain, ("src/lib.rs", "tests/outside.rs"))
    assert stream.outcomes["src/lib.rs::tests::swaps"] == "passed", result.output[-3000:]
    assert stream.outcomes.get("tests/outside.rs") == "error"
    assert "tests/outside.rs::from_outside" not in stream.outcomes
    assert "changed or removed" in stream.messages["tests/outside.rs"]


def test_the_tests_cannot_reach_the_readers_descriptors_and_only_they_see_rustc_bootstrap(tmp_path, toolchain):
    build = """
    fn main() {
        println!("cargo:rustc-env=SEEN_AT_BUILD={}", std::env::var("RUSTC_BOOTSTRAP").unwrap_or_default());
    }
    """
    lib = r"""
    #[cfg(test)]
    mod tests {
        #[test]
        fn reader_is_sealed() {
            let parent = std::os::unix::process::parent_id();
            for fd in 0..64 {
                let path = format!("/proc/{}/fd/{}", parent, fd);
                assert!(std::fs::read_link(&path).is_err(), "{} can be read", path);
                assert!(std::fs::OpenOptions::new().append(true).open(&path).is_err(), "{} opens", path);
            }
            assert!(std::fs::read(format!("/proc/{}/environ", parent)).is_err(), "the reader's environment");
            assert!(std::fs::read(format!("/proc/{}/mem", parent)).is_err(), "the reader's memory");
        }
        #[test]
        fn no_channel_in_the_environment() {
            assert!(std::env::var("CODE_GYM_RECORDS").is_err());
        }
        #[test]
        fn bootstrap_at_run_time_only() {
            assert_eq!(std::env::var("RUSTC_BOOTSTRAP").unwrap(), "1");
            assert_eq!(env!("SEEN_AT_BUILD"), "");
        }
    }
    """
    repo = crate(tmp_path, {"src/lib.rs": lib, "build.rs": build})
    stream, result = run(repo, toolchain)
    assert stream.outcomes == {"src/lib.rs::tests::reader_is_sealed": "passed",
                               "src/lib.rs::tests::no_channel_in_the_environment": "passed",
                               "src/lib.rs::tests::bootstrap_at_run_time_only": "passed"}, result.output[-3000:]
    assert stream.end == 0 and result.exit_code == 0


def test_a_manifest_cargo_cannot_read_ends_the_run_with_status_3(tmp_path, toolchain):
    repo = crate(tmp_path, {"src/lib.rs": LIB})
    (repo / "Cargo.lock").write_text("")
    (repo / "Cargo.toml").write_text("[package\nname = \n")
    stream, result = run(repo, toolchain)
    assert stream.end == 3 and result.exit_code == 3 and not stream.outcomes
    assert "could not read the crate's manifest" in result.output


def test_a_target_without_libtest_is_one_test_by_its_exit_status(tmp_path, toolchain):
    manifest = MANIFEST.format(name="demo") + '\n[[test]]\nname = "custom"\nharness = false\n'
    repo = crate(tmp_path, {"Cargo.toml": manifest, "src/lib.rs": LIB,
                            "tests/custom.rs": "fn main() { if demo::add(1, 1) != 3 { std::process::exit(4) } }\n"})
    stream, result = run(repo, toolchain, ("tests/custom.rs",))
    assert stream.outcomes["tests/custom.rs::main"] == "failed", result.output[-3000:]
    assert stream.messages["tests/custom.rs::main"] == "it exited 4"
    assert stream.outcomes["src/lib.rs::tests::adds"] == "passed"


def test_a_test_file_cargo_does_not_discover_runs_on_its_own_when_it_needs_only_std(tmp_path, toolchain):
    """`autotests = false`: tests/ files are no targets unless declared; the canaries still run."""
    manifest = MANIFEST.format(name="demo").replace('edition = "2018"\n', 'edition = "2018"\nautotests = false\n')
    canary = languages.get("rust").canaries(("tests/outside.rs",), lambda p: False)
    repo = crate(tmp_path, {"Cargo.toml": manifest, "src/lib.rs": LIB, "tests/outside.rs": INTEGRATION,
                            canary.path: canary.source})
    stream, result = run(repo, toolchain, ("tests/outside.rs", canary.path))
    got = {t: o for t, o in stream.outcomes.items() if canary.is_canary(t)}
    assert got == canary.expected, result.output[-3000:]
    assert not any(t.startswith("tests/outside.rs::") for t in stream.outcomes)  # it uses the library: not built alone
    assert "tests/outside.rs is not the root" in result.output


def test_only_changed_files_not_newer_than_the_target_cache_are_dated_after_it(tmp_path):
    """Cargo takes a unit as fresh while no file it read is newer: the reader dates after the cache
    exactly the files whose bytes are not the cache's and whose time is not later than it. A file
    with the cache's bytes keeps its time, whatever it is (the grader checks its own files' times
    after the run), and so does a new file (no unit of the cache read it)."""
    import hashlib
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("cargotest", runner.HERE / "reader" / "cargotest.py")
    reader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reader)
    built = 2_000_000_000 * 10**9
    texts = {"same_old.rs": "a", "same_new.rs": "b", "changed_old.rs": "c", "changed_new.rs": "d",
             "resized_old.rs": "e"}
    sources = {"built_ns": built, "files": {
        rel: [len(text), hashlib.sha256(text.encode()).hexdigest(), built - 10**9] for rel, text in texts.items()}}
    now = {"same_old.rs": "a", "same_new.rs": "b", "changed_old.rs": "C", "changed_new.rs": "D",
           "resized_old.rs": "longer", "new.rs": "n"}
    times = {"same_old.rs": built - 5 * 10**9, "same_new.rs": built + 10**9, "changed_old.rs": built,
             "changed_new.rs": built + 10**9, "resized_old.rs": built - 10**9, "new.rs": built - 10**9}
    for rel, text in now.items():
        (tmp_path / rel).write_text(text)
        os.utime(tmp_path / rel, ns=(times[rel], times[rel]))
    touched, error = reader.refresh_times(str(tmp_path), sources)
    assert (touched, error) == (2, "")
    after = {rel: (tmp_path / rel).stat().st_mtime_ns for rel in now}
    assert after["changed_old.rs"] > built and after["resized_old.rs"] > built
    assert {rel: t for rel, t in after.items() if rel not in ("changed_old.rs", "resized_old.rs")} == \
        {rel: t for rel, t in times.items() if rel not in ("changed_old.rs", "resized_old.rs")}
    # the crate of a cargo call in a subfolder: the folder whose Cargo.toml is the cache's
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Cargo.toml").write_text("[package]\nname = 'other'\n")
    sources["files"]["Cargo.toml"] = [10, hashlib.sha256(b"[package]\n").hexdigest(), 0]
    assert reader.crate_root(str(tmp_path / "sub"), sources) == os.path.realpath(tmp_path)
