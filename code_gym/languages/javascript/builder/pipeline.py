"""The builder for npm packages: a package with tests in, task folders and a manifest out. Its
shape is the Python builder's; what is shared (gates, reports, multi-region combinations, the
grader check, the batch run) is in `code_gym.grading.builder`.

1. Baseline: each test file runs on its own in the sandbox, through the adapter (the runner's
   records reporter, per-test outcomes and failure messages from the records), with V8's coverage
   on (NODE_V8_COVERAGE), so every line knows which test files ran it; then the files that pass run
   together once, as the grader runs them. A file where no test passes is left out; a test that
   does not pass in both runs is never listed (the runners cannot leave it out, so its file's other
   tests still count, and the gates check only the listed tests).
2. Candidates: for each function whose body some test file runs, its body removed (when it has a
   JSDoc comment) and a few mutations (mutations.py) whose line a test file runs.
3. Gates, each candidate in its own copy and sandbox (code_gym.grading.gates.GATES); the changed
   code runs only the test files whose coverage reaches the changed line, for at most
   SLOWDOWN_LIMIT times their baseline time (the `runtime` gate for a mutant that loops forever).
"""
from __future__ import annotations

import json
import posixpath
import shutil
import tempfile
from bisect import bisect_left, bisect_right
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from code_gym import languages
from code_gym.grading import records as run_records
from code_gym.grading.builder import BuildError, BuildReport, Candidate, Outcome, Rejection, outcome_manifest
from code_gym.grading.candidates import (CandidateOptions, NO_TEST_FAILS, broken_run, build_frame, candidate_id,
                                         changed_files, check_candidates, failing_tests, failure_messages,
                                         function_changes, in_rounds, originals, parsed_sources, reaching,
                                         reference_outcome, region_source, statement_gates, task_patch)
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.grading.grade import RESULTS_DIR
from code_gym.grading.multiregion import state
from code_gym.grading.reference import reference_changes
from code_gym.languages.javascript.builder.mutations import checker, functions, pick_mutations, remove_body
from code_gym.languages.javascript.builder.project import TEST_DIRS, EnvOptions, Project, open_project
from code_gym.languages.javascript.builder.statement import leak, parse_failures, write_multi_statement, write_statement
from code_gym.sandbox import Limits, Runtime, make_sandbox
from code_gym.sandbox.records import new_nonce
from code_gym.tasks.loaders.folder import copy_tree, task_id, write_task
from code_gym.tasks.task import Task
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.working_copy import Workspace

COVERAGE_DIR = "v8-coverage"  # in the run's results folder
MAX_JOINT_RUNS = 3  # runs of the clean files together before the baseline gives up on agreeing
# the changed code's run may take this many times its files' baseline time (at least
# MIN_CHANGED_LIMIT seconds, at most the task's timeout): a mutant that loops forever (a flipped
# loop bound) would otherwise hold a worker for the whole timeout
SLOWDOWN_LIMIT = 10.0
MIN_CHANGED_LIMIT = 10.0


@dataclass(frozen=True)
class BuildOptions(CandidateOptions):
    environment: EnvOptions = EnvOptions()  # the package's node_modules (code_gym.languages.javascript.environments)
    # stop a project once this many one-region candidates were checked and none passed the gates
    # (0: check every one): a package whose tests cannot run in the task layout fails each alike
    give_up_after: int = 12


@dataclass
class SuiteRun:
    outcomes: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"; a file that failed to load: its id
    messages: dict[str, str]  # test or file id -> the failure message its record carried
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    problems: list[str] = field(default_factory=list)  # what voids the records (a broken stream)
    lines: dict[str, set[int]] | None = None  # with coverage: repo file -> the lines that ran (None: unknown)

    @property
    def ok(self) -> bool:
        """The run itself worked (tests may have failed)."""
        return not self.timed_out and self.exit_code in languages.get("javascript").run_ok and \
            not self.problems and bool(self.outcomes)


def _line_starts(text: str) -> list[int]:
    starts, at = [], 0
    for line in text.splitlines(keepends=True):
        stripped = len(line) - len(line.lstrip())
        starts.append(at + min(stripped, max(len(line.rstrip("\r\n")) - 1, 0)))
        at += len(line)
    return starts


