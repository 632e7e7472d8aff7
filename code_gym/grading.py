"""Grade a final patch so that the patch cannot grade itself.

- The changed files are written into a pristine copy of the task's repository, except test files,
  protected paths, conftest files, pytest configuration and interpreter start-up hooks: those keep
  the task's version (`apply_changes`).
- The hidden tests are added, so they exist only in this copy.
- The tests run in a fresh sandbox with pytest plugin autoloading off; per-test outcomes come from
  pytest's junit XML and the exit code, never from printed text.
- The graded tests are known before the run (the task's FAIL_TO_PASS/PASS_TO_PASS ids, else the ids
  pytest collects with the reference solution applied): a test missing from the junit XML (its file
  failed to collect, the run crashed or timed out) counts as an error.
- Test files, conftest and configuration files must be untouched after the run (inode, size,
  mtime and ctime); code that rewrites them while the tests run voids the run.
- The integrity audit (`code_gym.integrity`) runs on the changes before the tests; its findings
  travel with the result and outrank the test verdict (see `code_gym.rewards`).
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shlex
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from code_gym import integrity
from code_gym.integrity import CONFTEST, PYTEST_CONFIGS, STARTUP_HOOKS, Finding, grader_owned, original
from code_gym.sandbox import Limits, make_sandbox
from code_gym.task import Task, TaskError
from code_gym.hostfs import owned_prefix, read_entry, walk
from code_gym.workspace import Workspace

RESULTS_DIR = "/results"
# pytest exit codes: 0 all passed, 1 some failed; anything else (interrupted, internal error,
# usage error, no tests collected) means the run itself failed.
_RUN_OK = (0, 1)
_GUARDED_NAMES = frozenset({CONFTEST, "setup.cfg", "pyproject.toml"}) | PYTEST_CONFIGS | STARTUP_HOOKS


@dataclass
class GradeResult:
    tests: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"
    exit_code: int | None
    timed_out: bool
    output: str
    duration: float
    ignored: list[str] = field(default_factory=list)  # changes the grader did not apply (task's version kept)
    integrity: list[Finding] | None = None  # audit findings; None when the audit was off
    tampered: list[str] = field(default_factory=list)  # guarded files changed while the tests ran
    whole_run: bool = True  # the graded tests are every test that ran, so exit code 0 is required

    @property
    def passed(self) -> int:
        return sum(1 for v in self.tests.values() if v == "passed")

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def run_ok(self) -> bool:
        return not self.timed_out and not self.tampered and self.exit_code in _RUN_OK and self.total > 0

    @property
    def resolved(self) -> bool:
        """Every graded test passed (the test verdict alone; the audit is `violation`)."""
        return self.run_ok and self.passed == self.total and (self.exit_code == 0 or not self.whole_run)

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.run_ok else 0.0

    @property
    def violation(self) -> bool:
        return bool(self.integrity)

    def summary(self) -> str:
        if self.timed_out:
            text = f"tests timed out after {self.duration:.1f}s"
        elif self.tampered:
            text = f"test files changed during the run ({', '.join(self.tampered[:3])}): run void"
        else:
            text = f"{self.passed}/{self.total} tests passed (pytest exit code {self.exit_code})"
        if self.integrity:
            rules = sorted({f.rule for f in self.integrity})
            text += f"; integrity audit failed: {len(self.integrity)} finding(s) ({', '.join(rules)})"
        return text


def _node_id(case: ET.Element) -> str:
    """pytest's node id ("tests/test_x.py::TestC::test_y[1]") from a junit testcase (xunit1 has `file`)."""
    name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
    if not file:
        return f"{classname}::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    inner = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
    return "::".join([file] + ([*inner.split(".")] if inner else []) + [name])


def _junit_address(node_id: str) -> tuple[str, str]:
    """(classname, name) that pytest's junit XML gives the test `node_id` (its mangle_test_address)."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".").removesuffix(".py")
    return ".".join(names[:-1]), names[-1] + bracket + params


def parse_junit(path: Path, expected: tuple[str, ...] | None = None) -> dict[str, str]:
    """Per-test outcomes by pytest node id from a junit XML file (empty when missing or unreadable).
    With `expected` node ids, a testcase is matched by its (classname, name), which pytest derives
    from the node id; its `file` attribute names where the test function's code lives, which need
    not be the test file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    by_address = {_junit_address(t): t for t in expected or ()}
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = by_address.get((case.get("classname", ""), case.get("name", ""))) or _node_id(case)
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
    """Write changed files into a pristine copy, except test files, protected paths and the files
    the grader owns (conftest, pytest configuration, start-up hooks). Returns the skipped paths."""
    ignored = []
    for path, data in changes.items():
        if task.is_protected(path) or grader_owned(path, original(task, path), data):
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


_COLLECTED: dict[tuple, tuple[str, ...] | None] = {}


