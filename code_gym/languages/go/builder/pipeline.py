"""The builder for Go source trees: a package with tests in, task folders and a manifest out. Its
shape is the JavaScript builder's; what is shared (gates, reports, multi-region combinations, the
grader check, the batch run) is in `code_gym.grading.builder`.

1. Baseline: each test package (a folder holding _test.go files) runs on its own in the sandbox,
   through the adapter (the reader's records: per-test outcomes and failure messages), with
   coverage on (`-coverpkg=./... -coverprofile`), so every line knows which test packages ran it;
   then the packages that pass run together once, as the grader runs them. A package where no
   test passes (or that does not build: a test dependency Debian lacks) is left out; a test that
   does not pass in both runs is never listed.
2. Candidates: for each function whose body some test package runs, its body removed (when it has
   a doc comment) and a few mutations (mutations.py) whose line a test package runs.
3. Gates, each candidate in its own copy and sandbox (code_gym.grading.gates.GATES); the changed
   code runs only the test packages whose coverage reaches the changed line, for at most
   SLOWDOWN_LIMIT times their baseline time. A change that does not compile (arguments of two
   types swapped, a variable left unread) is rejected by the `fails` gate: its tests cannot run.

The builder's runs use the project's build cache (the adapter makes one per environment and
repository, compiling the dependencies once); only the changed packages compile again.
"""
from __future__ import annotations

import posixpath
import shutil
import tempfile
import time
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
from code_gym.languages.go.builder.mutations import checker, functions, pick_mutations, remove_body
from code_gym.languages.go.builder.project import EnvOptions, Project, open_project
from code_gym.languages.go.builder.statement import (collateral, leak, parse_failures, write_multi_statement,
                                                     write_statement)
from code_gym.sandbox import Limits, Runtime, make_sandbox
from code_gym.sandbox.records import new_nonce
from code_gym.tasks.loaders.folder import copy_tree, task_id, write_task
from code_gym.tasks.task import Task
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.working_copy import Workspace

COVERAGE_FILE = "cover.out"  # in the run's results folder
MAX_JOINT_RUNS = 3
# the changed code's run may take this many times its packages' baseline time (at least
# MIN_CHANGED_LIMIT seconds, at most the task's timeout): a mutant that loops forever would
# otherwise hold a worker for the whole timeout
SLOWDOWN_LIMIT = 10.0
MIN_CHANGED_LIMIT = 20.0


@dataclass(frozen=True)
class BuildOptions(CandidateOptions):
    timeout: float = 120.0  # the tasks' test timeout in seconds (compiling included)
    command_timeout: float = 60.0  # the tasks' agent command timeout
    environment: EnvOptions = EnvOptions()
    test_command: str = "go test -count=1 -vet=off"  # the tasks' (vet's findings are no test's)
    # stop a project once this many one-region candidates were checked and none passed the gates
    give_up_after: int = 12


@dataclass
class SuiteRun:
    outcomes: dict[str, str]  # test id -> outcome; a test file of a package that did not build: its id
    messages: dict[str, str]  # test or file id -> the failure message its record carried
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    problems: list[str] = field(default_factory=list)  # what voids the records
    lines: dict[str, set[int]] | None = None  # with coverage: repo file -> the lines that ran

    @property
    def ok(self) -> bool:
        """The run itself worked (tests may have failed, packages may not have built)."""
        return not self.timed_out and self.exit_code in languages.get("go").run_ok and \
            not self.problems and bool(self.outcomes)

    @property
    def unbuilt(self) -> dict[str, str]:
        """Test file -> the compiler's message, for the files of packages that did not build."""
        return {t: self.messages.get(t, "") for t, o in self.outcomes.items() if "::" not in t and o != "passed"}


def read_coverage(text: str, import_path: str) -> dict[str, set[int]]:
    """Repo file -> the lines of its blocks that ran, from a Go cover profile
    (`path/file.go:12.3,15.2 STATEMENTS COUNT` lines; a line counts when any block holding it ran)."""
    lines: dict[str, set[int]] = {}
    prefix = import_path + "/"
    for row in text.splitlines()[1:]:
        location, _, rest = row.rpartition(":")
        try:
            span, _, count = rest.split()
            start, end = span.split(",")
            first, last = int(start.split(".")[0]), int(end.split(".")[0])
            ran = int(count) > 0
        except ValueError:
            continue
        if ran and location.startswith(prefix):
            lines.setdefault(location[len(prefix):], set()).update(range(first, last + 1))
    return lines