def _executed(functions_: list[dict], text: str) -> set[int]:
    """The 1-based lines of `text` whose first character ran, from one script's V8 block coverage:
    an offset's count is its innermost range's (ranges nest; the outer ones come first)."""
    starts = _line_starts(text)
    counts = [0] * len(starts)
    ranges = sorted(((r["startOffset"], r["endOffset"], r["count"]) for fn in functions_ for r in fn.get("ranges", ())),
                    key=lambda r: (r[0], -r[1]))
    for start, end, count in ranges:
        for i in range(bisect_left(starts, start), bisect_right(starts, end - 1)):
            counts[i] = count
    return {i + 1 for i, count in enumerate(counts) if count > 0}


def _coverage(folder: Path, root: Path, ran: tuple[str, ...]) -> dict[str, set[int]] | None:
    """Repo file -> lines that ran, from the V8 coverage files in `folder`; None when the run's test
    files do not show in them (a runner that compiles tests itself, such as jest's transforms)."""
    scripts: dict[str, list[dict]] = {}
    for path in folder.glob("*.json") if folder.is_dir() else ():
        try:
            for script in json.loads(path.read_text()).get("result", []):
                scripts.setdefault(script.get("url", ""), []).extend(script.get("functions", []))
        except (OSError, ValueError, AttributeError):
            continue
    prefix = next((url[: -len(test)] for url in scripts for test in ran
                   if url.startswith("file://") and url.endswith("/" + test)), None)
    if prefix is None:
        return None
    lines = {}
    for url, fns in scripts.items():
        rel = url[len(prefix):] if url.startswith(prefix) else None
        if rel and "node_modules/" not in rel and (root / rel).is_file():
            lines[rel] = _executed(fns, (root / rel).read_text(encoding="utf-8", errors="replace"))
    return lines


def run_suite(root: Path, test_command: str, files: list[str] | tuple[str, ...], timeout: float, runtime: Runtime,
              isolation: str = "auto", repeat: int = 1, coverage: bool = False) -> list[SuiteRun]:
    """Run the test `files` with `test_command`'s runner in a sandbox on `root`, `repeat` times in a
    row in the same folder (a test that leaves state behind fails its rerun), with the records on:
    outcomes and failure messages by test id, through the adapter as the grader reads them. With
    `coverage`, each run also tells which lines of which files ran."""
    language = languages.get("javascript")
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("build")))
    sandbox = make_sandbox(isolation, root, Limits(timeout=timeout), runtime=runtime)
    try:
        binds = {results: RESULTS_DIR}
        inside = sandbox.inside(results, binds)
        plan = language.test_run(test_command, tuple(files), inside)
        command = f"export NODE_V8_COVERAGE={inside}/{COVERAGE_DIR}; {plan.command}" if coverage else plan.command
        runs = []
        for _ in range(repeat):
            shutil.rmtree(results / COVERAGE_DIR, ignore_errors=True)
            nonce = new_nonce()
            run = sandbox.exec(command, timeout=timeout, binds=binds, records=nonce)
            outcomes, void = run_records.run_outcomes(language, run, nonce, results, ())
            lines = _coverage(results / COVERAGE_DIR, root, tuple(files)) if coverage and not run.timed_out else None
            runs.append(SuiteRun(outcomes, failure_messages(run.records, nonce), run.exit_code, run.timed_out, run.duration,
                                 run.output, [f.message for f in void], lines))
        return runs
    finally:
        sandbox.close()
        shutil.rmtree(results, ignore_errors=True)


def _file(test_id: str) -> str:
    return test_id.split("::")[0]


@dataclass(frozen=True)
class _Baseline:
    passed: frozenset[str]  # the tests listed in tasks: they pass alone and together
    clean_files: tuple[str, ...]  # test files with a passing test: the tasks' tests
    excluded: dict[str, str]  # test file -> why it is left out
    coverage: dict[str, dict[str, set[int]] | None]  # test file -> (source file -> lines it ran); None: unknown
    duration: float  # the clean files' run together
    durations: dict[str, float]  # test file -> its run alone
    not_listed: int = 0  # tests of clean files that do not pass (skipped, failing, flaky together)


