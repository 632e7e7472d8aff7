"""What every language's task builder shares: its errors and reports, the changed functions tasks
are made of (`Function`, `Change`, and `pick_changes`, which spreads a function's mutations over
the operators), candidates and their outcomes, checking them in parallel, multi-region
combinations, the reference runs' gates, the grader's check of a project's accepted tasks and their
move into place, and the batch loop over many sources.

A language's builder (`code_gym.languages.get(name).builder`) opens its projects, makes its
candidates and runs its tests; the gates' names (`code_gym.grading.gates.GATES`), the multi-region
plan (`code_gym.grading.multiregion`) and what follows here are one implementation for all.

The batch run is resumable. `OUT/build-state.json` records each source's status: a finished project
is skipped on the next run; one that was running when the run died is built again from scratch
(its half-written folder removed); one whose tasks were being moved into place has the move
finished. Each project builds into `OUT/projects/KEY/` (its own manifest.json stays there), then
its task folders move to `OUT/TASK_ID/`, so `OUT` is a folder of tasks like any other. One
progress bar counts the candidates of the whole run; `OUT/manifest.json` lists every project's
summary and every task.

Locally, `workers` sandbox runs go at once across all projects (projects overlap so that one
project's serial baseline does not idle the others). With `ray_address`, each project is one
Ray task (the project travels there, its built folder comes back as an archive), so a cluster's
nodes build projects side by side; each node runs its sandboxes itself."""
from __future__ import annotations

import io
import itertools
import json
import math
import os
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
import random
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from code_gym.grading.gates import GATES
from code_gym.grading.grade import grade
from code_gym.grading.multiregion import Component, plan
from code_gym.grading.reference import reference_changes
from code_gym.tasks.task import Task, TaskError, load_task
from code_gym.util.hostfs import owned_prefix
from code_gym.util.table import format_table

MANIFEST_NAME = "manifest.json"
STATE_NAME = "build-state.json"
PROJECTS_DIR = "projects"
REMOVE_BODY = "remove-body"  # the operator of a Change that removes a body
DOWNLOADS_DIR = "downloads"
# the messages of a BuildError that mean the project's environment is missing something
_ENV_WORDS = ("do not run", "dependencies", "environment", "importable", "requirement")


class BuildError(TaskError):
    """The source cannot be turned into tasks; the message says why and what to do."""


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
class Function:
    """A function or method a language's mutations can change, and the docs around it."""
    path: str  # repo-relative file
    qualname: str  # "area" or "Circle.area"
    signature: str  # its header on one line, without its body
    docstring: str | None  # its own documentation, cleaned
    module_doc: str | None  # its file's
    class_doc: str | None  # its class's, for a method
    body_lines: tuple[int, int]  # first and last line of the body, after the documentation
    node: Any = field(compare=False, repr=False)  # the language's node of it: `lineno` and `end_lineno` (1-based)


@dataclass(frozen=True)
class Change:
    """One changed function: a body removed (a feature task) or one bug injected (a bugfix task)."""
    function: Function
    operator: str  # REMOVE_BODY or one of the language's mutation operators
    source: str  # the whole changed file
    line: int  # where the change is
    removed: tuple[str, ...]  # original code the fix restores (the statement must not reveal it)

    @property
    def kind(self) -> str:
        return "feature" if self.operator == REMOVE_BODY else "bugfix"


def pick_changes(sites: Iterable[tuple[str, Any, Any]], operators: Sequence[str], count: int, rng: random.Random,
                 change: Callable[[str, Any, Any], Change | None]) -> list[Change]:
    """Up to `count` changes from `sites` ((operator, edit, site) triples), spread over the operators:
    one of each operator in turn, chosen at random among that operator's sites. `change(operator,
    edit, site)` makes the Change (None where it makes none) and runs only on the sites drawn, so a
    function with thousands of sites (a data table) costs a few checks, not thousands."""
    by_operator: dict[str, list] = {op: [] for op in operators}
    for op, edit, site in sites:
        by_operator[op].append((edit, site))
    for drawn in by_operator.values():
        rng.shuffle(drawn)
    picked: list[Change] = []
    while len(picked) < count and any(by_operator.values()):
        for op in operators:
            while by_operator[op] and len(picked) < count:
                made = change(op, *by_operator[op].pop())
                if made is not None:
                    picked.append(made)
                    break
    return picked