def run_suite(root: Path, project: Project, test_command: str, files, timeout: float, runtime: Runtime,
              isolation: str = "auto", repeat: int = 1, coverage: bool = False) -> list[SuiteRun]:
    """Run the test packages of `files` with `test_command` in a sandbox on `root`, `repeat` times
    in a row in the same folder, with the records on: outcomes and failure messages by test id,
    through the adapter as the grader reads them. With `coverage`, each run also tells which
    lines of which files ran."""
    language = languages.get("go")
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("build")))
    sandbox = make_sandbox(isolation, root, Limits(timeout=timeout), runtime=runtime)
    try:
        binds = {results: RESULTS_DIR}
        inside = sandbox.inside(results, binds)
        command = f"{test_command} -coverpkg=./... -coverprofile={inside}/{COVERAGE_FILE}" if coverage else test_command
        plan = language.test_run(command, tuple(files), inside)
        runs = []
        for _ in range(repeat):
            (results / COVERAGE_FILE).unlink(missing_ok=True)
            nonce = new_nonce()
            run = sandbox.exec(plan.command, timeout=timeout, binds=binds, records=nonce)
            outcomes, void = run_records.run_outcomes(language, run, nonce, results, ())
            lines = None
            if coverage and (results / COVERAGE_FILE).is_file():
                lines = read_coverage((results / COVERAGE_FILE).read_text(errors="replace"), project.import_path)
            runs.append(SuiteRun(outcomes, failure_messages(run.records, nonce), run.exit_code, run.timed_out, run.duration,
                                 run.output, [f.message for f in void], lines))
        return runs
    finally:
        sandbox.close()
        shutil.rmtree(results, ignore_errors=True)


def _file(test_id: str) -> str:
    return test_id.split("::")[0]


def _folder(test_file: str) -> str:
    return posixpath.dirname(test_file)


@dataclass(frozen=True)
class _Baseline:
    passed: frozenset[str]  # the tests listed in tasks: they pass alone and together
    folders: dict[str, tuple[str, ...]]  # clean test package folder -> its test files
    excluded: dict[str, str]  # test package folder -> why it is left out
    coverage: dict[str, dict[str, set[int]] | None]  # folder -> (source file -> lines its tests ran); None: unknown
    duration: float  # the clean packages' run together
    durations: dict[str, float]  # folder -> its run alone (compiling with coverage included)
    not_listed: int = 0

    @property
    def clean_files(self) -> tuple[str, ...]:
        return tuple(f for files in self.folders.values() for f in files)


def _baseline(project: Project, runtime: Runtime, options: BuildOptions, slots) -> _Baseline:
    """Each test package alone under coverage (`workers` at once), then the passing ones together."""
    by_folder: dict[str, list[str]] = {}
    for test_file in project.test_files:
        by_folder.setdefault(_folder(test_file), []).append(test_file)

    def alone(folder: str) -> SuiteRun:
        with slots:
            copy = Workspace(project.root, strategy="copy")
            try:
                return run_suite(copy.root, project, project.test_command, by_folder[folder][:1], options.timeout,
                                 runtime, options.isolation, coverage=True)[0]
            finally:
                copy.close()

    with ThreadPoolExecutor(max(1, options.workers)) as pool:
        runs = dict(zip(by_folder, pool.map(alone, by_folder)))
    excluded: dict[str, str] = {}
    passed: set[str] = set()
    for folder, run in runs.items():
        good = {t for t, o in run.outcomes.items() if o == "passed" and "::" in t and _folder(_file(t)) == folder}
        if run.timed_out:
            excluded[folder] = f"its tests run past the {options.timeout:g}s timeout"
        elif run.unbuilt:
            excluded[folder] = "it does not build: " + " ".join(next(iter(run.unbuilt.values())).split())[:200]
        elif not run.ok or not good:
            excluded[folder] = (f"none of its {len(run.outcomes)} tests passes" if run.outcomes else
                                f"it runs no test (exit code {run.exit_code})")
        passed |= good
    clean = [f for f in by_folder if f not in excluded]
    duration = 0.0
    for _ in range(MAX_JOINT_RUNS):
        if not clean:
            break
        with slots:
            copy = Workspace(project.root, strategy="copy")
            try:
                [joint] = run_suite(copy.root, project, project.test_command, [by_folder[f][0] for f in clean],
                                    3 * options.timeout, runtime, options.isolation)
            finally:
                copy.close()
        if joint.timed_out:
            raise BuildError(f"the package's tests together did not finish within {3 * options.timeout:g}s; "
                             "raise --timeout")
        duration = joint.duration
        broken = sorted({_folder(_file(t)) for t in passed if _folder(_file(t)) in clean
                         and joint.outcomes.get(t) != "passed"})
        if joint.ok and not broken:
            break
        for folder in broken or clean:
            excluded[folder] = "its tests pass alone but not with the others" if broken else \
                f"the test packages together do not run (exit code {joint.exit_code}): {joint.output[-300:]}"
        clean = [f for f in clean if f not in excluded]
    else:
        raise BuildError("the package's tests do not agree with themselves: run together, other tests fail each time")
    if not clean:
        raise BuildError("no test package passes on the original code: " +
                         "; ".join(f"{f or '.'}: {r}" for f, r in list(excluded.items())[:5]))
    listed = frozenset(t for t in passed if _folder(_file(t)) in clean)
    total = sum(1 for f in clean for t in runs[f].outcomes if "::" in t)
    return _Baseline(listed, {f: tuple(by_folder[f]) for f in clean}, excluded, {f: runs[f].lines for f in clean},
                     duration, {f: runs[f].duration for f in clean}, total - len(listed))


