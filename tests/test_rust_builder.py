"""The Rust builder (code_gym.languages.rust.builder): a crate's manifest read into its Debian
packages (dev, optional and platform dependencies Debian lacks or no test names left out, with the
features that name them), its test targets and test-only files, the batch sources; and a hand-made
crate built end to end in the sandbox (cargo, bubblewrap), whose tasks' gates are known: a change
that does not compile is rejected, the accepted tasks list the right tests and validate."""
from __future__ import annotations

import textwrap
import threading
import tomllib
from pathlib import Path

import pytest
from sandbox_backends import IN_CI

from code_gym.grading.builder import Candidate, Change
from code_gym.languages.rust.builder import BuildOptions, build_tasks, expand_sources
from code_gym.languages.rust.builder import pipeline
from code_gym.languages.rust.builder.batch import source_key
from code_gym.languages.rust.builder.mutations import functions
from code_gym.languages.rust.builder.project import (dependencies, dump_cargo_toml, named_in, open_project,
                                                     resolve_packages, files_of_test_code, targets_with_tests, without)
from code_gym.tasks import debian
from code_gym.tasks.task import load_task


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


MANIFEST = """\
[package]
name = "gauge"
version = "0.1.0"
edition = "2018"

[dependencies.serde]
version = "1.0"
optional = true

[dependencies.memchr]
version = "2"
default-features = false
features = ["std"]

[dev-dependencies]
criterion = "0.3"
quickcheck = { version = "9.9" }

[target."cfg(windows)".dependencies.winthing]
version = "0.1"

[features]
default = ["std"]
std = ["memchr/std", "serde?/std"]
derive = ["serde"]
"""


def _package(name: str, version: str, provides: tuple[str, ...] = ()) -> debian.Package:
    return debian.Package(name, version, "amd64", f"pool/{name}.deb", (),
                          tuple(debian.Relation(p, "=", version) for p in provides))


INDEX = debian.Index([
    _package("librust-serde-dev", "1.0.152-1", ("librust-serde+std-dev", "librust-serde+default-dev")),
    _package("librust-memchr-dev", "2.5.0-1", ("librust-memchr+std-dev", "librust-memchr+default-dev")),
    _package("librust-criterion-dev", "0.3.6-4"),
    _package("librust-quickcheck-dev", "1.0.3-1"),
], "librust-")


def test_dependencies_of_every_table():
    deps = {d.key: d for d in dependencies(tomllib.loads(MANIFEST))}
    assert set(deps) == {"serde", "memchr", "criterion", "quickcheck", "winthing"}
    assert deps["serde"].optional and deps["serde"].droppable
    assert not deps["memchr"].default_features and deps["memchr"].features == ("std",)
    assert deps["criterion"].kind == "dev-dependencies" and deps["criterion"].requirement == "0.3"
    assert deps["winthing"].table == ("target", "cfg(windows)", "dependencies") and deps["winthing"].droppable


def test_packages_with_features_and_what_is_left_out():
    code = "use quickcheck::Arbitrary;\nfn f() { memchr::memchr(b'a', b\"x\"); }\n"
    names, dropped, why = resolve_packages(tomllib.loads(MANIFEST), INDEX, test_code=code)
    # serde for itself, its default features and the `std` the crate's feature asks of it
    assert names == ["librust-serde-dev", "librust-memchr-dev"]
    assert {d.key for d in dropped} == {"criterion", "quickcheck", "winthing"}
    assert why["criterion"] == "no test or source file names it"
    assert "quickcheck 9.9" in why["quickcheck"]  # named, but Debian has only 1.0
    with pytest.raises(Exception, match="memchr"):
        resolve_packages(tomllib.loads(MANIFEST.replace('"2"', '"3"')), INDEX, test_code=code)


def test_left_out_dependencies_leave_the_manifest_and_its_features():
    manifest = tomllib.loads(MANIFEST)
    dropped = [d for d in dependencies(manifest) if d.key in ("serde", "criterion", "winthing")]
    trimmed = without(manifest, dropped)
    assert set(trimmed["dependencies"]) == {"memchr"} and set(trimmed["dev-dependencies"]) == {"quickcheck"}
    assert trimmed["features"] == {"default": ["std"], "std": ["memchr/std"], "derive": []}
    assert trimmed["target"]["cfg(windows)"]["dependencies"] == {}
    text = dump_cargo_toml(trimmed)
    assert tomllib.loads(text) == trimmed
    assert '[target."cfg(windows)".dependencies]' in text