def _baseline(project: Project, options: BuildOptions, slots) -> _Baseline:
    """Each test file alone under coverage (`workers` at once), then the passing files together."""
    runtime = languages.get("javascript").runtime(project.task)

    def alone(test_file: str) -> SuiteRun:
        with slots:
            copy = Workspace(project.root, strategy="copy")
            try:
                return run_suite(copy.root, project.test_command, [test_file], options.timeout, runtime,
                                 options.isolation, coverage=True)[0]
            finally:
                copy.close()

    with ThreadPoolExecutor(max(1, options.workers)) as pool:
        runs = dict(zip(project.test_files, pool.map(alone, project.test_files)))
    excluded: dict[str, str] = {}
    passed: set[str] = set()
    for test_file, run in runs.items():
        good = {t for t, o in run.outcomes.items() if o == "passed" and _file(t) == test_file and "::" in t}
        if run.timed_out:
            excluded[test_file] = f"its tests run past the {options.timeout:g}s timeout"
        elif not run.ok or not good:
            excluded[test_file] = (f"none of its {len(run.outcomes)} tests passes" if run.outcomes else
                                   f"it runs no test (exit code {run.exit_code})")
        passed |= good
    clean = [f for f in project.test_files if f not in excluded]
    duration = 0.0
    for _ in range(MAX_JOINT_RUNS):
        if not clean:
            break
        with slots:
            copy = Workspace(project.root, strategy="copy")
            try:
                [joint] = run_suite(copy.root, project.test_command, clean, 3 * options.timeout, runtime,
                                    options.isolation)
            finally:
                copy.close()
        if joint.timed_out:
            raise BuildError(f"the package's tests together did not finish within {3 * options.timeout:g}s; "
                             "raise --timeout")
        duration = joint.duration
        broken = sorted({_file(t) for t in passed if _file(t) in clean and joint.outcomes.get(t) != "passed"})
        if joint.ok and not broken:
            break
        for test_file in broken or clean:
            excluded[test_file] = "its tests pass alone but not with the others" if broken else \
                f"the test files together do not run (exit code {joint.exit_code}): {joint.output[-300:]}"
        clean = [f for f in clean if f not in excluded]
    else:
        raise BuildError("the package's test files do not agree with themselves: run together, other tests fail "
                         "each time")
    if not clean:
        raise BuildError("no test file passes on the original code: " +
                         "; ".join(f"{f}: {r}" for f, r in list(excluded.items())[:5]))
    listed = frozenset(t for t in passed if _file(t) in clean)
    total = sum(1 for f in clean for t in runs[f].outcomes if "::" in t)
    return _Baseline(listed, tuple(clean), excluded, {f: runs[f].lines for f in clean}, duration,
                     {f: runs[f].duration for f in clean}, total - len(listed))


def _covering(baseline: _Baseline, path: str, lines) -> list[str]:
    """The clean test files whose coverage reaches any of `lines` of `path` (every one whose
    coverage is unknown)."""
    return reaching(baseline.coverage, path, lines)


def _candidates(project: Project, baseline: _Baseline, options: BuildOptions) -> tuple[list[Candidate], dict]:
    """Candidates in round-robin order over functions (so a cap keeps variety), and counts of
    functions found, run by tests, and mutation sites no test runs."""
    per_function, ids = [], set()
    counts = {"found": 0, "covered": 0, "sites_not_run": 0, "unparsed_files": 0}
    covering = partial(_covering, baseline)
    sources = parsed_sources(project.root, project.source_files, functions, checker, counts)
    for path, text, fns, file_checker in sources:
        module = task_id(posixpath.splitext(path)[0].removeprefix("lib/").removeprefix("src/"))
        for fn in fns:
            counts["found"] += 1
            body = range(fn.body_lines[0], fn.body_lines[1] + 1)
            if not _covering(baseline, path, body):
                continue
            counts["covered"] += 1
            # (change, the test files that run its line)
            changes = function_changes(fn, text, options, remove_body, pick_mutations, file_checker, covering, counts)
            per_function.append([Candidate(candidate_id(project.name, module, fn.qualname, change.operator, ids),
                                           (change,), frozenset(t for t in baseline.passed if _file(t) in files))
                                 for change, files in changes])
    return in_rounds(per_function, options.max_candidates), counts


def _originals(project: Project, changes) -> dict[str, str]:
    return originals(project.root, changes)


def _test_folders(paths) -> list[str]:
    """The outermost test folders ("test/", "lib/__tests__/") holding `paths`."""
    found = set()
    for path in paths:
        parts = path.split("/")[:-1]
        depth = next((i for i, part in enumerate(parts) if part in TEST_DIRS), None)
        if depth is not None:
            found.add("/".join(parts[: depth + 1]) + "/")
    return sorted(found)


