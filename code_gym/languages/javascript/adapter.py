"""JavaScript behind the `Language` protocol: node's test runner, mocha, jest and tape runs whose
per-test records come from a reporter or driver the grader lays (runners.py, reporters/), the
test frameworks' configuration and package.json's test fields as the grader's files, a
tree-sitter audit, canaries in each runner's syntax, node_modules per dependency set, and the
builder for npm packages."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from code_gym.languages.base import Canaries, Finding, TestRun
from code_gym.languages.javascript import files, runners
from code_gym.languages.javascript.environments import task_environment
from code_gym.sandbox.base import Runtime
from code_gym.tasks.task import Task, TaskError


class JavaScript:
    name = "javascript"
    source_suffixes = (".js", ".cjs", ".mjs", ".jsx")
    grammar = "javascript"
    run_ok = (0, 1)  # the runs are normalised: all passed, something failed (runners.py)
    default_test_command = "node --test"
    image_packages = ("nodejs",)  # Debian bookworm's: node 18 (the reporters run on 18 and 20)
    grading_rules = ("any package.json test fields (scripts, dependencies, jest/mocha settings), test runner "
                     "configuration, node_modules, or code that games the test run (exiting early, exit handlers, "
                     "patching assert or the test framework, require-cache or module-loader tricks, reading the "
                     "test files, patching built-in prototypes)")

    @property
    def rules(self) -> dict[str, str]:
        from code_gym.languages.javascript import audit
        return audit.RULES

    def runtime(self, task: Task) -> Runtime:
        """node_modules of the task's package.json (none when it declares no dependency) on NODE_PATH,
        its resolve hook for ES modules in NODE_OPTIONS, its programs on PATH, and the records reporter."""
        env = task_environment(task)
        if env is None:
            return Runtime(reporter=runners.JsReporter(), packages=self.image_packages)
        modules = str(env.node_modules)
        return Runtime(folders=(env.folder,), path=(f"{modules}/.bin",),
                       env=(("NODE_PATH", modules), ("NODE_OPTIONS", f"--import={env.esm_hook.as_uri()}")),
                       reporter=runners.JsReporter(), packages=self.image_packages)

    def read_environment(self, table: object, where: Path) -> Any:
        """A JavaScript environment is the project's package.json itself: task.toml names none."""
        if table is not None:
            raise TaskError(f"{where}: [environment] is not read for JavaScript tasks: the environment is built from "
                            "the repository's package.json (dependencies, devDependencies) and package-lock.json")
        return None

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return files.grader_owned(path, old, new)

    def guarded(self, path: str) -> bool:
        return files.guarded(path)

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        from code_gym.languages.javascript import audit
        return audit.path_rule(task, path, old, new)

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        from code_gym.languages.javascript import audit
        return audit.audit_file(task, path, old, new)

    # -- test runs with records
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        return runners.test_run(test_command, selected, results, known_ids=known_ids, canaries=canaries)

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
        return runners.report_outcomes(results, lookup)

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        """No runner lists its tests without running them: the ids come from the records of a run
        (task.toml's fail_to_pass / pass_to_pass, which the builder writes)."""
        return "exit 3"

    def collected_ids(self, output: str) -> tuple[str, ...]:
        return ()

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str = default_test_command) -> Canaries:
        from code_gym.languages.javascript import canary
        return canary.make(test_files, exists, runners.runner_of(test_command))

    # -- source code
    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        from code_gym.languages.javascript import source
        return source.enclosing_definition(data, lines)

    def static_check(self, path: str, old: bytes | None, new: bytes):
        from code_gym.languages.javascript import source
        return source.check_file(path, old, new)

    # -- optional capabilities
    probes = None  # behavioural probes replay Python calls; JavaScript has none yet
    vote = None

    @property
    def environments(self):
        from code_gym.languages.javascript import environments
        return environments

    @property
    def builder(self):
        from code_gym.languages.javascript import builder
        return builder

    @property
    def mutations(self):
        from code_gym.languages.javascript.builder import mutations
        return mutations


JAVASCRIPT = JavaScript()