@dataclass(frozen=True)
class Candidate:
    id: str
    changes: tuple  # one change per region (a Change, or what a language makes instead); one-region tasks have one
    tests: frozenset[str]  # passing tests that can notice the change (they run the changed code)

    @property
    def change(self):
        return self.changes[0]


@dataclass(frozen=True)
class Outcome:
    candidate: Candidate
    result: Task | Rejection
    fail_to_pass: frozenset[str] = frozenset()
    symptoms: dict = field(default_factory=dict, compare=False)  # test -> the language's Symptom, from the changed code's run


def unique_id(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ...: the first that is not in `taken` (which it joins)."""
    name = base
    for n in itertools.count(2):
        if name not in taken:
            break
        name = f"{base}-{n}"
    taken.add(name)
    return name


def check_all(evaluate: Callable[[Candidate], Outcome], candidates: list[Candidate], workers: int, bar,
              give_up_after: int = 0) -> list[Outcome]:
    """Every candidate's outcome (`evaluate`, `workers` at once), in the order they finish. With
    `give_up_after`, once that many are in and none was accepted, the candidates not yet started
    are dropped (not in the result)."""
    outcomes = []
    with ThreadPoolExecutor(max(1, workers)) as pool:
        futures = [pool.submit(evaluate, c) for c in candidates]
        for future in as_completed(futures):
            if future.cancelled():
                continue
            outcomes.append(future.result())
            bar.update()
            if len(outcomes) == give_up_after and not any(isinstance(o.result, Task) for o in outcomes):
                dropped = sum(f.cancel() for f in futures)
                grow(bar, -dropped)
    return outcomes


def combinations(singles: list[Outcome], ratio: float, seed: int) -> list[Candidate]:
    """Multi-region candidates from the accepted one-region ones (`ratio` per accepted one; see
    code_gym.grading.multiregion): named after their first region, `<id>-plus-<n>`."""
    accepted = sorted((o for o in singles if isinstance(o.result, Task)), key=lambda o: o.candidate.id)
    components = [Component(o.candidate.change, o.fail_to_pass) for o in accepted]
    count = math.ceil(len(components) * ratio)
    combos = plan(components, count, random.Random(f"{seed}:combine")) if count else []
    out, ids = [], set()
    for combo in combos:
        parts = [accepted[i].candidate for i in combo]
        name = unique_id(f"{parts[0].id}-plus-{len(parts) - 1}", ids)
        out.append(Candidate(name, tuple(p.change for p in parts), frozenset().union(*(p.tests for p in parts))))
    return out


def place_tasks(outcomes: list[Outcome], out: Path, workers: int, isolation: str,
                slots=None) -> tuple[list[Task], list[Rejection]]:
    """The accepted tasks (written under a staging folder) through the grader check, moved to
    `out/TASK_ID` (replacing a folder of that id) and loaded from there; and every rejection,
    the grader's included, sorted by candidate."""
    accepted = [o.result for o in outcomes if isinstance(o.result, Task)]
    rejections = [o.result for o in outcomes if isinstance(o.result, Rejection)]
    refused = grader_check(accepted, workers, isolation, slots) if accepted else {}
    for task in accepted:
        if task.id in refused:
            shutil.rmtree(task.root, ignore_errors=True)
            rejections.append(Rejection(task.id, *refused[task.id]))
    tasks = []
    for task in sorted((t for t in accepted if t.id not in refused), key=lambda t: t.id):
        dest = out / task.id
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(task.root, dest)
        tasks.append(load_task(dest))
    return tasks, sorted(rejections, key=lambda r: r.candidate)


def outcome_manifest(candidates: list[Candidate], tasks: list[Task], rejections: list[Rejection]) -> dict:
    """The manifest's counts, gates, tasks and rejections (every language's manifest.json has these;
    the batch run reads them)."""
    by_id = {c.id: c for c in candidates}
    return {
        "candidates": len(candidates),
        "multi_region_candidates": sum(len(c.changes) > 1 for c in candidates),
        "accepted": len(tasks),
        "multi_region": sum(len(by_id[t.id].changes) > 1 for t in tasks),
        "gates": {g: {"description": d, "rejected": sum(r.gate == g for r in rejections)} for g, d in GATES.items()},
        "tasks": [{"id": t.id, "kind": t.kind, "regions": len(by_id[t.id].changes),
                   "operator": "+".join(c.operator for c in by_id[t.id].changes),
                   "file": by_id[t.id].change.function.path, "function": by_id[t.id].change.function.qualname,
                   "fail_to_pass": len(t.fail_to_pass), "pass_to_pass": len(t.pass_to_pass)} for t in tasks],
        "rejections": [asdict(r) for r in rejections],
    }


class SuiteRun(Protocol):
    """One run of a project's tests as a builder sees it."""
    outcomes: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"
    exit_code: int | None
    timed_out: bool
    duration: float


def check_reference_runs(runs: list[SuiteRun], fail_to_pass: list[str], timeout: float,
                         rerun=None, listed=None) -> tuple[str, str] | None:
    """The first gate that back-to-back runs of the original in one folder fail, as (gate, reason);
    None when they pass every gate. `runs[0]` ran the task's tests, the others the FAIL_TO_PASS
    tests in `rerun` (default: all of them). `listed`: the tests of `runs[0]` the task lists, the
    only ones that must pass there (a runner that cannot leave out a file's other tests runs them
    too); None: every test that ran, and the run's exit code 0."""
    first = runs[0]
    if first.timed_out:
        return "runtime", f"the original code's tests run past the {timeout:g}s timeout"
    outcomes = first.outcomes if listed is None else {t: first.outcomes.get(t, "missing") for t in listed}
    failing = [t for t, o in outcomes.items() if o != "passed"]
    if (listed is None and first.exit_code != 0) or failing or not outcomes:
        return "original", ("the original code fails tests of the task: " + ", ".join(failing[:5])
                            if failing else f"the original code's test run fails (exit code {first.exit_code})")
    rerun = set(fail_to_pass) if rerun is None else set(rerun)
    expected = {t: len(runs) if t in rerun else 1 for t in fail_to_pass}
    passes = {t: sum(r.outcomes.get(t) == "passed" for r in (runs if t in rerun else runs[:1])) for t in fail_to_pass}
    unstable = {t: n for t, n in passes.items() if n < expected[t]}
    if unstable:
        return "flaky", ("FAIL_TO_PASS tests pass in only some reruns of the original: " +
                         ", ".join(f"{t} ({n}/{expected[t]})" for t, n in sorted(unstable.items())))
    if first.duration > timeout / 2:
        return "runtime", f"the task's tests took {first.duration:.1f}s, over half the {timeout:g}s test timeout"
    return None


def grader_check(tasks: list[Task], workers: int = 2, isolation: str = "auto",
                 slots=None) -> dict[str, tuple[str, str]]:
    """The grader on `tasks` (the whole test set, as `tasks revalidate` and training run it):
    (gate, reason) by the id of each task it refuses. The candidates' own checks run only the
    tests that cover each change; the grader also guards the test files through the run, plants
    canaries and reads the runner's own test ids. Every task of a project has the original code as
    its reference and the same tests, laid out by which files are hidden, so the reference is graded
    once per hidden-file set: it must pass every test its task lists within half the test timeout.
    The untouched repo is graded once per project: a run the grader voids there (a conftest that
    runs only the test modules it lists leaves the canaries out) voids every task. Without the
    behavioural probes (made on first use, tens of seconds a task; `tasks revalidate` runs them).
    `slots` (a semaphore) bounds the grades running at once, as for the builder's other runs."""
    slots = slots or threading.BoundedSemaphore(max(1, workers))

    def graded(task: Task, changes: dict):
        with slots:
            return grade(task, changes, isolation=isolation, probes=False, audit=False)

    tasks = sorted(tasks, key=lambda t: t.id)
    result = graded(tasks[0], {})
    if not result.run_ok:  # graded again before a whole project is refused: a void must repeat
        # (inflection's untouched run, fine in 10 of 10 grades alone, was once voided under load)
        result = graded(tasks[0], {})
    if not result.run_ok:
        reason = f"the grader voids the untouched repo's test run of the project's tasks: {result.summary()}"[:500]
        return {t.id: ("original", reason) for t in tasks}
    layouts: dict[tuple[str, ...], list[Task]] = {}
    for task in tasks:
        layouts.setdefault(tuple(task.hidden_tests), []).append(task)
    refused = {}
    firsts = [group[0] for group in layouts.values()]
    with ThreadPoolExecutor(max(1, workers)) as pool:
        results = list(pool.map(lambda t: graded(t, reference_changes(t)), firsts))
    for group, result in zip(layouts.values(), results):
        task = group[0]
        verdict = None
        if result.timed_out or result.duration > task.timeouts.tests / 2:
            verdict = "runtime", (f"the grader's run of the whole test set took {result.duration:.1f}s, over half "
                                  f"the {task.timeouts.tests:g}s test timeout (raise --timeout)")
        elif not result.resolved:
            failing = sorted(t for t, o in result.tests.items() if o != "passed")
            verdict = "original", (f"the reference fails the grader's run of the whole test set: "
                                   f"{result.summary()}; first failing: {', '.join(failing[:3])}")[:500]
        if verdict:
            refused.update((t.id, verdict) for t in group)
    return refused


# -- many sources in one run


@dataclass(frozen=True)
class Sources:
    """What the batch loop needs of a language's builder."""
    build: Callable[..., Any]  # build_tasks(source, out, options, bar=, slots=): writes out/manifest.json
    fetch: Callable[[str, Path], Path]  # a source as a local file or folder (downloads go into the folder given)
    key: Callable[[str], str]  # the folder under OUT/projects/ a source builds into


@dataclass
class ProjectResult:
    source: str
    status: str  # "pending" | "running" | "moving" | "built" | "rejected" | "environment" | "error"
    tasks: list[str] = field(default_factory=list)
    multi_region: int = 0
    candidates: int = 0
    gates: dict[str, int] = field(default_factory=dict)  # rejections per gate
    reason: str = ""
    duration: float = 0.0
    baseline_duration: float = 0.0
    environment: str = ""  # "" (none), "built", or "cached"
    environment_seconds: float = 0.0  # building it (0 when it came from the cache)


class _State:
    """`OUT/build-state.json`, rewritten atomically after every change."""

    def __init__(self, out: Path):
        self.path = out / STATE_NAME
        self.lock = threading.Lock()
        raw = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.projects = {k: ProjectResult(**v) for k, v in raw.get("projects", {}).items()}

    def set(self, key: str, result: ProjectResult) -> None:
        with self.lock:
            self.projects[key] = result
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"projects": {k: vars(v) for k, v in self.projects.items()}}, indent=1))
            os.replace(tmp, self.path)