def reference_test_ids(task: Task, isolation: str = "auto") -> tuple[str, ...] | None:
    """The node ids pytest collects from the visible and hidden tests with the reference solution
    applied, or None when that collection fails. Cached per process, and on disk (under
    `code_gym.loaders.cache_root()`) by a hash of everything that decides them."""
    key = (task.id, str(task.root), str(task.repo), task.test_command, task.visible_tests, task.hidden_tests,
           hashlib.sha1(task.reference_patch.encode()).hexdigest())
    if key not in _COLLECTED:
        stored = _stored_ids_path(task)
        try:
            _COLLECTED[key] = tuple(json.loads(stored.read_text()))
        except (OSError, ValueError):
            ids = _COLLECTED[key] = _collect_reference(task, isolation)
            if ids is not None:
                _store(stored, json.dumps(list(ids)))
    return _COLLECTED[key]


def _stored_ids_path(task: Task) -> Path:
    from code_gym.loaders.folder import cache_root  # the loaders' cache; imported late to keep grading light

    digest = hashlib.sha1()
    for text in (task.test_command, *task.visible_tests, "|", *task.hidden_tests, "|", task.reference_patch):
        digest.update(text.encode() + b"\0")
    for root in (task.repo, task.hidden_dir):
        for path in sorted(walk(root)):
            digest.update(path.encode() + b"\0" + read_entry(root / path) + b"\0")
    return cache_root() / "test-ids" / f"{digest.hexdigest()}.json"


def _store(path: Path, text: str) -> None:
    """Write atomically (concurrent graders may store the same file); a read-only cache is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as fh:
            fh.write(text)
        os.replace(fh.name, path)
    except OSError:
        pass


def _collect_reference(task: Task, isolation: str) -> tuple[str, ...] | None:
    from code_gym.validate import reference_changes  # validate imports this module

    try:
        changes = reference_changes(task)
    except TaskError:
        return None
    copy = Workspace(task.repo, strategy="copy")
    try:
        apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        sandbox = make_sandbox(isolation, copy.root, Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else (), image=task.image)
        files = " ".join(shlex.quote(t) for t in task.visible_tests + task.hidden_tests)
        try:
            run = sandbox.exec(f"{task.test_command} --collect-only -q -p no:cacheprovider {files}",
                               timeout=task.timeouts.tests)
        finally:
            sandbox.close()
    finally:
        copy.close()
    if run.timed_out or run.exit_code != 0:
        return None
    ids = tuple(line.strip() for line in run.output.splitlines() if "::" in line and not line.startswith(" "))
    return ids or None


def graded_test_ids(task: Task, tests: tuple[str, ...] | None = None,
                    isolation: str = "auto") -> tuple[tuple[str, ...] | None, bool]:
    """(the node ids a grade counts, whether they are every test that runs). None: unknown before
    the run, so the junit XML decides. `tests` selects test files or node ids to run."""
    if tests is not None and tests and all("::" in t for t in tests):
        return tuple(tests), True
    declared = task.fail_to_pass + task.pass_to_pass
    ids = declared or reference_test_ids(task, isolation)
    if ids is None:
        return None, True
    if tests is not None:
        ids = tuple(t for t in ids if t.split("::")[0] in tests)
    return ids, not declared


def _guarded(task: Task, root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Stat keys of the files the tests' verdict depends on: tests, protected paths, conftest,
    configuration and start-up hooks. ctime cannot be set back by the code under test."""
    keys = {}
    for path, st in walk(root).items():
        name = posixpath.basename(path)
        if task.is_protected(path) or name in _GUARDED_NAMES or name.endswith(".pth"):
            keys[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return keys


def grade(task: Task, changes: dict[str, bytes | None], isolation: str = "auto",
          limits: Limits | None = None, tests: tuple[str, ...] | None = None, audit: bool = True) -> GradeResult:
    """Run the task's visible and hidden tests (or `tests`: files or node ids) on a pristine copy
    with `changes` applied. With `audit`, the integrity findings come with the result (the
    tests run either way, so a result shows what a violating patch would have scored)."""
    started = time.monotonic()
    findings = integrity.audit(changes, task) if audit else None
    expected, whole_run = graded_test_ids(task, tests, isolation)
    copy = Workspace(task.repo, strategy="copy")
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("results")))
    try:
        ignored = apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        sandbox = make_sandbox(isolation, copy.root, limits or Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else (), image=task.image)
        binds = {results: RESULTS_DIR}
        junit = f"{sandbox.inside(results, binds)}/junit.xml"
        selected = tests if tests is not None else task.visible_tests + task.hidden_tests
        # with the graded ids known, a file that fails to collect fails only its own tests
        keep_going = "--continue-on-collection-errors " if expected is not None else ""
        command = (f"{task.test_command} -p no:cacheprovider -q -o junit_family=xunit1 {keep_going}"
                   f"--junitxml={shlex.quote(junit)} " + " ".join(shlex.quote(t) for t in selected))
        before = _guarded(task, copy.root)
        try:
            run = sandbox.exec(command, timeout=task.timeouts.tests, binds=binds)
        finally:
            sandbox.close()
        after = _guarded(task, copy.root)
        tampered = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        outcomes = {} if run.timed_out else parse_junit(results / "junit.xml", expected)
        if expected is not None:
            outcomes = {t: outcomes.get(t, "error") for t in expected}
        if tampered:
            outcomes = {t: "error" for t in outcomes}
        return GradeResult(outcomes, run.exit_code, run.timed_out, run.output, time.monotonic() - started,
                           ignored, findings, tampered, whole_run)
    finally:
        copy.close()
        shutil.rmtree(results, ignore_errors=True)