def _covering(baseline: _Baseline, path: str, lines) -> list[str]:
    """The clean test package folders whose coverage reaches any of `lines` of `path` (every one
    whose coverage is unknown)."""
    return reaching(baseline.coverage, path, lines)


def _candidates(project: Project, baseline: _Baseline, options: BuildOptions) -> tuple[list[Candidate], dict]:
    """Candidates in round-robin order over functions (so a cap keeps variety), and counts of
    functions found, run by tests, and mutation sites no test runs."""
    per_function, ids = [], set()
    counts = {"found": 0, "covered": 0, "sites_not_run": 0, "unparsed_files": 0}
    covering = partial(_covering, baseline)
    sources = parsed_sources(project.root, project.source_files, functions, checker, counts)
    for path, text, fns, file_checker in sources:
        module = task_id(posixpath.splitext(path)[0])
        for fn in fns:
            counts["found"] += 1
            if not _covering(baseline, path, range(fn.body_lines[0], fn.body_lines[1] + 1)):
                continue
            counts["covered"] += 1
            # (change, the test package folders that run its line)
            changes = function_changes(fn, text, options, remove_body, pick_mutations, file_checker, covering, counts)
            per_function.append([Candidate(candidate_id(project.name, module, fn.qualname, change.operator, ids),
                                           (change,), frozenset(t for t in baseline.passed
                                                                if _folder(_file(t)) in folders))
                                 for change, folders in changes])
    return in_rounds(per_function, options.max_candidates), counts


def _originals(project: Project, changes) -> dict[str, str]:
    return originals(project.root, changes)


def _hidden(fail_to_pass: list[str], messages: dict[str, str]) -> list[str]:
    """The test files a task hides: those of the FAIL_TO_PASS tests that failed of their own, not
    the ones only an earlier test's panic kept from running (they show nothing of the bug, and
    hiding them would hide most of a package's tests); every F2P test's file when none did."""
    own = [t for t in fail_to_pass if not collateral(messages.get(t, ""))]
    return sorted({_file(t) for t in own or fail_to_pass})


def _write_task(project: Project, baseline: _Baseline, cand: Candidate, changed: dict[str, str],
                fail_to_pass: list[str], hidden: list[str], statement: str, staging: Path,
                options: BuildOptions) -> Task:
    originals = _originals(project, cand.changes)

    def fill_repo(repo: Path) -> None:
        copy_tree(project.root, repo, lambda rel: rel in hidden)
        for path, text in changed.items():
            (repo / path).write_text(text, encoding="utf-8")

    package = {"package": f"{project.package} {project.version}"} if project.package else None
    source = region_source({"builder": "code-gym", "project": project.name, "import_path": project.import_path},
                           cand.changes, package)
    manifest = {
        "id": cand.id,
        "kind": "feature" if all(c.kind == "feature" for c in cand.changes) else "bugfix",
        "language": "go",
        "statement": statement,
        "visible_tests": [f for f in baseline.clean_files if f not in hidden],
        "hidden_tests": hidden,
        "protected_paths": [],
        "test_command": project.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": sorted(baseline.passed - set(fail_to_pass)),
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "environment": project.environment,
        "source": source,
    }
    return write_task(staging / cand.id, manifest, fill_repo, {f: (project.root / f).read_bytes() for f in hidden},
                      task_patch(changed, originals))


