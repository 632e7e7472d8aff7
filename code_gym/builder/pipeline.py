"""The builder: a Python project with a pytest suite in, task folders and a manifest out.

1. Baseline: the project's tests run once in the sandbox under coverage, each test its own
   coverage context, so every line knows which tests ran it. Test files where a test does not
   pass are left out of the tasks.
2. Candidates: for each function some test runs, its body removed (when it has a docstring) and a
   few AST mutations (see mutations.py).
3. Gates, each candidate in its own copy and sandbox; the first gate that fails is the rejection
   reason recorded in the manifest (see GATES).
"""
from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from code_gym.builder.mutations import Change, Function, functions, pick_mutations, remove_body
from code_gym.builder.project import BuildError, EnvOptions, Project, open_project, test_folders
from code_gym.builder.runner import SuiteRun, run_reference, run_tests
from code_gym.builder.statement import leak, write_statement
from code_gym.loaders.folder import copy_tree, task_id, write_task
from code_gym.table import format_table
from code_gym.task import Task, load_task
from code_gym.reference import reference_changes
from code_gym.diffs import file_diff
from code_gym.hostfs import TEMP_PREFIX
from code_gym.workspace import Workspace

GATES = {
    "original": "the original code passes every test of the task, laid out as the grader lays it",
    "fails": "the changed code fails at least one test (FAIL_TO_PASS is not empty) and the run itself works",
    "flaky": "every FAIL_TO_PASS test passes in each rerun of the original, reruns back to back in one folder",
    "runtime": "the task's tests finish within half its test timeout (and the changed code's within all of it)",
    "leak": "the statement does not contain the removed or original code",
}
MANIFEST_NAME = "manifest.json"


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
    isolation: str = "auto"
    progress: bool = True
    environment: EnvOptions = EnvOptions()  # the project's own environment (code_gym.environments)


@dataclass(frozen=True)
class Rejection:
    candidate: str
    gate: str  # a key of GATES
    reason: str


@dataclass
class BuildReport:
    out: Path
    tasks: list[Task]
    rejections: list[Rejection]
    manifest: dict = field(repr=False)

    def rejected(self, gate: str) -> list[Rejection]:
        return [r for r in self.rejections if r.gate == gate]

    def summary(self) -> str:
        """The gates with their rejection counts, then the totals."""
        rows = [[gate, len(self.rejected(gate)), description] for gate, description in GATES.items()]
        return (format_table(["gate", "rejected", "what it checks"], rows) +
                f"\n\n{len(self.tasks)} tasks from {self.manifest['candidates']} candidates written to {self.out} "
                f"(reasons per candidate in {self.out / MANIFEST_NAME})")


@dataclass(frozen=True)
class _Baseline:
    passed: frozenset[str]  # node ids of the tests in clean files
    clean_files: tuple[str, ...]  # test files where every test passes
    excluded: dict[str, str]  # test file -> why it is left out
    coverage: dict[str, dict[int, set[str]]]
    duration: float


@dataclass(frozen=True)
class _Candidate:
    id: str
    change: Change
    tests: frozenset[str]  # passing tests that run the function


def _file(node_id: str) -> str:
    return node_id.split("::")[0]


def _baseline(project: Project, options: BuildOptions) -> _Baseline:
    # coverage slows tests down, so the whole suite gets three task timeouts here; a test file that
    # cannot be imported (a missing optional dependency) is left out, not fatal
    limit = 3 * options.timeout
    copy = Workspace(project.root, strategy="copy")
    try:
        [run], coverage = run_tests(copy.root, f"{project.test_command} --continue-on-collection-errors",
                                    project.test_files, limit, options.isolation, coverage=True,
                                    python_env=project.runtime)
    finally:
        copy.close()
    if run.timed_out:
        raise BuildError(f"the project's tests did not finish within {limit:g}s; raise --timeout")
    if not run.ok:
        python = project.environment.prefix if project.environment else sys.executable
        raise BuildError(f"the project's tests do not run (pytest exit code {run.exit_code}) with {python}: a "
                         f"requirement its metadata does not declare? Output:\n{run.output[-2000:]}")
    excluded = {}
    for test_file in project.test_files:
        outcomes = [o for t, o in run.outcomes.items() if _file(t) == test_file]
        bad = sum(o != "passed" for o in outcomes)
        if not outcomes or bad:
            excluded[test_file] = f"{bad} of {len(outcomes)} tests do not pass" if outcomes else "no tests"
    clean = tuple(f for f in project.test_files if f not in excluded)
    if not clean:
        raise BuildError("no test file passes on the original code: " + "; ".join(f"{f}: {r}" for f, r in excluded.items()))
    passed = frozenset(t for t in run.outcomes if _file(t) in clean)
    return _Baseline(passed, clean, excluded, coverage, run.duration)