def _rejected_reason(manifest: dict) -> str:
    if manifest.get("given_up"):
        return (f"none of the first {manifest['candidates']} candidates passed the gates; the other "
                f"{manifest['given_up']} were not checked (BuildOptions.give_up_after)")
    return "every candidate was rejected by a gate"


def _result_of(source: str, manifest: dict, duration: float) -> ProjectResult:
    env = manifest.get("environment") or {}
    return ProjectResult(source, "built" if manifest["accepted"] else "rejected", [t["id"] for t in manifest["tasks"]],
                         manifest.get("multi_region", 0), manifest["candidates"],
                         {g: v["rejected"] for g, v in manifest["gates"].items()},
                         "" if manifest["accepted"] else _rejected_reason(manifest), duration,
                         manifest["baseline"]["duration"],
                         ("cached" if env.get("cached") else "built") if env else "",
                         0.0 if env.get("cached") else float(env.get("build_seconds") or 0.0))


def _failure(source: str, exc: Exception, duration: float) -> ProjectResult:
    message = str(exc)
    kind = "environment" if isinstance(exc, BuildError) and any(w in message for w in _ENV_WORDS) else "error"
    reason = message.splitlines()[0][:300] if message else ""
    if not isinstance(exc, TaskError):  # not a refusal: a failure of the builder or the network
        reason = f"{type(exc).__name__}: {reason}"[:300]
    return ProjectResult(source, kind, reason=reason or type(exc).__name__, duration=duration)


