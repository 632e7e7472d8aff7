"""The builder: a Python project with a pytest suite in, task folders and a manifest out.

1. Baseline: the project's tests run once in the sandbox under coverage, each test its own
   coverage context, so every line knows which tests ran it. Test files where a test does not
   pass are left out of the tasks.
2. Candidates: for each function some test runs, its body removed (when it has a docstring) and a
   few AST mutations (see mutations.py).
3. Gates, each candidate in its own copy and sandbox; the first gate that fails is the rejection
   reason recorded in the manifest (see code_gym.grading.gates.GATES).
"""
from __future__ import annotations

import os
import shlex
import sys
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from code_gym.languages.python.builder import bytecode
from code_gym.languages.python.builder.mutations import Function, functions, pick_mutations, remove_body
from code_gym.languages.python.builder.mutations import checker as mutation_checker
from code_gym.languages.python.builder.project import EnvOptions, Project, open_project, test_folders
from code_gym.languages.python.builder.runner import SuiteRun, run_tests
from code_gym.languages.python.builder.statement import REPORT_FLAGS, leak, parse_failures, write_multi_statement, write_statement
from code_gym.languages.python.environments import task_runtime
from code_gym.grading.builder import BuildError, BuildReport, Candidate, Outcome, Rejection, outcome_manifest
from code_gym.grading.builder import check_reference_runs  # noqa: F401 - the tests take it from here
from code_gym.grading.candidates import (NO_TEST_FAILS, build_frame, candidate_id, changed_files, check_candidates,
                                         failing_tests, function_changes, in_rounds, originals, reference_outcome,
                                         region_source, statement_gates, task_patch)
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.grading.multiregion import state
from code_gym.grading.multiregion import apply_changes as apply_region_changes
from code_gym.grading.reference import reference_changes
from code_gym.tasks.loaders.folder import copy_tree, task_id, write_task
from code_gym.tasks.task import Task
from code_gym.workspace.working_copy import Workspace

MAX_DESELECTED = 200  # tests of the untouched project that fail, deselected by node id in the test command


@dataclass(frozen=True)
class BuildOptions:
    timeout: float = 60.0  # the tasks' test timeout in seconds (task.toml [timeouts] tests)
    command_timeout: float = 30.0  # the tasks' agent command timeout
    reruns: int = 3  # runs of the original that must all pass
    mutations_per_function: int = 2
    remove_bodies: bool = True
    max_candidates: int | None = None  # None: every candidate
    seed: int = 0
    workers: int = 2  # candidates checked in parallel
    multi_ratio: float = 0.6  # multi-region candidates per accepted one-region task (0: none)
    select_tests: bool = True  # run a candidate's covering tests by node id, not their whole files
    isolation: str = "auto"
    progress: bool = True
    environment: EnvOptions = EnvOptions()  # the project's own environment (code_gym.languages.python.environments)
    bytecode: bool = True  # the project's bytecode made once for every run (bytecode.py); False: as before
    # stop a project once this many one-region candidates were checked and none passed the gates
    # (the others are not checked; 0: check every one): a project whose tests cannot run in the
    # task layout fails each candidate alike, and cost 11-13 min each in the 50-project run
    give_up_after: int = 12


@dataclass(frozen=True)
class _Baseline:
    passed: frozenset[str]  # node ids of the tests in clean files
    clean_files: tuple[str, ...]  # test files where every test passes
    excluded: dict[str, str]  # test file -> why it is left out
    coverage: dict[str, dict[int, set[str]]]
    duration: float
    deselected: dict[str, int] = field(default_factory=dict)  # test file -> tests of it deselected
    rewritten: int = 0  # test modules whose rewritten bytecode later runs reuse


def _file(node_id: str) -> str:
    return node_id.split("::")[0]


