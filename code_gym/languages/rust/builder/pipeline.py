"""The builder for Rust crates: a crate with tests in (a Debian librust-*-dev package or a crate
folder), task folders and a manifest out. Its shape is the JavaScript builder's; what is shared
(gates, reports, multi-region combinations, the grader check, the batch run) is in
`code_gym.grading.builder`.

1. Environment: the Debian packages of the crate's dependencies as an offline directory source,
   Cargo.lock resolved against them, and the target cache of the original crate (dependencies and
   the crate compiled once, in the sandbox): `code_gym.languages.rust.environments`.
2. Baseline: the crate's test targets run `reruns` times (at least twice) back to back in one
   copy, through the adapter (the reader's per-test records and failure messages). A target that
   does not build or where no test passes is left out; a test that does not pass in every run is
   never listed.
3. Candidates: for each function of the crate's sources, its body removed (when it has a doc
   comment) and a few mutations (mutations.py). Rust has no cheap line coverage here, so every
   candidate runs every test target: one incremental build of the crate (the dependencies come
   fresh from the cache) and one run of the test binaries.
4. Gates, each candidate in its own copy and sandbox (code_gym.grading.gates.GATES). A change whose
   code does not compile is rejected (gate "fails"): every test of the crate would fail with a
   compile error that points at the changed line, which is no task. The changed code's run may
   take SLOWDOWN_LIMIT times the baseline (a mutant that loops forever: gate "runtime"). A change
   that kills a test binary (a recursion that overflows the stack aborts the process) is rejected
   too (gate "fails"): which of that binary's tests had finished depends on thread timing, so its
   FAIL_TO_PASS list would not repeat.
   A task's reference, laid out as the grader lays it (its patch applied, its hidden tests back),
   is the original crate file for file: its runs are the baseline's, shared by every task of the
   crate, and cost nothing (a folder that differs is run, from the original's target cache with
   the original files' times, so cargo finds the unchanged units fresh). The grader check then
   grades one task of each hidden-test layout through the grader itself.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from code_gym import languages
from code_gym.grading import records as run_records
from code_gym.grading.builder import BuildError, BuildReport, Candidate, Outcome, Rejection, outcome_manifest
from code_gym.grading.candidates import (CandidateOptions, NO_TEST_FAILS, broken_run, build_frame, candidate_id,
                                         changed_files, check_candidates, failing_tests, function_changes, in_rounds,
                                         originals, parsed_sources, reference_outcome, region_source, statement_gates,
                                         task_patch)
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.grading.grade import RESULTS_DIR
from code_gym.grading.multiregion import state
from code_gym.grading.reference import reference_changes
from code_gym.languages.rust.builder.mutations import checker, functions, pick_mutations, remove_body
from code_gym.languages.rust.builder.project import EnvOptions, Project, open_project
from code_gym.languages.rust.builder.statement import leak, parse_failures, write_multi_statement, write_statement
from code_gym.sandbox import Limits, Runtime, make_sandbox
from code_gym.sandbox.records import new_nonce
from code_gym.tasks.loaders.folder import copy_tree, task_id, write_task
from code_gym.tasks.task import Task, TaskError
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.working_copy import Workspace

BASELINE_RUNS = 2  # runs of the original back to back (`reruns` when more): a listed test passed in each
# the changed code's run (a build and the tests) may take this many times the baseline's (at least
# MIN_CHANGED_LIMIT seconds, at most the task's timeout)
SLOWDOWN_LIMIT = 10.0
MIN_CHANGED_LIMIT = 60.0
MEMORY = 4 << 30
# the reader's message for a test that has no outcome because its binary died first (a stack
# overflow aborts the process, whichever test thread overflowed)
CRASHED = "before reporting this test"
PROCESSES = 512  # rustc, the linker and libtest's threads


@dataclass(frozen=True)
class BuildOptions(CandidateOptions):
    timeout: float = 300.0  # the tasks' test timeout in seconds: a graded run builds the crate, then tests
    command_timeout: float = 120.0  # the tasks' agent command timeout (`cargo build` of a change)
    environment: EnvOptions = EnvOptions()
    # stop a crate once this many one-region candidates were checked and none passed the gates
    # (0: check every one): a crate whose tests cannot run in the task layout fails each alike
    give_up_after: int = 12


@dataclass
class SuiteRun:
    outcomes: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"; a target that did not build: its root
    messages: dict[str, str]  # test or target id -> the failure message its record carried
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    problems: list[str] = field(default_factory=list)  # what voids the records (a broken stream)

    @property
    def ok(self) -> bool:
        """The run itself worked (tests may have failed, targets may not have built)."""
        return not self.timed_out and self.exit_code in languages.get("rust").run_ok and \
            not self.problems and bool(self.outcomes)

    @property
    def unbuilt(self) -> dict[str, str]:
        """The targets that did not build, with the compiler's errors."""
        return {t: self.messages.get(t, "") for t, o in self.outcomes.items() if "::" not in t and o != "passed"}