def _pack(folder: Path) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tf:
        tf.add(folder, arcname=".")
    return data.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        tf.extractall(folder, filter="data")


def _build_remote(build: Callable[..., Any], name: str, archive: bytes, is_file: bool,
                  options) -> tuple[bytes | None, str]:
    """On a Ray worker: build the project shipped as `archive` (a source file's bytes, or a packed
    folder); returns the packed output folder, or None and the error."""
    with tempfile.TemporaryDirectory(prefix=owned_prefix("ray-build")) as work:
        work = Path(work)
        source = work / name
        if is_file:
            source.write_bytes(archive)
        else:
            source.mkdir()
            _unpack(archive, source)
        try:
            build(source, work / "out", replace(options, progress=False))
        except TaskError as exc:
            return None, f"{type(exc).__name__}:{exc}"
        return _pack(work / "out"), ""


@dataclass
class BatchReport:
    out: Path
    projects: dict[str, ProjectResult]
    duration: float
    manifest: dict = field(repr=False, default_factory=dict)

    @property
    def tasks(self) -> int:
        return sum(len(p.tasks) for p in self.projects.values())

    def summary(self) -> str:
        rows = []
        for key, p in self.projects.items():
            rejected = ", ".join(f"{g} {n}" for g, n in p.gates.items() if n)
            rows.append([key, p.status, len(p.tasks), p.multi_region, p.candidates, rejected or "-",
                         f"{p.duration:.0f}s", p.reason[:60] or "-"])
        multi = sum(p.multi_region for p in self.projects.values())
        return (format_table(["project", "status", "tasks", "multi-region", "candidates", "rejected by gate",
                              "time", "reason"], rows) +
                f"\n\n{self.tasks} tasks ({multi} multi-region) from {len(self.projects)} projects in "
                f"{self.duration / 60:.1f} min -> {self.out} (state: {self.out / STATE_NAME})")