class _Runs:
    """The builder's sandbox runs of one project: `slots` bounds how many run at once across a
    whole multi-package build; `failed` remembers which listed tests failed on which code."""

    def __init__(self, project: Project, runtime: Runtime, baseline: _Baseline, options: BuildOptions, slots):
        self.project, self.runtime, self.baseline, self.options, self.slots = project, runtime, baseline, options, slots
        self.failed: dict[frozenset, frozenset[str]] = {}  # code state -> the listed tests that failed on it
        self.unbuilt: dict[frozenset, str] = {}  # code state -> the compiler's message, when it did not build
        self.stable: set[str] = set()

    def files_of(self, folders) -> list[str]:
        return [self.baseline.folders[f][0] for f in sorted(folders)]

    def limit(self, folders) -> float:
        usual = sum(self.baseline.durations[f] for f in folders)
        return min(self.options.timeout, max(MIN_CHANGED_LIMIT, SLOWDOWN_LIMIT * usual))

    def changed(self, files: dict[str, str], folders) -> SuiteRun:
        """The test packages `folders` on the project with `files` (path -> text) changed."""
        with self.slots:
            copy = Workspace(self.project.root, strategy="copy")
            try:
                for path, text in files.items():
                    (copy.root / path).write_text(text, encoding="utf-8")
                [run] = run_suite(copy.root, self.project, self.project.test_command, self.files_of(folders),
                                  self.limit(folders), self.runtime, self.options.isolation)
            finally:
                copy.close()
        if run.ok:
            key = state(files)
            self.failed[key] = frozenset(t for t in self.baseline.passed
                                         if _folder(_file(t)) in folders and run.outcomes.get(t) != "passed")
            if run.unbuilt:
                self.unbuilt[key] = next(iter(run.unbuilt.values()))
        return run

    def failing(self, files: dict[str, str], folders) -> frozenset[str]:
        """The listed tests of `folders` that fail on the code with `files` changed (remembered
        from an earlier run of the same code)."""
        return failing_tests(self.failed, files, lambda: self.changed(files, folders))

    def reference(self, task: Task) -> tuple[list[SuiteRun], frozenset[str]]:
        """The original code laid out as the grader lays it: the hidden test files' packages, then,
        back to back in the same folder, those of the FAIL_TO_PASS tests no earlier candidate's
        reruns showed stable (`reruns` runs in all). The project's build cache serves: the task
        names the same packages, and its own cache would compile them again for each task."""
        with self.slots:
            copy = Workspace(task.repo, strategy="copy")
            try:
                apply_changes(task, copy.root, reference_changes(task))
                lay_hidden_tests(task, copy.root)
                timeout = task.timeouts.tests
                runs = run_suite(copy.root, self.project, task.test_command, task.hidden_tests, timeout, self.runtime,
                                 self.options.isolation)
                again = frozenset(task.fail_to_pass) - self.stable
                if self.options.reruns > 1 and not runs[0].timed_out and again:
                    files = sorted({_file(t) for t in again})
                    runs += run_suite(copy.root, self.project, task.test_command, files, timeout, self.runtime,
                                      self.options.isolation, self.options.reruns - 1)
                return runs, again
            finally:
                copy.close()


def _evaluate(runs: _Runs, cand: Candidate, staging: Path, own: dict | None = None) -> Outcome:
    """Every gate on one candidate, in the order of the gates' table in docs/tasks.md."""
    project, baseline, options = runs.project, runs.baseline, runs.options
    folders = sorted({_folder(_file(t)) for t in cand.tests})
    changed = changed_files(cand, _originals(project, cand.changes))
    if isinstance(changed, Outcome):
        return changed
    run = runs.changed(changed, folders)
    if run.timed_out:
        usual = sum(baseline.durations[f] for f in folders)
        return Outcome(cand, Rejection(cand.id, "runtime", f"the changed code's tests run past {runs.limit(folders):.0f}s "
                                       f"(on the original code {usual:.1f}s: an endless loop?)"))
    if not run.ok:
        return broken_run(cand, run)
    if run.unbuilt:
        message = " ".join(next(iter(run.unbuilt.values())).split())
        return Outcome(cand, Rejection(cand.id, "fails", f"the changed code does not compile: {message[:200]}"))
    fail_to_pass = sorted(runs.failed[state(changed)])
    if not fail_to_pass:
        return Outcome(cand, Rejection(cand.id, "fails", NO_TEST_FAILS))
    symptoms = parse_failures({t: run.messages.get(t, "") for t in fail_to_pass}, fail_to_pass)
    statement, rejected = statement_gates(
        cand, fail_to_pass, symptoms, own, write_statement=write_statement, write_multi_statement=write_multi_statement,
        leak=leak, read_originals=lambda: _originals(project, cand.changes),
        failing=lambda state_files: runs.failing(state_files, folders))
    if rejected:
        return rejected
    task = _write_task(project, baseline, cand, changed, fail_to_pass, _hidden(fail_to_pass, run.messages), statement,
                       staging, options)
    listed = [t for t in baseline.passed if _folder(_file(t)) in {_folder(h) for h in task.hidden_tests}]
    return reference_outcome(cand, task, runs.reference(task), fail_to_pass, symptoms, options.timeout, runs.stable,
                             listed)


