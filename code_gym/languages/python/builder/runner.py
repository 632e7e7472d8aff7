"""Run a project's tests in the sandbox: per-test outcomes from junit XML, optionally which test
executed which line (coverage with one dynamic context per pytest node id)."""
from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from code_gym.grading import records as run_records
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.grading.grade import RESULTS_DIR
from code_gym.languages.python.junit import parse_junit
from code_gym.languages.python.environments import task_runtime
from code_gym.languages.python.runtime import python_runtime
from code_gym.sandbox import Limits, Runtime, make_sandbox
from code_gym.sandbox.records import new_nonce
from code_gym.tasks.task import Task
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.working_copy import Workspace

PLUGIN = "_code_gym_coverage"
# Loaded with `-p` inside the sandbox (plugin autoloading is off there). It switches coverage's
# context to each test's node id, then writes {file: {line: [node ids]}} as JSON, so the host reads
# plain JSON, never a database the project's code could have written.
_PLUGIN_SOURCE = '''\
import json
import os

import coverage
import pytest

_cov = coverage.Coverage(data_file=None, source=[os.getcwd()], config_file=False)


def pytest_configure(config):
    _cov.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _cov.switch_context(item.nodeid)
    yield


def pytest_unconfigure(config):
    _cov.stop()
    data = _cov.get_data()
    root = os.getcwd()
    lines = {}
    for path in data.measured_files():
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            by_line = data.contexts_by_lineno(path)
            lines[rel] = {str(n): sorted(c for c in ctx if c) for n, ctx in by_line.items()}
    with open(OUTPUT, "w") as fh:
        json.dump(lines, fh)
'''

Coverage = dict[str, dict[int, set[str]]]  # file -> line -> node ids of the tests that ran it


@dataclass
class SuiteRun:
    outcomes: dict[str, str]  # node id -> "passed" | "failed" | "error" | "skipped"
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str

    @property
    def ok(self) -> bool:
        """The run itself worked (tests may have failed)."""
        return not self.timed_out and self.exit_code in (0, 1) and bool(self.outcomes)

    def not_passing(self, tests) -> list[str]:
        return [t for t in tests if self.outcomes.get(t) != "passed"]


def _read_coverage(path: Path) -> Coverage:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    coverage: Coverage = {}
    for file, lines in raw.items() if isinstance(raw, dict) else ():
        if isinstance(lines, dict):
            coverage[file] = {int(n): {t for t in ids if isinstance(t, str)}
                              for n, ids in lines.items() if str(n).isdecimal() and isinstance(ids, list)}
    return coverage


def _outcomes(stream: bytes | None, nonce: str, junit: Path) -> dict[str, str]:
    """Per-test outcomes by pytest's own node ids, as the grader reads them: from the records its
    plugin streamed (code_gym.grading.records). The junit XML only where no stream came: its node ids
    are rebuilt from (file, classname, name), which misnames a test inherited from another file's
    class (itsdangerous: test_timed.py's TestTimedSerializer(TestSerializer) reads as
    test_serializer.py::test_x), so a task listing such ids fails the grader's run of its reference."""
    records = run_records.read(stream or b"", nonce)
    if records.started and records.outcomes:
        return records.outcomes
    return parse_junit(junit)


def run_tests(root: Path, test_command: str, selected: list[str] | tuple[str, ...], timeout: float,
              isolation: str = "auto", repeat: int = 1, coverage: bool = False,
              runtime: Runtime | None = None) -> tuple[list[SuiteRun], Coverage]:
    """Run `selected` (files or node ids) with pytest in a sandbox on `root`, `repeat` times in a
    row in the same folder (a test that leaves state behind fails its rerun), with the project's
    environment `runtime` (None: code-gym's own Python). With `coverage`, also returns which
    test ran which line; the plugin file is written into `root`."""
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("build")))
    try:
        sandbox = make_sandbox(isolation, root, Limits(timeout=timeout), runtime=runtime or python_runtime())
        binds = {results: RESULTS_DIR}
        inside = sandbox.inside(results, binds)
        extra = ""
        if coverage:
            (root / f"{PLUGIN}.py").write_text(f"OUTPUT = {inside + '/coverage.json'!r}\n{_PLUGIN_SOURCE}")
            extra = f"-p {PLUGIN} "
        runs = []
        for i in range(repeat):
            junit = results / f"junit-{i}.xml"
            command = (f"{test_command} -p no:cacheprovider -q -o junit_family=xunit1 {extra}"
                       f"--junitxml={shlex.quote(f'{inside}/{junit.name}')} " + " ".join(shlex.quote(t) for t in selected))
            nonce = new_nonce()
            run = sandbox.exec(command, timeout=timeout, binds=binds, records=nonce)
            runs.append(SuiteRun({} if run.timed_out else _outcomes(run.records, nonce, junit), run.exit_code,
                                run.timed_out, run.duration, run.output))
        return runs, _read_coverage(results / "coverage.json") if coverage else {}
    finally:
        shutil.rmtree(results, ignore_errors=True)


def run_reference(task: Task, changes: dict[str, bytes | None], reruns: int, isolation: str = "auto") -> list[SuiteRun]:
    """The task's visible and hidden tests on its repo with `changes` applied, laid out as the
    grader does; then, in the same folder, its FAIL_TO_PASS tests again until they have run
    `reruns` times in all."""
    copy = Workspace(task.repo, strategy="copy")
    try:
        apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        timeout = task.timeouts.tests
        env = task_runtime(task)
        runs, _ = run_tests(copy.root, task.test_command, task.visible_tests + task.hidden_tests, timeout, isolation,
                            runtime=env)
        if reruns > 1 and not runs[0].timed_out:
            runs += run_tests(copy.root, task.test_command, task.fail_to_pass, timeout, isolation, reruns - 1,
                              runtime=env)[0]
        return runs
    finally:
        copy.close()
