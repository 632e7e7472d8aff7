"""Grade a final patch: pristine copy, the task's own tests restored, hidden tests added, tests run
in a fresh sandbox, per-test outcomes read from pytest's junit XML plus the exit code (text the
code under test prints cannot fake a pass)."""
from __future__ import annotations

import shlex
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from code_gym.sandbox import Limits, make_sandbox
from code_gym.task import Task
from code_gym.workspace import TEMP_PREFIX, Workspace

RESULTS_DIR = "/results"
# pytest exit codes: 0 all passed, 1 some failed; anything else (interrupted, internal error,
# usage error, no tests collected) means the run itself failed.
_RUN_OK = (0, 1)


@dataclass
class GradeResult:
    tests: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"
    exit_code: int | None
    timed_out: bool
    output: str
    duration: float
    ignored: list[str] = field(default_factory=list)  # changes to protected paths, not applied

    @property
    def passed(self) -> int:
        return sum(1 for v in self.tests.values() if v == "passed")

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def run_ok(self) -> bool:
        return not self.timed_out and self.exit_code in _RUN_OK and self.total > 0

    @property
    def resolved(self) -> bool:
        return self.run_ok and self.exit_code == 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.run_ok else 0.0

    def summary(self) -> str:
        if self.timed_out:
            return f"tests timed out after {self.duration:.1f}s"
        return f"{self.passed}/{self.total} tests passed (pytest exit code {self.exit_code})"


def _node_id(case: ET.Element) -> str:
    """pytest's node id ("tests/test_x.py::TestC::test_y[1]") from a junit testcase (xunit1 has `file`)."""
    name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
    if not file:
        return f"{classname}::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    inner = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
    return "::".join([file] + ([*inner.split(".")] if inner else []) + [name])


def parse_junit(path: Path) -> dict[str, str]:
    """Per-test outcomes by pytest node id from a junit XML file (empty when missing or unreadable)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = _node_id(case)
        tags = {child.tag for child in case}
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        # a test reported twice (e.g. failing teardown) keeps its worst outcome
        if outcomes.get(name, "passed") == "passed":
            outcomes[name] = outcome
    return outcomes


def apply_changes(task: Task, root: Path, changes: dict[str, bytes | None]) -> list[str]:
    """Write changed files into a pristine copy, skipping protected paths. Returns the skipped ones."""
    ignored = []
    for path, data in changes.items():
        if task.is_protected(path):
            ignored.append(path)
            continue
        target = root / path
        if data is None:
            if target.exists() or target.is_symlink():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        target.write_bytes(data)
    return ignored


def lay_hidden_tests(task: Task, root: Path) -> None:
    for rel in task.hidden_tests:
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.hidden_dir / rel, dest)


def grade(task: Task, changes: dict[str, bytes | None], isolation: str = "auto",
          limits: Limits | None = None, tests: tuple[str, ...] | None = None) -> GradeResult:
    """Run the task's visible and hidden tests on a pristine copy with `changes` applied."""
    started = time.monotonic()
    copy = Workspace(task.repo, strategy="copy")
    results = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX + "results-"))
    try:
        ignored = apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        sandbox = make_sandbox(isolation, copy.root, limits or Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else ())
        binds = {results: RESULTS_DIR}
        junit = f"{sandbox.inside(results, binds)}/junit.xml"
        selected = tests if tests is not None else task.visible_tests + task.hidden_tests
        command = (f"{task.test_command} -p no:cacheprovider -q -o junit_family=xunit1 "
                   f"--junitxml={shlex.quote(junit)} " + " ".join(shlex.quote(t) for t in selected))
        run = sandbox.exec(command, timeout=task.timeouts.tests, binds=binds)
        outcomes = {} if run.timed_out else parse_junit(results / "junit.xml")
        return GradeResult(outcomes, run.exit_code, run.timed_out, run.output,
                           time.monotonic() - started, ignored)
    finally:
        copy.close()
        shutil.rmtree(results, ignore_errors=True)
