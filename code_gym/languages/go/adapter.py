"""Go behind the `Language` protocol: `go test -json` runs whose per-test records come from the
grader's reader inside the sandbox (runner.py, reader/gotest.py), GOPATH-mode builds against the
Debian packages of the task's dependencies with a build cache per task (environments.py), the test
files, testdata, go.mod and vendor folders as the grader's files (files.py), canary tests in the
package of the task's tests (canary.py), a tree-sitter audit (audit.py, source.py) and the builder
for Debian's Go library packages (builder/)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from code_gym.languages.base import Canaries, FileCheck, Finding, TestRun
from code_gym.languages.go import files, runner
from code_gym.sandbox.base import Runtime
from code_gym.tasks.task import Task


class Go:
    name = "go"
    source_suffixes = (".go",)
    grammar = "go"
    run_ok = (0, 1)  # the reader's status: everything passed, something failed or did not build
    default_test_command = runner.DEFAULT_COMMAND
    image_packages = ("golang-go", "python3")  # Debian bookworm's go 1.19; the reader is Python
    grading_rules = ("any _test.go file, testdata folder, go.mod, go.sum or vendor folder, or code that games the "
                     "test run (exiting early, printing test results, patching the testing package, reading the "
                     "test files)")

    @property
    def rules(self) -> dict[str, str]:
        from code_gym.languages.go import audit
        return files.RULES | audit.RULES

    def runtime(self, task: Task) -> Runtime:
        """The Debian packages of the task's dependencies on GOPATH (bound read-only), the Go
        variables, the task's build cache and the reader."""
        from code_gym.languages.go.environments import task_runtime
        return task_runtime(task)

    def read_environment(self, table: object, where: Path) -> Any:
        from code_gym.languages.go.environments import read_environment
        return read_environment(table, where)

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return files.grader_owned(path, old, new)

    def guarded(self, path: str) -> bool:
        return files.guarded(path)

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        from code_gym.languages.go import audit
        return audit.path_rule(task, path, old, new)

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        from code_gym.languages.go import audit
        return audit.audit_file(task, path, old, new)

    # -- test runs with records
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        return runner.test_run(test_command, selected, results, known_ids=known_ids, canaries=canaries)

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
        return runner.report_outcomes(results, lookup)

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        """go lists test functions only by running the binaries (`-list` runs TestMain): the graded
        ids are task.toml's fail_to_pass and pass_to_pass (the builder writes them from records)."""
        return "exit 3"

    def collected_ids(self, output: str) -> tuple[str, ...]:
        return ()

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str = default_test_command) -> Canaries:
        from code_gym.languages.go import canary
        return canary.make(test_files, exists)

    # -- source code
    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        from code_gym.languages.go import source
        return source.enclosing_definition(data, lines)

    def static_check(self, path: str, old: bytes | None, new: bytes) -> FileCheck:
        from code_gym.languages.go import source
        return source.check_file(path, old, new)

    # -- optional capabilities
    probes = None  # behavioural probes replay Python calls; Go has none
    vote = None

    @property
    def environments(self):
        from code_gym.languages.go import environments
        return environments

    @property
    def builder(self):
        """The task builder (builder/): Debian's Go library packages -> tasks; None in an
        installation without it."""
        if importlib.util.find_spec("code_gym.languages.go.builder") is None:
            return None
        from code_gym.languages.go import builder
        return builder

    @property
    def mutations(self):
        from code_gym.languages.go.builder import mutations
        return mutations


GO = Go()