def _write_task(project: Project, baseline: _Baseline, cand: Candidate, changed: dict[str, str],
                fail_to_pass: list[str], statement: str, staging: Path, options: BuildOptions) -> Task:
    hidden = sorted({_file(t) for t in fail_to_pass})
    originals = _originals(project, cand.changes)

    def fill_repo(repo: Path) -> None:
        copy_tree(project.root, repo, lambda rel: rel in hidden)
        for path, text in changed.items():
            (repo / path).write_text(text, encoding="utf-8")

    source = region_source({"builder": "code-gym", "project": project.name}, cand.changes)
    manifest = {
        "id": cand.id,
        "kind": "feature" if all(c.kind == "feature" for c in cand.changes) else "bugfix",
        "language": "javascript",
        "statement": statement,
        "visible_tests": [f for f in baseline.clean_files if f not in hidden],
        "hidden_tests": hidden,
        "protected_paths": _test_folders(project.test_files),
        "test_command": project.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": sorted(baseline.passed - set(fail_to_pass)),
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "source": source,
    }
    return write_task(staging / cand.id, manifest, fill_repo, {f: (project.root / f).read_bytes() for f in hidden},
                      task_patch(changed, originals))


class _Runs:
    """The builder's sandbox runs of one package: `slots` bounds how many run at once across a whole
    multi-package build; `failed` remembers which listed tests failed on which code."""

    def __init__(self, project: Project, baseline: _Baseline, options: BuildOptions, slots):
        self.project, self.baseline, self.options, self.slots = project, baseline, options, slots
        self.runtime = languages.get("javascript").runtime(project.task)
        self.failed: dict[frozenset, frozenset[str]] = {}  # code state -> the listed tests that failed on it
        self.stable: set[str] = set()  # tests that passed every rerun of the original back to back

    def limit(self, test_files: list[str]) -> float:
        """How long the changed code's run of `test_files` may take (SLOWDOWN_LIMIT)."""
        usual = sum(self.baseline.durations[f] for f in test_files)
        return min(self.options.timeout, max(MIN_CHANGED_LIMIT, SLOWDOWN_LIMIT * usual))

    def changed(self, files: dict[str, str], test_files: list[str]) -> SuiteRun:
        """`test_files` on the package with `files` (path -> text) changed."""
        with self.slots:
            copy = Workspace(self.project.root, strategy="copy")
            try:
                for path, text in files.items():
                    (copy.root / path).write_text(text, encoding="utf-8")
                [run] = run_suite(copy.root, self.project.test_command, test_files, self.limit(test_files), self.runtime,
                                  self.options.isolation)
            finally:
                copy.close()
        if run.ok:
            chosen = set(test_files)
            self.failed[state(files)] = frozenset(
                t for t in self.baseline.passed if _file(t) in chosen and run.outcomes.get(t) != "passed")
        return run

    def failing(self, files: dict[str, str], test_files: list[str]) -> frozenset[str]:
        """The listed tests of `test_files` that fail on the code with `files` changed (remembered
        from an earlier run of the same code: a region's own one-region run)."""
        return failing_tests(self.failed, files, lambda: self.changed(files, test_files))

    def reference(self, task: Task) -> tuple[list[SuiteRun], frozenset[str]]:
        """The original code laid out as the grader lays it: the hidden test files, then, back to
        back in the same folder, the files of the FAIL_TO_PASS tests that no earlier candidate's
        reruns showed stable (`reruns` runs in all). Returns the runs and the tests rerun."""
        runtime = languages.get("javascript").runtime(task)  # the environment the task names, as the grader finds it
        with self.slots:
            copy = Workspace(task.repo, strategy="copy")
            try:
                apply_changes(task, copy.root, reference_changes(task))
                lay_hidden_tests(task, copy.root)
                timeout = task.timeouts.tests
                runs = run_suite(copy.root, task.test_command, task.hidden_tests, timeout, runtime, self.options.isolation)
                again = frozenset(task.fail_to_pass) - self.stable
                if self.options.reruns > 1 and not runs[0].timed_out and again:
                    files = sorted({_file(t) for t in again})
                    runs += run_suite(copy.root, task.test_command, files, timeout, runtime, self.options.isolation,
                                      self.options.reruns - 1)
                return runs, again
            finally:
                copy.close()