def _covering(fn: Function, baseline: _Baseline) -> frozenset[str]:
    lines = baseline.coverage.get(fn.path, {})
    first, last = fn.body_lines
    return frozenset(t for n in range(first, last + 1) for t in lines.get(n, ()) if t in baseline.passed)


def _candidates(project: Project, baseline: _Baseline, options: BuildOptions) -> tuple[list[_Candidate], dict]:
    """Candidates in round-robin order over functions (so a cap keeps variety), and counts of
    functions found and run by tests."""
    per_function, found, covered, ids = [], 0, 0, set()
    for path in project.source_files:
        try:
            source = (project.root / path).read_text()
            fns = functions(path, source)
        except (SyntaxError, UnicodeDecodeError):
            continue  # not Python this interpreter reads: nothing to make tasks from
        for fn in fns:
            found += 1
            tests = _covering(fn, baseline)
            if not tests:
                continue
            covered += 1
            rng = random.Random(f"{options.seed}:{path}:{fn.qualname}")
            changes = [remove_body(fn, source)] if options.remove_bodies and fn.docstring else []
            changes += pick_mutations(fn, source, options.mutations_per_function, rng)
            module = task_id(path[:-3].removeprefix("src/"))
            prefix = "" if module == project.name or module.startswith(project.name + "-") else project.name + "-"
            batch = []
            for change in filter(None, changes):
                base = name = task_id(f"{prefix}{module}-{fn.qualname}-{change.operator}")
                for n in itertools.count(2):
                    if name not in ids:
                        break
                    name = f"{base}-{n}"
                ids.add(name)
                batch.append(_Candidate(name, change, tests))
            turn = len(per_function) % max(len(batch), 1)
            per_function.append(batch[turn:] + batch[:turn])  # the first round mixes kinds and operators
    ordered = [c for round_ in itertools.zip_longest(*per_function) for c in round_ if c is not None]
    if options.max_candidates is not None:
        ordered = ordered[: options.max_candidates]
    return ordered, {"found": found, "covered": covered}


def _write_task(project: Project, baseline: _Baseline, cand: _Candidate, fail_to_pass: list[str],
                statement: str, staging: Path, options: BuildOptions) -> Task:
    change, fn = cand.change, cand.change.function
    hidden = sorted({_file(t) for t in fail_to_pass})
    original = (project.root / fn.path).read_text()

    def fill_repo(repo: Path) -> None:
        copy_tree(project.root, repo, lambda rel: rel in hidden)
        (repo / fn.path).write_text(change.source)

    # test folders and conftest files; test files beside the code are protected by name (visible/hidden)
    protected = sorted(test_folders(project.test_files) |
                       {p.relative_to(project.root).as_posix() for p in project.root.rglob("conftest.py")})
    manifest = {
        "id": cand.id,
        "kind": change.kind,
        "statement": statement,
        "visible_tests": [f for f in baseline.clean_files if f not in hidden],
        "hidden_tests": hidden,
        "protected_paths": protected,
        "test_command": project.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": sorted(baseline.passed - set(fail_to_pass)),
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "source": {"builder": "code-gym", "project": project.name, "file": fn.path, "function": fn.qualname,
                   "operator": change.operator, "line": change.line},
        **project.manifest_environment,
    }
    patch = file_diff(fn.path, change.source.encode(), original.encode()).text
    return write_task(staging / cand.id, manifest, fill_repo,
                      {f: (project.root / f).read_bytes() for f in hidden}, patch)


def check_reference_runs(runs: list[SuiteRun], fail_to_pass: list[str], timeout: float) -> tuple[str, str] | None:
    """The first gate that back-to-back runs of the original in one folder fail, as (gate, reason);
    None when they pass every gate. `runs[0]` ran every test of the task, the others FAIL_TO_PASS."""
    first = runs[0]
    if first.timed_out:
        return "runtime", f"the original code's tests run past the {timeout:g}s timeout"
    failing = [t for t, o in first.outcomes.items() if o != "passed"]
    if first.exit_code != 0 or failing or not first.outcomes:
        return "original", ("the original code fails tests of the task: " + ", ".join(failing[:5])
                            if failing else f"the original code's test run fails (pytest exit code {first.exit_code})")
    unstable = {t: sum(r.outcomes.get(t) == "passed" for r in runs) for t in fail_to_pass}
    unstable = {t: n for t, n in unstable.items() if n < len(runs)}
    if unstable:
        return "flaky", ("FAIL_TO_PASS tests pass in only some reruns of the original: " +
                         ", ".join(f"{t} ({n}/{len(runs)})" for t, n in sorted(unstable.items())))
    if first.duration > timeout / 2:
        return "runtime", f"the task's tests took {first.duration:.1f}s, over half the {timeout:g}s test timeout"
    return None


