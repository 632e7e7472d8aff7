"""Build tasks from many projects in one run: sdists, requirement specs (`name==version`, fetched
from the package index as an sdist; nothing of the project runs to fetch it), project folders, a
folder of them, or a file listing them.

The run is resumable. `OUT/build-state.json` records each source's status: a finished project
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
import json
import os
import re
import shutil
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from tqdm import tqdm

from code_gym.languages.python.builder.pipeline import GATES, MANIFEST_NAME, BuildOptions, build_tasks
from code_gym.languages.python.builder.project import SDIST_SUFFIXES, BuildError
from code_gym.util.hostfs import owned_prefix
from code_gym.tasks.loaders.folder import task_id
from code_gym.util.table import format_table
from code_gym.tasks.task import TaskError

STATE_NAME = "build-state.json"
PROJECTS_DIR = "projects"
DOWNLOADS_DIR = "downloads"
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")
# the messages of a BuildError that mean the project's environment is missing something
_ENV_WORDS = ("do not run", "dependencies", "environment", "importable", "requirement")


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of projects (each subfolder and sdist in it a source), said
    so the per-project reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir() or any((path / m).exists() for m in _PROJECT_MARKERS):
        return None
    return (f"{item} has no pyproject.toml, setup.py or setup.cfg, so it was read as a folder of projects "
            "(each subfolder and sdist in it one project)")


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: an sdist, a `name==version` spec, a project folder
    (one with pyproject.toml, setup.py or setup.cfg), a folder of projects and sdists, or a text
    file listing any of these one a line (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file() and not item.endswith(SDIST_SUFFIXES):
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif folder_of_projects := read_as_folder_of_projects(item):
            inner = sorted(p for p in path.iterdir() if p.is_dir() or p.name.endswith(SDIST_SUFFIXES))
            if not inner:
                raise BuildError(f"{folder_of_projects}, and it holds none: pass a project folder, "
                                 "sdists or name==version specs")
            out += [str(p) for p in inner]
        elif path.exists() or _REQUIREMENT.match(item):
            out.append(item)
        else:
            raise BuildError(f"{item}: not a file, a folder or a `name==version` requirement")
    seen: set[str] = set()
    return [s for s in out if not (s in seen or seen.add(s))]


def source_key(source: str) -> str:
    name = Path(source).name if not _REQUIREMENT.match(source) or Path(source).exists() else source
    for suffix in SDIST_SUFFIXES:
        name = name.removesuffix(suffix)
    return task_id(name.replace("==", "-"))


def fetch_sdist(spec: str, folder: Path) -> Path:
    """The sdist of `name==version` from the package index (PEP 503/691, through pypi-simple),
    its digest checked; kept in `folder`, so a second run downloads nothing."""
    from pypi_simple import PyPISimple

    name, version = spec.split("==")
    folder.mkdir(parents=True, exist_ok=True)
    with PyPISimple() as client:
        page = client.get_project_page(name)
        sdists = [p for p in page.packages if p.version == version and p.package_type == "sdist"]
        if not sdists:
            raise BuildError(f"{spec}: the index has no sdist of this version (the builder needs the source "
                             f"with its tests; pick a version that has a .tar.gz)")
        target = folder / sdists[0].filename
        if not target.exists():
            client.download_package(sdists[0], path=str(target) + ".part", verify=True)
            os.replace(str(target) + ".part", target)
    return target


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
    environment: str = ""  # "" (code-gym's own interpreter), "built", or "cached"
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
    if not isinstance(exc, (BuildError, TaskError)):  # not a refusal: a failure of the builder or the network
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


def _build_remote(name: str, archive: bytes, options: BuildOptions) -> tuple[bytes | None, str]:
    """On a Ray worker: build the project shipped as `archive` (an sdist's bytes or a packed
    folder); returns the packed output folder, or None and the error."""
    with tempfile.TemporaryDirectory(prefix=owned_prefix("ray-build")) as work:
        work = Path(work)
        if name.endswith(SDIST_SUFFIXES):
            source = work / name
            source.write_bytes(archive)
        else:
            source = work / name
            source.mkdir()
            _unpack(archive, source)
        try:
            build_tasks(source, work / "out", replace(options, progress=False))
        except (BuildError, TaskError) as exc:
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
        self.tasks = 0

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


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` (see the module docstring); `options.workers` sandbox runs
    at once locally; `ray_address` ('auto', an address, or 'local' for a Ray instance on this
    machine) sends each project to a Ray cluster instead. With `max_minutes`, no project starts
    after that many minutes (the ones left stay pending: run again to go on). With `retry_failed`,
    projects that failed (`environment`, `error`) in an earlier run are built again."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = _State(out)
    started = time.monotonic()
    keys = {}
    for source in sources:
        key = source_key(source)
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
        source = keys[key]
        if _REQUIREMENT.match(source) and not Path(source).exists():
            return fetch_sdist(source, out / DOWNLOADS_DIR)
        return Path(source)

    def finish(key: str, built: Path, t0: float) -> None:
        manifest = json.loads((built / MANIFEST_NAME).read_text())
        _place(out, key, _result_of(keys[key], manifest, time.monotonic() - t0), state)

    def local(key: str) -> None:
        if deadline and time.monotonic() > deadline:
            return
        t0 = time.monotonic()
        state.set(key, ProjectResult(keys[key], "running"))
        try:
            build_tasks(fetch(key), out / PROJECTS_DIR / key, replace(options, progress=False), bar=bar, slots=slots)
        except Exception as exc:  # noqa: BLE001 - one project's failure, of any kind, must not end a long run
            state.set(key, _failure(keys[key], exc, time.monotonic() - t0))
            return
        finish(key, out / PROJECTS_DIR / key, t0)

    try:
        if ray_address:
            _run_on_ray(todo, keys, fetch, finish, state, options, ray_address, bar, deadline)
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


def _run_on_ray(todo, keys, fetch, finish, state: _State, options: BuildOptions, address: str, bar, deadline) -> None:
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
        pending[remote.remote(source.name, archive, options)] = (key, time.monotonic())
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