def test_named_in_reads_paths_uses_and_macros():
    assert named_in("use pretty_assertions::assert_eq;", "pretty-assertions")
    assert named_in("#[macro_use] extern crate lazy_static;", "lazy_static")
    assert named_in("let x = rand::random::<u8>();", "rand")
    assert not named_in("let operand = 1; // random", "rand")


def test_targets_and_test_only_files(tmp_path):
    root = _write(tmp_path / "crate", {
        "Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
        "src/lib.rs": "mod parse;\n#[cfg(test)]\nmod tests;\npub fn f() -> u8 { 1 }\n",
        "src/parse.rs": "pub fn p() -> u8 {\n    2\n}\n#[cfg(test)]\nmod t {\n    #[test]\n    fn p() {}\n}\n",
        "src/tests.rs": "mod helpers;\n#[test]\nfn f() {}\n",
        "src/tests/helpers.rs": "pub fn h() {}\n",
        "src/extra.rs": "#![cfg(test)]\nfn x() {}\n",
        "tests/api.rs": "#[test]\nfn api() {}\n",
        "tests/common/mod.rs": "pub fn setup() {}\n",
        "tests/nothing.rs": "fn main() {}\n",
    })
    src = ["src/extra.rs", "src/lib.rs", "src/parse.rs", "src/tests.rs", "src/tests/helpers.rs"]
    assert files_of_test_code(root, src) == {"src/tests.rs", "src/tests/helpers.rs", "src/extra.rs"}
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rs"))
    assert targets_with_tests(root, tomllib.loads((root / "Cargo.toml").read_text()), files) == ["src/lib.rs", "tests/api.rs"]


def test_batch_sources(tmp_path):
    crate = _write(tmp_path / "crates" / "one", {"Cargo.toml": "[package]\nname = \"one\"\n"})
    listing = tmp_path / "list.txt"
    listing.write_text(f"# crates\nlibrust-strsim-dev\n{crate}  # a folder\n")
    assert expand_sources([str(listing)]) == ["librust-strsim-dev", str(crate)]
    assert expand_sources([str(tmp_path / "crates")]) == [str(crate)]
    assert source_key("librust-unicode-width-dev") == "unicode-width" and source_key(str(crate)) == "one"
    with pytest.raises(Exception, match="not a file"):
        expand_sources(["no-such-thing"])


# -- a hand-made crate, built end to end

GAUGE = {
    "Cargo.toml": """\
        [package]
        name = "gauge"
        version = "0.1.0"
        edition = "2018"
        """,
    "src/lib.rs": """\
        //! Small numeric helpers.

        pub mod stats;

        /// Clamps `x` into `[lo, hi]`.
        pub fn clamp(x: i64, lo: i64, hi: i64) -> i64 {
            if x < lo {
                return lo;
            }
            if x > hi {
                return hi;
            }
            x
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn clamps() {
                assert_eq!(clamp(5, 0, 3), 3);
                assert_eq!(clamp(-1, 0, 3), 0);
                assert_eq!(clamp(2, 0, 3), 2);
            }
        }
        """,
    "src/stats.rs": """\
        /// Counts the values of `xs` at least `floor`.
        pub fn count_at_least(xs: &[i64], floor: i64) -> usize {
            let mut n = 0;
            for x in xs {
                if *x >= floor {
                    n += 1;
                }
            }
            n
        }

        /// The mean of `xs`, rounded down; zero for none.
        pub fn mean(xs: &[i64]) -> i64 {
            if xs.is_empty() {
                return 0;
            }
            let total: i64 = xs.iter().sum();
            total / xs.len() as i64
        }
        """,
    "tests/stats.rs": """\
        use gauge::stats::*;

        #[test]
        fn counts() {
            assert_eq!(count_at_least(&[1, 5, 7, 5], 5), 3);
        }

        #[test]
        fn means() {
            assert_eq!(mean(&[2, 4, 9]), 5);
            assert_eq!(mean(&[]), 0);
        }
        """,
}