def _evaluate(project: Project, baseline: _Baseline, cand: _Candidate, staging: Path,
              options: BuildOptions) -> Task | Rejection:
    change, fn = cand.change, cand.change.function
    files = sorted({_file(t) for t in cand.tests})
    copy = Workspace(project.root, strategy="copy")
    try:
        (copy.root / fn.path).write_text(change.source)
        [run], _ = run_tests(copy.root, project.test_command, files, options.timeout, options.isolation,
                             python_env=project.runtime)
    finally:
        copy.close()
    if run.timed_out:
        return Rejection(cand.id, "runtime",
                         f"the changed code's tests run past the {options.timeout:g}s timeout (an endless loop?)")
    if not run.ok:
        return Rejection(cand.id, "fails", f"the changed code breaks the test run itself (pytest exit code "
                                           f"{run.exit_code}), so no test can be singled out")
    fail_to_pass = sorted(t for t in baseline.passed if _file(t) in files and run.outcomes.get(t) != "passed")
    if not fail_to_pass:
        return Rejection(cand.id, "fails",
                         "no test fails after the change (an equivalent mutant, or behaviour no test checks)")
    statement = write_statement(change, fail_to_pass)
    reason = leak(statement, change)
    if reason:
        return Rejection(cand.id, "leak", reason)
    task = _write_task(project, baseline, cand, fail_to_pass, statement, staging, options)
    runs = run_reference(task, reference_changes(task), options.reruns, options.isolation)
    verdict = check_reference_runs(runs, fail_to_pass, options.timeout)
    if verdict:
        shutil.rmtree(task.root, ignore_errors=True)
        return Rejection(cand.id, *verdict)
    return task


def _manifest(source, project: Project, baseline: _Baseline, counts: dict, candidates: list[_Candidate],
              tasks: list[Task], rejections: list[Rejection], options: BuildOptions) -> dict:
    by_id = {c.id: c for c in candidates}
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
                     "excluded_test_files": baseline.excluded, "duration": round(baseline.duration, 3)},
        "functions": counts,
        "candidates": len(candidates),
        "accepted": len(tasks),
        "gates": {g: {"description": d, "rejected": sum(r.gate == g for r in rejections)} for g, d in GATES.items()},
        "tasks": [{"id": t.id, "kind": t.kind, "operator": by_id[t.id].change.operator,
                   "file": by_id[t.id].change.function.path, "function": by_id[t.id].change.function.qualname,
                   "fail_to_pass": len(t.fail_to_pass), "pass_to_pass": len(t.pass_to_pass)} for t in tasks],
        "rejections": [asdict(r) for r in rejections],
    }


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions()) -> BuildReport:
    """Turn the project at `source` (a folder or an sdist) into task folders under `out`, plus
    `out/manifest.json` with counts and each rejection's gate and reason. The project's code runs
    only in the sandbox. A task folder of the same id already in `out` is replaced."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / ".staging"
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX + "builder-") as workdir:
        project = open_project(source, Path(workdir), options.environment)
        if options.progress:
            print(f"running the tests of {project.name} under coverage", file=sys.stderr, flush=True)
        baseline = _baseline(project, options)
        candidates, counts = _candidates(project, baseline, options)
        accepted: list[Task] = []
        rejections: list[Rejection] = []
        try:
            with ThreadPoolExecutor(max(1, options.workers)) as pool, \
                    tqdm(total=len(candidates), desc="candidate tasks", unit="task", disable=not options.progress) as bar:
                futures = [pool.submit(_evaluate, project, baseline, c, staging, options) for c in candidates]
                for future in as_completed(futures):
                    result = future.result()
                    (accepted if isinstance(result, Task) else rejections).append(result)
                    bar.set_postfix(accepted=len(accepted), rejected=len(rejections))
                    bar.update()
            tasks = []
            for task in sorted(accepted, key=lambda t: t.id):
                dest = out / task.id
                if dest.exists():
                    shutil.rmtree(dest)
                os.replace(task.root, dest)
                tasks.append(load_task(dest))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        rejections.sort(key=lambda r: r.candidate)
        manifest = _manifest(source, project, baseline, counts, candidates, tasks, rejections, options)
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return BuildReport(out, tasks, rejections, manifest)