def _baseline(project: Project, options: BuildOptions) -> tuple[_Baseline, Project]:
    """The project's tests on the original code under coverage, and the project with its test
    command deselecting (`--deselect NODE_ID`) the tests that do not pass there, so that the rest of
    their file still counts; a file where no test passes is left out whole."""
    # coverage slows tests down, so the whole suite gets three task timeouts here; a test file that
    # cannot be imported (a missing optional dependency) is left out, not fatal
    limit = 3 * options.timeout
    # (the test command holds --no-cov where the project's own pytest-cov would fight the tracer)
    copy = Workspace(project.root, strategy="copy")
    try:
        write = bytecode.WRITE_BYTECODE if options.bytecode else ""
        [run], coverage = run_tests(copy.root, f"{write}{project.test_command} --continue-on-collection-errors",
                                    project.test_files, limit, options.isolation, coverage=True,
                                    runtime=project.runtime)
        # pytest's rewritten test modules, for every later run
        rewritten = bytecode.harvest(copy.root, project.root) if options.bytecode else 0
    finally:
        copy.close()
    if run.timed_out:
        raise BuildError(f"the project's tests did not finish within {limit:g}s; raise --timeout")
    if not run.ok:
        python = project.environment.prefix if project.environment else sys.executable
        raise BuildError(f"the project's tests do not run (pytest exit code {run.exit_code}) with {python}: a "
                         f"requirement its metadata does not declare? Output:\n{run.output[-2000:]}")
    excluded, deselected = {}, {}
    for test_file in project.test_files:
        outcomes = {t: o for t, o in run.outcomes.items() if _file(t) == test_file}
        bad = sorted(t for t, o in outcomes.items() if o != "passed")
        if len(bad) == len(outcomes):
            excluded[test_file] = f"none of its {len(bad)} tests passes" if outcomes else "no tests"
        elif bad:
            deselected[test_file] = bad
    # too long a command line: the files with the most tests to deselect are left out instead
    while sum(map(len, deselected.values())) > MAX_DESELECTED:
        worst = max(deselected, key=lambda f: len(deselected[f]))
        excluded[worst] = f"{len(deselected.pop(worst))} of its tests do not pass (too many to deselect)"
    clean = tuple(f for f in project.test_files if f not in excluded)
    if not clean:
        raise BuildError("no test file passes on the original code: " + "; ".join(f"{f}: {r}" for f, r in excluded.items()))
    passed = frozenset(t for t, o in run.outcomes.items() if _file(t) in clean and o == "passed")
    if deselected:
        project, passed, clean = _deselect(project, options, deselected, passed, clean, excluded)
    return _Baseline(passed, clean, excluded, coverage, run.duration,
                     {f: len(ids) for f, ids in deselected.items() if f in clean}, rewritten), project


def _deselecting(command: str, deselected: dict[str, list[str]]) -> str:
    words = [w for ids in deselected.values() for t in ids for w in ("--deselect", t)]
    return shlex.join(shlex.split(command) + words)  # as the warm runner takes it (shlex.join's form)


def _deselect(project: Project, options: BuildOptions, deselected: dict[str, list[str]], passed: frozenset[str],
              clean: tuple[str, ...], excluded: dict[str, str]) -> tuple[Project, frozenset[str], tuple[str, ...]]:
    """The project with `--deselect` for each of `deselected`'s node ids in its test command, checked
    by one run of the files that hold them with that command: a file where that run does not pass
    exactly its baseline's passing tests (an id pytest did not take, a test that fails only
    sometimes) is left out whole."""
    files = sorted(deselected)
    copy = Workspace(project.root, strategy="copy")
    try:
        [check], _ = run_tests(copy.root, _deselecting(project.test_command, deselected), files,
                               3 * options.timeout, options.isolation, runtime=project.runtime)
    finally:
        copy.close()
    for test_file in files:
        ran = {t: o for t, o in check.outcomes.items() if _file(t) == test_file}
        expected = {t for t in passed if _file(t) == test_file}
        if not check.ok or set(ran) != expected or any(o != "passed" for o in ran.values()):
            excluded[test_file] = (f"{len(deselected.pop(test_file))} of its tests do not pass, and with them "
                                   f"deselected the others did not pass alone")
    clean = tuple(f for f in clean if f not in excluded)
    if not clean:
        raise BuildError("no test file passes on the original code: " + "; ".join(f"{f}: {r}" for f, r in excluded.items()))
    return (replace(project, test_command=_deselecting(project.test_command, deselected)),
            frozenset(t for t in passed if _file(t) in clean), clean)