def _manifest(source, project: Project, baseline: _Baseline, counts: dict, candidates: list[Candidate],
              tasks: list[Task], rejections: list[Rejection], options: BuildOptions, duration: float,
              given_up: int, cache: dict) -> dict:
    return {
        "source": str(source),
        "project": project.name,
        "language": "go",
        "import_path": project.import_path,
        "package": f"{project.package} {project.version}".strip(),
        "test_command": project.test_command,
        "options": asdict(options),
        "environment": {**project.manifest_environment, **cache},
        "baseline": {"tests": len(baseline.passed), "test_packages": len(baseline.folders),
                     "excluded_test_packages": baseline.excluded, "tests_not_listed": baseline.not_listed,
                     "packages_without_coverage": sorted(f for f, c in baseline.coverage.items() if c is None),
                     "duration": round(baseline.duration, 3)},
        "functions": counts,
        "duration": round(duration, 2),
        "given_up": given_up,
        **outcome_manifest(candidates, tasks, rejections),
    }


def _runtime(project: Project) -> tuple[Runtime, dict]:
    """The project's runtime (its environment and build cache, made now when not cached) and the
    manifest's account of them: whether each was in the cache already, and the seconds it took."""
    environments = languages.get("go").environments

    def present(folder: Path) -> set[str]:
        return set(p.name for p in folder.iterdir()) if folder.is_dir() else set()

    environments_before, caches_before = present(environments.environments_dir()), present(environments.caches_dir())
    t0 = time.monotonic()
    runtime = languages.get("go").runtime(project.task)
    seconds = time.monotonic() - t0
    env = dict(runtime.env)
    dependencies = Path(env.get("CODE_GYM_GO_DEPENDENCIES") or "")
    environment_key = next((p.name for p in [dependencies, *dependencies.parents]
                            if p.parent == environments.environments_dir()), "")
    cache_key = Path(env.get("CODE_GYM_GO_CACHE") or "").name
    return runtime, {"cached": not environment_key or environment_key in environments_before,
                     "build_cache_cached": bool(cache_key) and cache_key in caches_before,
                     "build_cache": bool(cache_key), "build_seconds": round(seconds, 2)}


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions(),
                bar=None, slots=None) -> BuildReport:
    """Turn the Go source at `source` (a Debian package name golang-*-dev, or a folder holding an
    import path's tree) into task folders under `out`, plus `out/manifest.json` with counts and each
    rejection's gate and reason. The package's code runs only in the sandbox. A task folder of the
    same id already in `out` is replaced.

    `bar`: a progress bar to count candidates on (default: one of its own when `options.progress`);
    `slots`: a semaphore shared by the builds of a multi-package run, bounding its sandbox runs at
    once (default: `options.workers`)."""
    with build_frame(out, options, bar, slots) as build:
        project = open_project(source, build.workdir, options.environment, test_command=options.test_command)
        build.describe(f"{project.name}: baseline")
        with build.slots:
            runtime, cache = _runtime(project)
        baseline = _baseline(project, runtime, options, build.slots)
        runs = _Runs(project, runtime, baseline, options, build.slots)
        candidates, counts = _candidates(project, baseline, options)
        build.candidates(len(candidates))
        build.describe(f"{project.name}: candidate tasks")
        checked = check_candidates(lambda c, own: _evaluate(runs, c, build.staging, own), candidates, options,
                                   build.bar, build.out, build.slots)
        manifest = _manifest(source, project, baseline, counts, checked.candidates, checked.tasks, checked.rejections,
                             options, build.seconds(), checked.given_up, cache)
    return build.report(checked.tasks, checked.rejections, manifest)