def _limits(timeout: float) -> Limits:
    return Limits(timeout=timeout, memory_bytes=MEMORY, file_size_bytes=2 << 30, processes=PROCESSES)


def run_suite(root: Path, test_command: str, selected: list[str] | tuple[str, ...], timeout: float, runtime: Runtime,
              isolation: str = "auto", repeat: int = 1) -> list[SuiteRun]:
    """Run the `selected` targets or test ids with `test_command` in a sandbox on `root`, `repeat`
    times in a row in the same folder (the second build finds the first's target directory), with
    the records on: outcomes and failure messages by test id, as the grader reads them."""
    language = languages.get("rust")
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("build")))
    sandbox = make_sandbox(isolation, root, _limits(timeout), runtime=runtime)
    try:
        binds = {results: RESULTS_DIR}
        plan = language.test_run(test_command, tuple(selected), sandbox.inside(results, binds), known_ids=True)
        runs = []
        for _ in range(repeat):
            nonce = new_nonce()
            run = sandbox.exec(plan.command, timeout=timeout, binds=binds, records=nonce)
            outcomes, void = run_records.run_outcomes(language, run, nonce, results, ())
            messages = run_records.read(run.records or b"", nonce).messages
            runs.append(SuiteRun(outcomes, messages, run.exit_code, run.timed_out, run.duration, run.output,
                                 [f.message for f in void]))
        return runs
    finally:
        sandbox.close()
        shutil.rmtree(results, ignore_errors=True)


def _file(test_id: str) -> str:
    return test_id.split("::")[0]


@dataclass(frozen=True)
class _Baseline:
    passed: frozenset[str]  # the tests listed in tasks: they pass in every run
    clean_targets: tuple[str, ...]  # test targets with a passing test: the tasks' tests
    excluded: dict[str, str]  # test target -> why it is left out
    duration: float  # the last run (a warm build and the tests)
    first_duration: float  # the first run (the copy of the cache, fingerprints, the tests)
    not_listed: int = 0  # tests of clean targets that do not pass (ignored, failing, flaky)
    runs: tuple[SuiteRun, ...] = ()  # the runs themselves: every task's reference runs, when its files are the crate's


def _baseline(project: Project, runtime: Runtime, options: BuildOptions, slots) -> _Baseline:
    """Every test target of the original, `reruns` times (at least BASELINE_RUNS) back to back in one copy."""
    with slots:
        copy = Workspace(project.root, strategy="copy")
        try:
            runs = run_suite(copy.root, project.test_command, [], 3 * options.timeout, runtime, options.isolation,
                             max(BASELINE_RUNS, options.reruns))
        finally:
            copy.close()
    first = runs[0]
    if first.timed_out:
        raise BuildError(f"the crate's tests did not finish within {3 * options.timeout:g}s; raise --timeout")
    if not first.ok:
        why = "; ".join(first.problems[:1]) or first.output[-300:].strip()
        raise BuildError(f"the crate's test run fails as a whole (exit code {first.exit_code}): {why}")
    excluded = {t: f"it does not build: {m.strip()[:200]}" for t, m in first.unbuilt.items()}
    if "src/lib.rs" in excluded and len(first.unbuilt) < len({_file(t) for t in first.outcomes}):
        # the reader builds the library's unit tests in every run, and reads their errors as the
        # library's: once the crate is changed, every target would fail as if the library did not build
        raise BuildError(f"the library's unit tests do not build in its environment ({excluded['src/lib.rs'][:200]}), "
                         "and every run builds them")
    passed = {t for t in first.outcomes if "::" in t and all(r.outcomes.get(t) == "passed" for r in runs)}
    for target in sorted({_file(t) for t in first.outcomes if "::" in t} - {_file(t) for t in passed}):
        excluded.setdefault(target, "none of its tests passes in every run")
    clean = sorted({_file(t) for t in passed} - set(excluded))
    if not clean:
        raise BuildError("no test target passes on the original code: " +
                         "; ".join(f"{f}: {r}" for f, r in list(excluded.items())[:5]))
    listed = frozenset(t for t in passed if _file(t) in clean)
    total = sum(1 for t in first.outcomes if "::" in t and _file(t) in clean)
    return _Baseline(listed, tuple(clean), excluded, runs[-1].duration, first.duration, total - len(listed),
                     tuple(runs))