class _Bar:
    """One progress bar for every project's candidates; its total grows as projects make them."""

    def __init__(self, enabled: bool):
        self.bar = tqdm(total=0, desc="candidate tasks", unit="task", disable=not enabled)
        self.lock = threading.Lock()

    def grow(self, n: int) -> None:
        with self.lock:
            self.bar.total += n
        self.bar.refresh()

    def update(self, n: int = 1) -> None:
        with self.lock:
            self.bar.update(n)

    def refresh(self) -> None:
        self.bar.refresh()

    def set_description(self, text: str) -> None:
        self.bar.set_description(text)


def grow(bar, n: int) -> None:
    """Add `n` to a progress bar's total (a shared bar of a multi-project run has its own lock)."""
    if hasattr(bar, "grow"):
        bar.grow(n)
    else:
        bar.total += n
        bar.refresh()


def _place(out: Path, key: str, result: ProjectResult, state: _State) -> None:
    """Move a built project's task folders to OUT/TASK_ID (finishing a move a crash cut short)."""
    result.status = "moving"
    state.set(key, result)
    folder = out / PROJECTS_DIR / key
    for tid in result.tasks:
        if (folder / tid).exists():
            if (out / tid).exists():
                shutil.rmtree(out / tid)
            os.replace(folder / tid, out / tid)
    result.status = "built" if result.tasks else "rejected"
    state.set(key, result)