def _covering(fn: Function, baseline: _Baseline) -> frozenset[str]:
    lines = baseline.coverage.get(fn.path, {})
    first, last = fn.body_lines
    return frozenset(t for n in range(first, last + 1) for t in lines.get(n, ()) if t in baseline.passed)


def _candidates(project: Project, baseline: _Baseline, options: BuildOptions) -> tuple[list[Candidate], dict]:
    """Candidates in round-robin order over functions (so a cap keeps variety), and counts of
    functions found and run by tests."""
    per_function, found, covered, ids = [], 0, 0, set()
    for path in project.source_files:
        try:
            source = (project.root / path).read_text()
            fns = functions(path, source)
            file_checker = mutation_checker(source)
        except (SyntaxError, UnicodeDecodeError):
            continue  # not Python this interpreter reads: nothing to make tasks from
        module = task_id(path[:-3].removeprefix("src/"))
        for fn in fns:
            found += 1
            tests = _covering(fn, baseline)
            if not tests:
                continue
            covered += 1
            changes = function_changes(fn, source, options, remove_body, pick_mutations, file_checker)
            per_function.append([Candidate(candidate_id(project.name, module, fn.qualname, change.operator, ids),
                                           (change,), tests) for change, _ in changes])
    return in_rounds(per_function, options.max_candidates), {"found": found, "covered": covered}


def _originals(project: Project, changes) -> dict[str, str]:
    return originals(project.root, changes, encoding=None)


def _changed_files(project: Project, cand: Candidate) -> dict[str, str]:
    return apply_region_changes(_originals(project, cand.changes), cand.changes)


def _write_task(project: Project, baseline: _Baseline, cand: Candidate, fail_to_pass: list[str],
                statement: str, staging: Path, options: BuildOptions) -> Task:
    hidden = sorted({_file(t) for t in fail_to_pass})
    originals = _originals(project, cand.changes)
    changed = _changed_files(project, cand)

    def fill_repo(repo: Path) -> None:
        copy_tree(project.root, repo, lambda rel: rel in hidden or os.path.basename(rel) == bytecode.CACHE)
        for path, text in changed.items():
            (repo / path).write_text(text)

    # test folders and conftest files; test files beside the code are protected by name (visible/hidden)
    protected = sorted(test_folders(project.test_files) |
                       {p.relative_to(project.root).as_posix() for p in project.root.rglob("conftest.py")})
    source = region_source({"builder": "code-gym", "project": project.name}, cand.changes)
    manifest = {
        "id": cand.id,
        "kind": "feature" if all(c.kind == "feature" for c in cand.changes) else "bugfix",
        "statement": statement,
        "visible_tests": [f for f in baseline.clean_files if f not in hidden],
        "hidden_tests": hidden,
        "protected_paths": protected,
        "test_command": project.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": sorted(baseline.passed - set(fail_to_pass)),
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "source": source,
        **project.manifest_environment,
    }
    return write_task(staging / cand.id, manifest, fill_repo,
                      {f: (project.root / f).read_bytes() for f in hidden}, task_patch(changed, originals))


