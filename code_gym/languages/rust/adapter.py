"""Rust behind the `Language` protocol: `cargo test` runs whose per-test records come from the
grader's reader inside the sandbox (runner.py, reader/cargotest.py: cargo's JSON messages for the
build, libtest's JSON events for the tests), crates from Debian's librust-*-dev packages as an
offline directory source, a per-task target cache built in a sandbox, the crate's manifest, lock,
build script and integration tests as the grader's files, canaries as an integration test, a
tree-sitter audit, and the builder for Debian crates."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from code_gym.languages.base import Canaries, FileCheck, Finding, TestRun
from code_gym.languages.rust import files, runner
from code_gym.tasks.task import Task


class Rust:
    name = "rust"
    source_suffixes = (".rs",)
    grammar = "rust"
    run_ok = (0, 1)  # the reader's status: every test passed, something failed or did not build
    default_test_command = runner.DEFAULT_COMMAND
    # Debian's cargo 1.65 / rustc 1.63; rustc links through libc-dev, a virtual package debootstrap
    # cannot resolve (libc6-dev provides it); the reader is Python
    image_packages = ("cargo", "rustc", "libc6-dev", "python3")
    # (environments.IMAGE_PACKAGES: the same; the adapter's stays importable without it)
    grading_rules = ("any change to Cargo.toml, Cargo.lock, .cargo/, build.rs, the integration tests (tests/) or "
                     "benches/, or code that games the test run (exiting the process, unsafe tricks on the test "
                     "harness, reading the test files, link-section or constructor tricks, changing the tests' "
                     "#[cfg(test)] modules)")

    @property
    def rules(self) -> dict[str, str]:
        if importlib.util.find_spec("code_gym.languages.rust.audit") is None:
            return dict(files.RULES)
        from code_gym.languages.rust import audit
        return files.RULES | audit.RULES

    def runtime(self, task: Task):
        """The task's crates as a read-only offline directory source (CARGO_HOME), its target cache
        (read-only; each run copies it to CARGO_TARGET_DIR), and the reader."""
        from code_gym.languages.rust import environments
        env = environments.task_environment(task)
        return environments.runtime(env, environments.target_cache(task, env))

    def read_environment(self, table: object, where: Path) -> Any:
        from code_gym.languages.rust import environments
        return environments.read_environment(table, where)

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return files.grader_owned(path, old, new)

    def guarded(self, path: str) -> bool:
        return files.guarded(path)

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        if importlib.util.find_spec("code_gym.languages.rust.audit") is None:
            return None
        from code_gym.languages.rust import audit
        return audit.path_rule(task, path, old, new)

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        if importlib.util.find_spec("code_gym.languages.rust.audit") is None:
            return []
        from code_gym.languages.rust import audit
        return audit.audit_file(task, path, old, new)

    # -- test runs with records
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        return runner.test_run(test_command, selected, results, known_ids=known_ids, canaries=canaries)

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
        return runner.report_outcomes(results, lookup)

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        """Listing needs a build: the graded ids are task.toml's fail_to_pass and pass_to_pass (the
        builder writes them from the records of a run)."""
        return "exit 3"

    def collected_ids(self, output: str) -> tuple[str, ...]:
        return ()

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str = default_test_command) -> Canaries:
        from code_gym.languages.rust import canary
        return canary.make(test_files, exists)

    # -- source code
    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        from code_gym.languages.rust import source
        return source.enclosing_definition(data, lines)

    def static_check(self, path: str, old: bytes | None, new: bytes) -> FileCheck:
        from code_gym.languages.rust import source
        return source.check_file(path, old, new)

    # -- optional capabilities
    probes = None
    vote = None

    @property
    def environments(self):
        from code_gym.languages.rust import environments
        return environments

    @property
    def builder(self):
        if importlib.util.find_spec("code_gym.languages.rust.builder") is None:
            return None
        from code_gym.languages.rust import builder
        return builder

    @property
    def mutations(self):
        if importlib.util.find_spec("code_gym.languages.rust.builder") is None:
            return None
        from code_gym.languages.rust.builder import mutations
        return mutations


RUST = Rust()