def _candidates(project: Project, baseline: _Baseline, options: BuildOptions) -> tuple[list[Candidate], dict]:
    """Candidates in round-robin order over functions (so a cap keeps variety), and counts of
    functions found and files that did not parse."""
    per_function, ids = [], set()
    counts = {"found": 0, "unparsed_files": 0}
    tests = frozenset(baseline.passed)
    sources = parsed_sources(project.root, project.source_files, functions, checker, counts)
    for path, text, fns, file_checker in sources:
        module = task_id(posixpath.splitext(path.removeprefix("src/"))[0].removesuffix("/mod"))
        for fn in fns:
            counts["found"] += 1
            # `fn`'s body removal (when it has a doc comment) and up to `mutations_per_function` mutations
            changes = function_changes(fn, text, options, remove_body, pick_mutations, file_checker)
            per_function.append([Candidate(candidate_id(project.name, module, fn.qualname, change.operator, ids,
                                                        family=False), (change,), tests) for change, _ in changes])
    return in_rounds(per_function, options.max_candidates), counts


def _originals(project: Project, changes) -> dict[str, str]:
    return originals(project.root, changes)


def _hidden(fail_to_pass: list[str]) -> list[str]:
    """The integration-test files of the FAIL_TO_PASS tests (unit tests live in the sources: they
    stay where they are, and the audit keeps them as they were)."""
    return sorted({_file(t) for t in fail_to_pass if _file(t).startswith("tests/")})


def _write_task(project: Project, baseline: _Baseline, cand: Candidate, changed: dict[str, str],
                fail_to_pass: list[str], statement: str, staging: Path, options: BuildOptions) -> Task:
    hidden = _hidden(fail_to_pass)
    originals = _originals(project, cand.changes)

    def fill_repo(repo: Path) -> None:
        copy_tree(project.root, repo, lambda rel: rel in hidden)
        for path, text in changed.items():
            (repo / path).write_text(text, encoding="utf-8")

    source = region_source({"builder": "code-gym", "project": project.name,
                            "crate": f"{project.crate} {project.version}"}, cand.changes)
    manifest = {
        "id": cand.id,
        "kind": "feature" if all(c.kind == "feature" for c in cand.changes) else "bugfix",
        "language": "rust",
        "statement": statement,
        # the unit tests live in the sources and run in every run: test files are integration tests only
        "visible_tests": [f for f in baseline.clean_targets if f.startswith("tests/") and f not in hidden],
        "hidden_tests": hidden,
        "protected_paths": ["tests/"] if any(f.startswith("tests/") for f in project.test_files) else [],
        "test_command": project.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": sorted(baseline.passed - set(fail_to_pass)),
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "environment": project.environment,
        "source": source,
    }
    return write_task(staging / cand.id, manifest, fill_repo, {f: (project.root / f).read_bytes() for f in hidden},
                      task_patch(changed, originals))