def _symptoms(run: SuiteRun, fail_to_pass: list[str]) -> dict:
    """The failing tests' symptoms from their messages; a test that did not run (its file failed to
    load) shows its file's load error."""
    messages = {t: run.messages.get(t) or run.messages.get(_file(t), "") for t in fail_to_pass}
    return parse_failures(messages, fail_to_pass)


def _evaluate(runs: _Runs, cand: Candidate, staging: Path, own: dict | None = None) -> Outcome:
    """Every gate on one candidate, in the order of the gates' table in docs/tasks.md."""
    project, baseline, options = runs.project, runs.baseline, runs.options
    files = sorted({_file(t) for t in cand.tests})
    changed = changed_files(cand, _originals(project, cand.changes))
    if isinstance(changed, Outcome):
        return changed
    run = runs.changed(changed, files)
    if run.timed_out:
        usual = sum(baseline.durations[f] for f in files)
        return Outcome(cand, Rejection(cand.id, "runtime", f"the changed code's tests run past {runs.limit(files):.0f}s "
                                       f"(on the original code {usual:.1f}s: an endless loop?)"))
    if not run.ok:
        return broken_run(cand, run)
    fail_to_pass = sorted(runs.failed[state(changed)])
    if not fail_to_pass:
        return Outcome(cand, Rejection(cand.id, "fails", NO_TEST_FAILS))
    symptoms = _symptoms(run, fail_to_pass)
    statement, rejected = statement_gates(
        cand, fail_to_pass, symptoms, own, write_statement=write_statement, write_multi_statement=write_multi_statement,
        leak=leak, read_originals=lambda: _originals(project, cand.changes),
        failing=lambda state_files: runs.failing(state_files, files))
    if rejected:
        return rejected
    task = _write_task(project, baseline, cand, changed, fail_to_pass, statement, staging, options)
    listed = [t for t in baseline.passed if _file(t) in task.hidden_tests]
    return reference_outcome(cand, task, runs.reference(task), fail_to_pass, symptoms, options.timeout, runs.stable,
                             listed)


def _manifest(source, project: Project, baseline: _Baseline, counts: dict, candidates: list[Candidate],
              tasks: list[Task], rejections: list[Rejection], options: BuildOptions, duration: float,
              given_up: int) -> dict:
    return {
        "source": str(source),
        "project": project.name,
        "language": "javascript",
        "test_command": project.test_command,
        "test_script": project.script,
        "options": asdict(options),
        "environment": project.manifest_environment or None,
        "baseline": {"tests": len(baseline.passed), "test_files": len(baseline.clean_files),
                     "excluded_test_files": baseline.excluded, "tests_not_listed": baseline.not_listed,
                     "files_without_coverage": sorted(f for f, c in baseline.coverage.items() if c is None),
                     "duration": round(baseline.duration, 3)},
        "functions": counts,
        "duration": round(duration, 2),
        "given_up": given_up,  # candidates not checked (BuildOptions.give_up_after)
        **outcome_manifest(candidates, tasks, rejections),
    }


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions(),
                bar=None, slots=None) -> BuildReport:
    """Turn the package at `source` (a folder, a .tgz, or an npm spec `name@version`) into task
    folders under `out`, plus `out/manifest.json` with counts and each rejection's gate and reason.
    The package's code runs only in the sandbox. A task folder of the same id already in `out` is
    replaced.

    `bar`: a progress bar to count candidates on (its total grows as they are made; default: one
    of its own when `options.progress`); `slots`: a semaphore shared by the builds of a
    multi-package run, bounding its sandbox runs at once (default: `options.workers`)."""
    with build_frame(out, options, bar, slots) as build:
        project = open_project(source, build.workdir, options.environment)
        build.describe(f"{project.name}: baseline")
        baseline = _baseline(project, options, build.slots)
        runs = _Runs(project, baseline, options, build.slots)
        candidates, counts = _candidates(project, baseline, options)
        build.candidates(len(candidates))
        build.describe(f"{project.name}: candidate tasks")
        checked = check_candidates(lambda c, own: _evaluate(runs, c, build.staging, own), candidates, options,
                                   build.bar, build.out, build.slots)
        manifest = _manifest(source, project, baseline, counts, checked.candidates, checked.tasks, checked.rejections,
                             options, build.seconds(), checked.given_up)
    return build.report(checked.tasks, checked.rejections, manifest)