def _sandboxed_cargo() -> str | None:
    if not Path("/usr/bin/cargo").is_file():
        return "Debian's cargo is not installed (/usr/bin/cargo)"
    from code_gym.sandbox.local import available_isolation
    if "bwrap" not in available_isolation():
        return "bubblewrap does not run here: the crate's code runs only in the sandbox"
    return None


NOT_HERE = _sandboxed_cargo()
needs_cargo = pytest.mark.skipif(NOT_HERE is not None and not IN_CI, reason=NOT_HERE or "")  # CI: run (and fail)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("rust-builder")
    crate = _write(root / "gauge", GAUGE)
    report = build_tasks(crate, root / "out", BuildOptions(max_candidates=6, multi_ratio=0.5, progress=False,
                                                           reruns=2))
    return crate, report


@needs_cargo
def test_a_crate_builds_into_tasks(built):
    _, report = built
    manifest = report.manifest
    assert manifest["baseline"]["test_targets"] == ["src/lib.rs", "tests/stats.rs"]
    assert manifest["baseline"]["tests"] == 3
    assert report.tasks, report.summary()
    for task in report.tasks:
        assert task.language == "rust" and task.test_command == "cargo test"
        assert task.fail_to_pass and set(task.fail_to_pass) <= {"src/lib.rs::tests::clamps", "tests/stats.rs::counts",
                                                                "tests/stats.rs::means"}
        assert "src/lib.rs" not in task.visible_tests  # unit tests live in the sources
        hidden = {t.split("::")[0] for t in task.fail_to_pass if t.startswith("tests/")}
        assert set(task.hidden_tests) == hidden
        assert not (task.repo / "Cargo.lock").read_text().count("[[package]]") - 1  # the crate alone
        assert task.environment.packages == ()
        assert "src/lib.rs:" not in task.statement  # no panic place
    multi = [t for t in manifest["tasks"] if t["regions"] > 1]
    assert len(multi) == manifest["multi_region"]
    assert all(t["id"].count("-plus-") for t in multi)


@needs_cargo
def test_a_task_validates_with_the_grader(built):
    from code_gym.grading.gates import validate_task

    _, report = built
    task = load_task(report.tasks[0].root)
    verdict = validate_task(task, runs=2)
    assert verdict.ok, verdict.problems


@needs_cargo
def test_changes_that_do_not_compile_change_nothing_or_crash_are_rejected(tmp_path):
    crate = _write(tmp_path / "gauge", GAUGE)
    options = BuildOptions(progress=False)
    project = pipeline.open_project(crate, tmp_path / "work")
    runtime, _ = pipeline._runtime(project)
    slots = threading.BoundedSemaphore(1)
    baseline = pipeline._baseline(project, runtime, options, slots)
    runs = pipeline._Runs(project, baseline, runtime, options, slots)
    text = (project.root / "src/stats.rs").read_text()
    fn = next(f for f in functions("src/stats.rs", text) if f.qualname == "mean")
    broken = Change(fn, "swap-arguments", text.replace("total / xs.len() as i64", "total / xs.len()"), 6, ())
    outcome = pipeline._evaluate(runs, Candidate("broken", (broken,), baseline.passed), tmp_path / "staging")
    assert outcome.result.gate == "fails" and "does not compile" in outcome.result.reason
    same = Change(fn, "off-by-one", text.replace("let total: i64", "let  total: i64"), 5, ())
    outcome = pipeline._evaluate(runs, Candidate("same", (same,), baseline.passed), tmp_path / "staging")
    assert outcome.result.gate == "fails" and "no test fails" in outcome.result.reason
    # endless recursion overflows the stack: the binary aborts, and which of its tests had finished is chance
    endless = Change(fn, "flip-comparison", text.replace("if xs.is_empty() {", "if xs.is_empty() && mean(xs) > 0 {"), 4, ())
    outcome = pipeline._evaluate(runs, Candidate("endless", (endless,), baseline.passed), tmp_path / "staging")
    assert outcome.result.gate == "fails" and "test binary died" in outcome.result.reason, outcome.result