class _Runs:
    """The builder's sandbox runs of one project: `slots` bounds how many run at once across a
    whole multi-project build; `failing` remembers which tests failed on which code."""

    def __init__(self, project: Project, baseline: _Baseline, options: BuildOptions, slots=None):
        self.project, self.baseline, self.options = project, baseline, options
        self.slots = slots or threading.BoundedSemaphore(max(1, options.workers))
        self.failed: dict[frozenset, frozenset[str]] = {}  # code state -> the tests that failed on it
        self.stable: set[str] = set()  # tests that passed every rerun of the original back to back
        self.retried = 0

    def _run(self, root: Path, command: str, tests, timeout: float, repeat: int = 1, env=None) -> list[SuiteRun]:
        """run_tests, once more when a run was lost (killed before pytest wrote any outcome: the
        warm runner's exit code 137) rather than failed: on a loaded machine that is the sandbox,
        not the project."""
        with self.slots:
            env = env or self.project.runtime
            runs, _ = run_tests(root, command, tests, timeout, self.options.isolation, repeat, runtime=env)
            if any(r.exit_code == 137 and not r.outcomes for r in runs):
                self.retried += 1
                runs, _ = run_tests(root, command, tests, timeout, self.options.isolation, repeat, runtime=env)
        return runs

    def changed(self, files: dict[str, str], tests: list[str]) -> SuiteRun:
        """`tests` (test files or node ids) on the project with `files` (path -> text) changed."""
        copy = Workspace(self.project.root, strategy="copy")
        try:
            for path, text in files.items():
                (copy.root / path).write_text(text)
            [run] = self._run(copy.root, f"{self.project.test_command} {REPORT_FLAGS}", tests, self.options.timeout)
        finally:
            copy.close()
        if run.ok:
            chosen = set(tests)
            self.failed[state(files)] = frozenset(
                t for t in self.baseline.passed if (t in chosen or _file(t) in chosen) and run.outcomes.get(t) != "passed")
        return run

    def failing(self, files: dict[str, str], tests: list[str]) -> frozenset[str]:
        """The passing baseline tests among `tests` that fail on the code with `files` changed
        (remembered from an earlier run of the same code where there is one: a region's own
        one-region run, whose tests are among a combination's)."""
        return failing_tests(self.failed, files, lambda: self.changed(files, tests))

    def reference(self, task: Task) -> tuple[list[SuiteRun], frozenset[str]]:
        """The original code laid out as the grader lays it: the hidden test files (FAIL_TO_PASS
        lives there; the visible files ran on this same code in the baseline), then, back to back
        in the same folder, the FAIL_TO_PASS tests that no earlier candidate's reruns showed stable
        (`reruns` runs in all). Returns the runs and the tests that were rerun."""
        copy = Workspace(task.repo, strategy="copy")
        try:
            apply_changes(task, copy.root, reference_changes(task))
            lay_hidden_tests(task, copy.root)
            bytecode.lend(self.project.root, copy.root)
            timeout = task.timeouts.tests
            env = task_runtime(task)  # the environment the task names, as the grader finds it
            runs = self._run(copy.root, task.test_command, task.hidden_tests, timeout, env=env)
            again = frozenset(task.fail_to_pass) - self.stable
            if self.options.reruns > 1 and not runs[0].timed_out and again:
                runs += self._run(copy.root, task.test_command, sorted(again), timeout, self.options.reruns - 1, env)
            return runs, again
        finally:
            copy.close()