def _tree(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def _same_files(root: Path, original: Path) -> bool:
    """Whether `root` holds exactly the files of `original`, byte for byte."""
    mine, theirs = _tree(root), _tree(original)
    return mine.keys() == theirs.keys() and all(
        mine[rel].stat().st_size == theirs[rel].stat().st_size and mine[rel].read_bytes() == theirs[rel].read_bytes()
        for rel in mine)


def _same_times(root: Path, original: Path) -> None:
    """Give each file of `root` whose bytes are the original's the original's times: cargo decides
    what to rebuild by modification times, and the target cache was built from the original."""
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        source = original / path.relative_to(root)
        try:
            if source.is_file() and path.stat().st_size == source.stat().st_size and path.read_bytes() == source.read_bytes():
                st = source.stat()
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError:
            continue


class _Runs:
    """The builder's sandbox runs of one crate: `slots` bounds how many run at once across a whole
    multi-crate build; `failed` remembers which listed tests failed on which code."""

    def __init__(self, project: Project, baseline: _Baseline, runtime: Runtime, options: BuildOptions, slots):
        self.project, self.baseline, self.runtime, self.options, self.slots = project, baseline, runtime, options, slots
        self.failed: dict[frozenset, frozenset[str]] = {}  # code state -> the listed tests that failed on it
        self.stable: set[str] = set()  # tests that passed every rerun of the original back to back
        self.durations: list[float] = []  # of the changed code's runs (an incremental build and the tests)

    @property
    def limit(self) -> float:
        """How long the changed code's run may take (SLOWDOWN_LIMIT)."""
        usual = max(self.baseline.duration, self.baseline.first_duration)
        return min(self.options.timeout, max(MIN_CHANGED_LIMIT, SLOWDOWN_LIMIT * usual))

    def changed(self, files: dict[str, str]) -> SuiteRun:
        """Every clean target on the crate with `files` (path -> text) changed."""
        with self.slots:
            copy = Workspace(self.project.root, strategy="copy")
            try:
                for path, text in files.items():
                    (copy.root / path).write_text(text, encoding="utf-8")
                [run] = run_suite(copy.root, self.project.test_command, self.baseline.clean_targets, self.limit,
                                  self.runtime, self.options.isolation)
            finally:
                copy.close()
        self.durations.append(run.duration)
        if run.ok:
            self.failed[state(files)] = frozenset(t for t in self.baseline.passed if run.outcomes.get(t) != "passed")
        return run

    def failing(self, files: dict[str, str]) -> frozenset[str]:
        """The listed tests that fail on the code with `files` changed (remembered from an earlier
        run of the same code: a region's own one-region run)."""
        return failing_tests(self.failed, files, lambda: self.changed(files))

    def reference(self, task: Task) -> tuple[list[SuiteRun], frozenset[str] | None]:
        """The original code laid out as the grader lays it (the reference patch applied, the hidden
        tests back), run: every clean target, then, back to back in the same folder, the
        FAIL_TO_PASS tests that no earlier candidate's reruns showed stable (`reruns` runs in all).
        Returns the runs and the tests rerun (None: all of them, in every run).

        When the laid-out folder holds the original crate's files byte for byte, its runs are the
        baseline's (the same files, environment and target cache): every task of a crate shares
        them, and no run is made for the task (the grader check still grades one task of each
        hidden-test layout through the grader itself)."""
        copy = Workspace(task.repo, strategy="copy")
        try:
            apply_changes(task, copy.root, reference_changes(task))
            lay_hidden_tests(task, copy.root)
            if _same_files(copy.root, self.project.root):
                return list(self.baseline.runs), None
            _same_times(copy.root, self.project.root)
            with self.slots:
                timeout = task.timeouts.tests
                targets = tuple(task.visible_tests) + tuple(task.hidden_tests)
                runs = run_suite(copy.root, task.test_command, targets, timeout, self.runtime, self.options.isolation)
                again = frozenset(task.fail_to_pass) - self.stable
                if self.options.reruns > 1 and not runs[0].timed_out and again:
                    runs += run_suite(copy.root, task.test_command, sorted(again), timeout, self.runtime,
                                      self.options.isolation, self.options.reruns - 1)
                return runs, again
        finally:
            copy.close()


def _evaluate(runs: _Runs, cand: Candidate, staging: Path, own: dict | None = None) -> Outcome:
    """Every gate on one candidate, in the order of the gates' table in docs/tasks.md."""
    project, baseline, options = runs.project, runs.baseline, runs.options
    changed = changed_files(cand, _originals(project, cand.changes))
    if isinstance(changed, Outcome):
        return changed
    run = runs.changed(changed)
    if run.timed_out:
        return Outcome(cand, Rejection(cand.id, "runtime", f"the changed code's build and tests run past "
                                       f"{runs.limit:.0f}s (on the original code {baseline.duration:.1f}s: an "
                                       "endless loop?)"))
    if not run.ok:
        return broken_run(cand, run)
    unbuilt = {t: m for t, m in run.unbuilt.items() if t in baseline.clean_targets}
    if unbuilt:
        target, errors = next(iter(unbuilt.items()))
        lines = [line.strip() for line in errors.splitlines() if line.strip()]
        first = next((line for line in lines if line.startswith("error")), lines[0] if lines else "")
        return Outcome(cand, Rejection(cand.id, "fails", f"the changed code does not compile ({target}: {first[:160]})"))
    fail_to_pass = sorted(runs.failed[state(changed)])
    crash = next((run.messages[t] for t in fail_to_pass if run.messages.get(t, "").endswith(CRASHED)), None)
    if crash:
        return Outcome(cand, Rejection(cand.id, "fails", f"a test binary died ({crash.removesuffix(CRASHED).strip()}): "
                                       "which of its tests fail depends on the order its threads ran them in"))
    if not fail_to_pass:
        return Outcome(cand, Rejection(cand.id, "fails", NO_TEST_FAILS))
    symptoms = parse_failures(run.messages, fail_to_pass)
    statement, rejected = statement_gates(
        cand, fail_to_pass, symptoms, own, write_statement=write_statement, write_multi_statement=write_multi_statement,
        leak=leak, read_originals=lambda: _originals(project, cand.changes), failing=runs.failing)
    if rejected:
        return rejected
    task = _write_task(project, baseline, cand, changed, fail_to_pass, statement, staging, options)
    return reference_outcome(cand, task, runs.reference(task), fail_to_pass, symptoms, options.timeout, runs.stable,
                             sorted(baseline.passed))


def _manifest(source, project: Project, baseline: _Baseline, runs: _Runs, cache, counts: dict,
              candidates: list[Candidate], tasks: list[Task], rejections: list[Rejection], options: BuildOptions,
              duration: float, given_up: int) -> dict:
    changed = sorted(runs.durations)
    return {
        "source": str(source),
        "project": project.name,
        "crate": project.crate,
        "version": project.version,
        "language": "rust",
        "test_command": project.test_command,
        "options": asdict(options),
        "environment": project.manifest_environment,
        "target_cache": cache,
        "baseline": {"tests": len(baseline.passed), "test_targets": list(baseline.clean_targets),
                     "excluded_test_targets": baseline.excluded, "tests_not_listed": baseline.not_listed,
                     "duration": round(baseline.duration, 3), "first_duration": round(baseline.first_duration, 3)},
        "changed_runs": {"count": len(changed), "median": round(changed[len(changed) // 2], 2) if changed else 0.0,
                         "total": round(sum(changed), 1)},
        "functions": counts,
        "duration": round(duration, 2),
        "given_up": given_up,
        **outcome_manifest(candidates, tasks, rejections),
    }


def _runtime(project: Project) -> tuple[Runtime, dict]:
    """The runtime of the original crate (its environment and target cache, built now in the
    sandbox on first use), and the cache's account for the manifest."""
    from code_gym.languages.rust import environments

    task = project.task
    try:  # the cache first, so that the manifest tells whether it was built now; the runtime then finds it
        cache = environments.target_cache(task, project.env or environments.task_environment(task))
        runtime = languages.get("rust").runtime(task)
    except TaskError as exc:
        raise BuildError(f"the crate's environment cannot be made: {exc}") from None
    if cache is None:
        return runtime, {}
    # a cache whose build failed still holds what built (a test target that needs a left-out
    # dev-dependency fails alone): the baseline leaves out the targets that do not build
    return runtime, {"cached": cache.cached, "ok": cache.ok, "build_seconds": round(cache.build_seconds, 2),
                     "size": cache.size}


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions(),
                bar=None, slots=None) -> BuildReport:
    """Turn the crate at `source` (a folder or a Debian package `librust-NAME-dev`) into task
    folders under `out`, plus `out/manifest.json` with counts and each rejection's gate and reason.
    The crate's code (build scripts, proc macros, tests) runs only in the sandbox. A task folder of
    the same id already in `out` is replaced.

    `bar`: a progress bar to count candidates on (default: one of its own when `options.progress`);
    `slots`: a semaphore shared by the builds of a multi-crate run, bounding its sandbox runs at
    once (default: `options.workers`)."""
    with build_frame(out, options, bar, slots) as build:
        project = open_project(source, build.workdir, options.environment)
        build.describe(f"{project.name}: baseline")
        runtime, cache = _runtime(project)
        baseline = _baseline(project, runtime, options, build.slots)
        runs = _Runs(project, baseline, runtime, options, build.slots)
        candidates, counts = _candidates(project, baseline, options)
        build.candidates(len(candidates))
        build.describe(f"{project.name}: candidate tasks")
        checked = check_candidates(lambda c, own: _evaluate(runs, c, build.staging, own), candidates, options,
                                   build.bar, build.out, build.slots)
        manifest = _manifest(source, project, baseline, runs, cache, counts, checked.candidates, checked.tasks,
                             checked.rejections, options, build.seconds(), checked.given_up)
    return build.report(checked.tasks, checked.rejections, manifest)