def build_many(language: Sources, sources: list[str], out: str | Path, options, ray_address: str | None = None,
               max_minutes: float | None = None, retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` with `language`'s builder (see the module docstring);
    `options` (the language's BuildOptions: `workers`, `progress`) go to each project's build;
    `options.workers` sandbox runs at once locally; `ray_address` ('auto', an address, or 'local'
    for a Ray instance on this machine) sends each project to a Ray cluster instead. With
    `max_minutes`, no project starts after that many minutes (the ones left stay pending: run again
    to go on). With `retry_failed`, projects that failed (`environment`, `error`) in an earlier run
    are built again."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = _State(out)
    started = time.monotonic()
    keys = {}
    for source in sources:
        key = language.key(source)
        if key in keys and keys[key] != source:
            raise BuildError(f"{source} and {keys[key]} would build into the same folder ({key}): rename one")
        keys[key] = source
    todo = []
    for key, source in keys.items():
        previous = state.projects.get(key)
        if previous and previous.status == "moving":
            _place(out, key, previous, state)
        elif previous and (previous.status in ("built", "rejected") or
                           (previous.status in ("environment", "error") and not retry_failed)):
            continue  # finished in an earlier run
        else:
            shutil.rmtree(out / PROJECTS_DIR / key, ignore_errors=True)  # a crashed build starts clean
            state.set(key, ProjectResult(source, "pending"))
            todo.append(key)
    bar = _Bar(options.progress)
    deadline = started + max_minutes * 60 if max_minutes else None

    def fetch(key: str) -> Path:
        return language.fetch(keys[key], out / DOWNLOADS_DIR)

    def finish(key: str, built: Path, t0: float) -> None:
        manifest = json.loads((built / MANIFEST_NAME).read_text())
        _place(out, key, _result_of(keys[key], manifest, time.monotonic() - t0), state)

    def local(key: str) -> None:
        if deadline and time.monotonic() > deadline:
            return
        t0 = time.monotonic()
        state.set(key, ProjectResult(keys[key], "running"))
        try:
            language.build(fetch(key), out / PROJECTS_DIR / key, replace(options, progress=False), bar=bar,
                           slots=slots)
        except Exception as exc:  # noqa: BLE001 - one project's failure, of any kind, must not end a long run
            state.set(key, _failure(keys[key], exc, time.monotonic() - t0))
            return
        finish(key, out / PROJECTS_DIR / key, t0)

    try:
        if ray_address:
            _run_on_ray(language, todo, keys, fetch, finish, state, options, ray_address, bar, deadline)
        else:
            slots = threading.BoundedSemaphore(max(1, options.workers))
            with ThreadPoolExecutor(max(1, min(options.workers, len(todo)))) as pool:
                for future in [pool.submit(local, key) for key in todo]:
                    future.result()
    finally:
        bar.bar.close()
    report = BatchReport(out, {k: state.projects[k] for k in keys}, time.monotonic() - started)
    report.manifest = _write_manifest(out, report)
    return report


def _run_on_ray(language: Sources, todo, keys, fetch, finish, state: _State, options, address: str, bar,
                deadline) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=max(1, options.workers))(_build_remote)
    pending = {}
    for key in todo:
        if deadline and time.monotonic() > deadline:
            break
        source = fetch(key)
        archive = source.read_bytes() if source.is_file() else _pack(source)
        state.set(key, ProjectResult(keys[key], "running"))
        pending[remote.remote(language.build, source.name, archive, source.is_file(), options)] = (key, time.monotonic())
    while pending:
        [done], _ = ray.wait(list(pending), num_returns=1)
        key, t0 = pending.pop(done)
        data, error = ray.get(done)
        if data is None:
            kind, _, message = error.partition(":")
            state.set(key, _failure(keys[key], BuildError(message) if kind == "BuildError" else TaskError(message),
                                    time.monotonic() - t0))
            continue
        folder = state.path.parent / PROJECTS_DIR / key
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        _unpack(data, folder)
        manifest = json.loads((folder / MANIFEST_NAME).read_text())
        bar.grow(manifest["candidates"])
        bar.update(manifest["candidates"])
        finish(key, folder, t0)


def _write_manifest(out: Path, report: BatchReport) -> dict:
    tasks = []
    for key, p in report.projects.items():
        path = out / PROJECTS_DIR / key / MANIFEST_NAME
        if path.exists():
            for t in json.loads(path.read_text())["tasks"]:
                tasks.append({**t, "project": key})
    manifest = {
        "sources": {k: vars(p) for k, p in report.projects.items()},
        "accepted": len(tasks),
        "multi_region": sum(t["regions"] > 1 for t in tasks),
        "candidates": sum(p.candidates for p in report.projects.values()),
        "gates": {g: sum(p.gates.get(g, 0) for p in report.projects.values()) for g in GATES},
        "duration": round(report.duration, 1),
        "tasks": tasks,
    }
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
