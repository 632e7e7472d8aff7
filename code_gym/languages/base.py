"""The language adapter: what code-gym needs to know about one language, and nothing more.

Shared code speaks of tests, records, obligations and files; a `Language` turns those into the
ecosystem's own commands and rules. Python (`code_gym.languages.python`) is the first one. The
protocol is shaped for the runners the next languages bring (checked in their docs):

- a test run streams one record per test on the grader's results channel, from inside the test
  process: a pytest plugin today; node's `--test-reporter PATH`, mocha's `--reporter PATH`, jest's
  `--reporters PATH`, a TAP reader for tape/tap, `go test -json` (test2json events) and libtest's
  `test NAME ... ok|FAILED|ignored` lines fit the same `Runtime.reporter` seam: the language lays
  a reporter where the patch cannot touch it and names it in the command's environment;
- records travel in one format (`code_gym.grading.records`): "start", one "report" per test
  phase, "collect" for a file that failed to load or build, "end" with the run's status;
- the grader's files (runner configuration, hooks, build scripts), the ecosystem's cheats (audit
  code rules) and its canary tests are the language's; what the grader does with them is not.

Data that crosses the boundary lives here: `Finding` (an integrity violation, from the audit, the
canaries or the records' cross-checks) and `Canaries` (tamper-evident tests a run carries).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the adapter's users import these themselves
    from code_gym.sandbox.base import Runtime
    from code_gym.tasks.task import Task


@dataclass(frozen=True)
class Finding:
    """One integrity violation: `path` (relative to the repository), `line` (1-based; 0 for the
    whole file), the `rule` (a key of the audit's rules) and what was found."""
    path: str
    line: int
    rule: str
    message: str

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class Canaries:
    """Canary tests for one graded run: a test file laid in the grading copy only, and the outcome
    each of its tests must have (test id -> "passed" | "failed")."""
    path: str  # the canary file, relative to the repository root
    source: str
    expected: dict[str, str] = field(default_factory=dict)

    def is_canary(self, test_id: str) -> bool:
        return test_id == self.path or test_id.startswith(self.path + "::")


@dataclass
class FileCheck:
    """The static check of one changed source file (the `static` reward): whether it compiles, why
    not, and the checker's findings its starting version did not have."""
    path: str
    compiles: bool
    error: str = ""
    new_findings: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return 1.0 / (1 + len(self.new_findings)) if self.compiles else 0.0


@dataclass(frozen=True)
class TestRun:
    """One graded test run as the language lays it out: the shell command (run in the repository
    root of the grading copy, inside the sandbox) and what it writes besides the records."""
    command: str
    report: str | None = None  # the runner's own report, inside the sandbox (pytest: junit XML)


class Language(Protocol):
    """Everything one language provides. Instances are stateless; `code_gym.languages.get` hands
    them out by name."""

    name: str  # the registry key, and `language = "..."` in task.toml
    source_suffixes: tuple[str, ...]  # files of the language (the static reward and hints read these)
    grammar: str  # credit's tree-sitter grammar for sub-diff syntax units (`credit.syntax`)
    rules: dict[str, str]  # the audit rules it adds: name -> what a finding of it means
    run_ok: tuple[int, ...]  # exit codes of a test run that ran to its end (tests may have failed)
    default_test_command: str  # task.toml's test_command when it names none
    grading_rules: str  # for the agent's prompt: the files and tricks the audit fails, in a phrase
    image_packages: tuple[str, ...]  # the Debian packages a container needs to run its commands (`code-gym image build`)

    # -- environment
    def runtime(self, task: Task) -> Runtime:
        """What a sandbox running `task`'s commands needs: the project's environment (built once per
        dependency set, cached, bound read-only), the results reporter and a warm runner if any."""
        ...

    def read_environment(self, table: object, where: Path) -> Any:
        """task.toml's [environment] table as the language's environment spec (None: the task has
        none, and runs with the language's default); TaskError naming `where` when malformed."""
        ...

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        """The rule that makes the grader keep the task's version of `path` (runner configuration,
        start-up hooks, build scripts), whatever the task says; None when the agent may change it."""
        ...

    def guarded(self, path: str) -> bool:
        """Whether a run must leave `path` untouched (its stat key is compared before and after)."""
        ...

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        """An audit rule a change breaks by its path alone (compiled code, a shadowing module)."""
        ...

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        """Code-rule findings in a changed file that its starting version `old` lacks: every changed
        file is offered, and a file the language does not run has none."""
        ...

    # -- test runs with records (test ids read "FILE::NAME" in every language)
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        """The command that runs `selected` (files or test ids) with `test_command` (the task's) and
        the records reporter on; it may write its own report under `results` (a folder inside the
        sandbox). `known_ids`: the graded ids are known before the run, so a file that fails to load
        fails only its own tests. `canaries`: the run carries must-fail canaries, so it must not stop
        at a first failure."""
        ...

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
        """Outcomes by test id from the runner's own report in the host folder `results` (pytest:
        junit XML), for the cross-check with the records and for a run without records; `lookup`:
        the ids expected, so that the report's names are matched to them. None: the runner writes
        no report of its own (the records stand alone, checked by the canaries and the exit code)."""
        ...

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        """The command that lists the test ids of `test_files` without running them."""
        ...

    def collected_ids(self, output: str) -> tuple[str, ...]:
        """The test ids in the output of `collect_command`."""
        ...

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str) -> Canaries:
        """Fresh canary tests for one run, in a file named like the task's tests and written for the
        runner `test_command` starts; `exists(path)` tells whether a path is taken."""
        ...

    # -- optional capabilities: None where a language has none
    probes: Any  # behavioural probes: `plant`, `collect`, `record`, `probe_set` (Python: a module)
    vote: Any  # the execution vote's `generated_calls`, `probe`, `MARK`
    environments: Any  # project environments for the CLI and loaders: `project_requirements`, ...
    builder: Any  # the task builder: `build_tasks`, `build_many`, `revalidate`, `BuildOptions`, ...
    mutations: Any  # the built-in policy's wrong variants: `functions`, `mutation_sites`

    def static_check(self, path: str, old: bytes | None, new: bytes) -> FileCheck:
        """The `static` reward's check of one changed source file."""
        ...

    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        """The qualified name of the innermost function or class spanning `lines` ("" when none)."""
        ...
