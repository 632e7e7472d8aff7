"""Python behind the `Language` protocol: pytest runs with the grader's records plugin, junit XML
as the runner's own report, conftest/pytest configuration/start-up hooks as the grader's files,
the ast audit, pytest canaries, behavioural probes, virtualenvs per requirement set, and the task
builder for projects with a pytest suite."""
from __future__ import annotations

import ast
import shlex
from pathlib import Path
from typing import Any

from code_gym.languages.base import Canaries, Finding, TestRun
from code_gym.languages.python import audit, canary, files, junit, source, static
from code_gym.languages.python.environments import read_environment, task_runtime
from code_gym.languages.python.runtime import PACKAGES as IMAGE_PACKAGES
from code_gym.tasks.task import Task

JUNIT = "junit.xml"


class Python:
    name = "python"
    source_suffixes = (".py",)
    grammar = "python"
    rules = audit.RULES
    run_ok = (0, 1)  # pytest: all passed, some failed; anything else means the run itself failed
    default_test_command = "python -m pytest"
    image_packages = IMAGE_PACKAGES
    # what the agent's prompt names besides the protected paths (the audit's rules, in a sentence)
    grading_rules = ("any conftest.py, pytest configuration, or code that games the test run (skipping tests, exiting "
                     "early, patching pytest or builtins, inspecting the caller's frames, always-equal objects)")

    def runtime(self, task: Task):
        return task_runtime(task)

    def read_environment(self, table: object, where: Path):
        """task.toml's [environment] table (the project's requirements on one interpreter) as an
        `EnvSpec`, None when there is none; TaskError naming `where` when it is malformed."""
        return read_environment(table, where)

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return files.grader_owned(path, old, new)

    def guarded(self, path: str) -> bool:
        return files.guarded(path)

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return audit.path_rule(task, path, old, new)

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        return audit.audit_file(task, path, old, new)

    # -- test runs with records
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        report = f"{results}/{JUNIT}"
        # with the graded ids known, a file that fails to collect fails only its own tests
        keep_going = "--continue-on-collection-errors " if known_ids else ""
        if canaries:  # a must-fail canary must not end the session (-x / --maxfail in the task's command)
            keep_going += "--maxfail=0 "
        # --tb=short: a failing test's report (the must-fail canaries', and most tests' in a wrong
        # patch's run) costs ~5 ms less than pytest's default long tracebacks; nothing reads them
        command = (f"{test_command} -p no:cacheprovider -q --tb=short -o junit_family=xunit1 {keep_going}"
                   f"--junitxml={shlex.quote(report)} " + " ".join(shlex.quote(t) for t in selected))
        return TestRun(command, report)

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str]:
        return junit.parse_junit(results / JUNIT, lookup or None)

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        return f"{test_command} --collect-only -q -p no:cacheprovider " + " ".join(shlex.quote(t) for t in test_files)

    def collected_ids(self, output: str) -> tuple[str, ...]:
        return tuple(line.strip() for line in output.splitlines() if "::" in line and not line.startswith(" "))

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str = default_test_command) -> Canaries:
        return canary.make(test_files, exists)

    # -- behavioural probes
    @property
    def probes(self):
        from code_gym.languages.python import probes  # the harvest and replay halves: loaded when grading asks
        return probes

    # -- source code
    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        """The qualified name of the innermost function or class spanning `lines` ("" when none does)."""
        if not data or not lines:
            return ""
        try:
            tree = source.parse(data)
        except (SyntaxError, ValueError, RecursionError):
            return ""
        low, high = min(lines), max(lines)
        best, best_span = "", None

        def walk(node: ast.AST, prefix: str) -> None:
            nonlocal best, best_span
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    if start <= low and child.end_lineno >= high:
                        span = child.end_lineno - start
                        if best_span is None or span < best_span:
                            best, best_span = name, span
                    walk(child, name + ".")
                else:
                    walk(child, prefix)

        walk(tree, "")
        return best

    def static_check(self, path: str, old: bytes | None, new: bytes):
        """The `static` reward's check of one changed file (`FileCheck`): parses, compiles, and no new
        pyflakes findings."""
        return static.check_file(path, old, new)

    @property
    def vote(self):
        """The execution vote's calls and probe program (`generated_calls`, `probe`, `MARK`)."""
        from code_gym.languages.python import vote
        return vote

    @property
    def environments(self):
        """Project environments: `project_requirements`, `project_environment`, `EnvironmentBuildError`."""
        from code_gym.languages.python import environments
        return environments

    # -- the task builder and its mutations
    @property
    def builder(self):
        from code_gym.languages.python import builder  # pipeline, batch, revalidate: loaded when asked
        return builder

    @property
    def mutations(self):
        from code_gym.languages.python.builder import mutations
        return mutations


PYTHON = Python()