def _evaluate(runs: _Runs, cand: Candidate, staging: Path, symptoms_of: dict | None = None) -> Outcome:
    """Every gate on one candidate, in the order of GATES' table in docs/tasks.md."""
    project, baseline, options = runs.project, runs.baseline, runs.options
    files = sorted({_file(t) for t in cand.tests})
    # the tests that run the changed code (coverage says the others cannot notice the change),
    # or their whole files when the project's ids cannot be passed back to pytest
    chosen = sorted(cand.tests) if options.select_tests else files
    changed = changed_files(cand, _originals(project, cand.changes))
    if isinstance(changed, Outcome):
        return changed
    run = runs.changed(changed, chosen)
    if not run.ok and not run.timed_out and chosen != files:
        chosen = files
        run = runs.changed(changed, chosen)
    if run.timed_out:
        return Outcome(cand, Rejection(cand.id, "runtime", f"the changed code's tests run past the "
                                        f"{options.timeout:g}s timeout (an endless loop?)"))
    if not run.ok:
        return Outcome(cand, Rejection(cand.id, "fails", f"the changed code breaks the test run itself (pytest exit "
                                        f"code {run.exit_code}), so no test can be singled out"))
    fail_to_pass = sorted(runs.failed[state(changed)])
    if not fail_to_pass:
        return Outcome(cand, Rejection(cand.id, "fails", NO_TEST_FAILS))
    symptoms = parse_failures(run.output, fail_to_pass)
    statement, rejected = statement_gates(
        cand, fail_to_pass, symptoms, symptoms_of, write_statement=write_statement,
        write_multi_statement=write_multi_statement, leak=leak,
        read_originals=lambda: _originals(project, cand.changes),
        failing=lambda state_files: runs.failing(state_files, chosen))
    if rejected:
        return rejected
    task = _write_task(project, baseline, cand, fail_to_pass, statement, staging, options)
    return reference_outcome(cand, task, runs.reference(task), fail_to_pass, symptoms, options.timeout, runs.stable)


def _manifest(source, project: Project, baseline: _Baseline, counts: dict, candidates: list[Candidate],
              tasks: list[Task], rejections: list[Rejection], options: BuildOptions, duration: float) -> dict:
    return {
        "source": str(source),
        "project": project.name,
        "test_command": project.test_command,
        "options": asdict(options),
        "environment": None if project.environment is None else {
            **project.environment.spec.as_manifest(), "prefix": str(project.environment.prefix),
            "cached": project.environment.cached, "build_seconds": project.environment.build_seconds,
            "installed": list(project.environment.installed)},
        "baseline": {"tests": len(baseline.passed), "test_files": len(baseline.clean_files),
                     "excluded_test_files": baseline.excluded,
                     "deselected_tests": baseline.deselected, "duration": round(baseline.duration, 3)},
        "functions": counts,
        "duration": round(duration, 2),
        **outcome_manifest(candidates, tasks, rejections),
    }


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions(),
                bar=None, slots=None) -> BuildReport:
    """Turn the project at `source` (a folder or an sdist) into task folders under `out`, plus
    `out/manifest.json` with counts and each rejection's gate and reason. The project's code runs
    only in the sandbox. A task folder of the same id already in `out` is replaced.

    `bar`: a progress bar to count candidates on (its total grows as they are made; default: one
    of its own when `options.progress`); `slots`: a semaphore shared by the builds of a
    multi-project run, bounding its sandbox runs at once (default: `options.workers`)."""
    with build_frame(out, options, bar, slots) as build:
        project = open_project(source, build.workdir, options.environment)
        compiled = bytecode.compile_sources(project.root, sorted(p.relative_to(project.root).as_posix()
                                                                 for p in project.root.rglob("*.py"))) \
            if options.bytecode else 0
        build.describe(f"{project.name}: tests under coverage")
        with build.slots:
            baseline, project = _baseline(project, options)
        runs = _Runs(project, baseline, options, build.slots)
        candidates, counts = _candidates(project, baseline, options)
        build.candidates(len(candidates))
        build.describe(f"{project.name}: candidate tasks")
        checked = check_candidates(lambda c, own: _evaluate(runs, c, build.staging, own), candidates, options,
                                   build.bar, build.out, runs.slots)
        manifest = _manifest(source, project, baseline, counts, checked.candidates, checked.tasks, checked.rejections,
                             options, build.seconds())
        manifest["lost_runs_retried"] = runs.retried
        manifest["given_up"] = checked.given_up  # candidates not checked (BuildOptions.give_up_after)
        manifest["bytecode"] = {"modules": compiled, "test_modules": baseline.rewritten}
    return build.report(checked.tasks, checked.rejections, manifest)
