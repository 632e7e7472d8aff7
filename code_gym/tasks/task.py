"""Task model and loader: a task is a folder with a manifest, a starting repo, hidden tests and a
reference patch. See docs/tasks.md for the format."""
from __future__ import annotations

import os
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_gym.languages import NAMES as LANGUAGES
from code_gym.languages import get as get_language

MANIFEST = "task.toml"
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class TaskError(ValueError):
    """A task folder is invalid. The message names the file and the field."""


@dataclass(frozen=True)
class Timeouts:
    command: float = 30.0
    tests: float = 60.0


@dataclass(frozen=True)
class Task:
    id: str
    statement: str
    repo: Path
    hidden_dir: Path
    visible_tests: tuple[str, ...]
    hidden_tests: tuple[str, ...]
    protected_paths: tuple[str, ...]
    reference_patch: str
    kind: str = "bugfix"
    test_command: str = "python -m pytest"
    timeouts: Timeouts = field(default_factory=Timeouts)
    root: Path | None = None
    # SWE-bench style: pytest node ids that must go from failing to passing / keep passing
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    image: str | None = None  # container image for the Docker backend (None: the default image)
    environment: Any = None  # task.toml's [environment], as its language reads it (None: the language's default)
    language: str = "python"  # its adapter in code_gym.languages: how tests run, what the grader owns, the audit

    def is_protected(self, path: str) -> bool:
        """True when `path` (relative to the repo root) lies under a protected prefix or is a test file."""
        path = posixpath.normpath(path)
        if path in self.visible_tests or path in self.hidden_tests:
            return True
        return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in self.protected_paths)

    def original_file(self, path: str) -> bytes | None:
        """The starting content of `path` in the task's repository (None: the file is new, or
        `path` leaves the repository or names a symlink)."""
        norm = posixpath.normpath(path)
        if norm.startswith("../") or norm.startswith("/") or norm == "..":
            return None
        full = self.repo / norm
        return full.read_bytes() if full.is_file() and not full.is_symlink() else None


def _require(data: dict, key: str, kind: type, where: Path):
    if key not in data:
        raise TaskError(f"{where}: missing field '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: field '{key}' must be {kind.__name__}, got {type(value).__name__}")
    return value


def _str_list(data: dict, key: str, where: Path) -> tuple[str, ...]:
    value = _require(data, key, list, where)
    if not all(isinstance(v, str) and v for v in value):
        raise TaskError(f"{where}: field '{key}' must be a list of non-empty strings")
    for v in value:
        if v.startswith("/") or ".." in Path(v).parts:
            raise TaskError(f"{where}: field '{key}' entry {v!r} must be a relative path inside the repo")
    return tuple(value)


def _node_ids(data: dict, key: str, where: Path) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaskError(f"{where}: field '{key}' must be a list of test ids (\"tests/test_x.py::test_y\")")
    return value


def _inside(folder: Path, rel: str) -> bool:
    """Whether `rel` (a path the manifest names) is in `folder` once every link is resolved: the
    red team named "../../secret.txt" as the reference patch, and linked a hidden test to a host
    file, and load_task read both."""
    real = os.path.realpath(folder / rel)
    return not os.path.isabs(rel) and real.startswith(os.path.realpath(folder) + os.sep)


def load_task(folder: str | Path) -> Task:
    """Load and check one task folder. Raises TaskError naming the file and field at fault."""
    folder = Path(folder).resolve()
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise TaskError(f"{folder}: no {MANIFEST}; a task folder holds {MANIFEST}, repo/, hidden/ and the reference patch")
    try:
        data = tomllib.loads(manifest.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{manifest}: not valid TOML: {exc}") from None
    task_id = _require(data, "id", str, manifest)
    if not _ID_RE.match(task_id):
        raise TaskError(f"{manifest}: field 'id' {task_id!r} must be lower-case letters, digits and dashes")
    if task_id != folder.name:
        raise TaskError(f"{manifest}: field 'id' {task_id!r} must equal the folder name {folder.name!r}")
    statement = _require(data, "statement", str, manifest).strip()
    if not statement:
        raise TaskError(f"{manifest}: field 'statement' is empty")
    kind = data.get("kind", "bugfix")
    if kind not in ("bugfix", "feature"):
        raise TaskError(f"{manifest}: field 'kind' must be 'bugfix' or 'feature', got {kind!r}")
    repo = folder / "repo"
    if not repo.is_dir():
        raise TaskError(f"{folder}/repo: missing; the starting repository goes in repo/")
    hidden_dir = folder / "hidden"
    visible = _str_list(data, "visible_tests", manifest)
    hidden = _str_list(data, "hidden_tests", manifest)
    for rel in visible:
        if not _inside(repo, rel) or not (repo / rel).is_file():
            raise TaskError(f"{manifest}: field 'visible_tests' names {rel!r}, which is not a file in repo/")
    for rel in hidden:
        if not _inside(hidden_dir, rel) or not (hidden_dir / rel).is_file():
            raise TaskError(f"{manifest}: field 'hidden_tests' names {rel!r}, which is not a file in hidden/ "
                            "(a link to outside the task folder counts as none)")
        # A hidden test may replace an older version of itself in repo/ (a SWE-bench test_patch
        # changes existing test files), but not an identical copy.
        if (repo / rel).is_file() and (repo / rel).read_bytes() == (hidden_dir / rel).read_bytes():
            raise TaskError(f"{manifest}: field 'hidden_tests' names {rel!r}, which also exists in repo/ (the agent would see it)")
    protected = _str_list(data, "protected_paths", manifest) if "protected_paths" in data else ("tests/",)
    patch_name = _require(data, "reference_patch", str, manifest)
    patch_file = folder / patch_name
    if not _inside(folder, patch_name) or not patch_file.is_file():
        raise TaskError(f"{manifest}: field 'reference_patch' names {patch_name!r}, which is not a file")
    language = data.get("language", "python")
    if language not in LANGUAGES:
        raise TaskError(f"{manifest}: field 'language' must be one of {', '.join(LANGUAGES)}, got {language!r}")
    test_command = data.get("test_command", get_language(language).default_test_command)
    if not isinstance(test_command, str) or not test_command.strip():
        raise TaskError(f"{manifest}: field 'test_command' must be a non-empty string")
    raw_timeouts = data.get("timeouts", {})
    if not isinstance(raw_timeouts, dict):
        raise TaskError(f"{manifest}: [timeouts] must be a table")
    for key, value in raw_timeouts.items():
        if key not in ("command", "tests"):
            raise TaskError(f"{manifest}: [timeouts] has unknown key {key!r}: use 'command' or 'tests'")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise TaskError(f"{manifest}: [timeouts] {key} must be a positive number of seconds, got {value!r}")
    f2p = tuple(_node_ids(data, "fail_to_pass", manifest))
    p2p = tuple(_node_ids(data, "pass_to_pass", manifest))
    image = data.get("image")
    if image is not None and (not isinstance(image, str) or not image):
        raise TaskError(f"{manifest}: field 'image' must be a non-empty string (a container image name)")
    return Task(
        environment=get_language(language).read_environment(data.get("environment"), manifest),
        id=task_id,
        statement=statement,
        repo=repo,
        hidden_dir=hidden_dir,
        visible_tests=visible,
        hidden_tests=hidden,
        protected_paths=protected,
        reference_patch=patch_file.read_text(),
        kind=kind,
        test_command=test_command,
        timeouts=Timeouts(**{k: float(v) for k, v in raw_timeouts.items()}),
        root=folder,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        image=image,
        language=language,
    )


def bundled_tasks_dir() -> Path:
    """The default pool: $CODE_GYM_TASKS when set, else `tasks/` of a source checkout, else the
    copy shipped in the wheel."""
    override = os.environ.get("CODE_GYM_TASKS")
    if override:
        if not Path(override).is_dir():
            raise TaskError(f"CODE_GYM_TASKS={override} is not a folder; point it at a folder of task folders")
        return Path(override)
    package = Path(__file__).resolve().parents[1]  # code_gym/
    for candidate in (package.parent / "tasks", package / "bundled_tasks"):
        if candidate.is_dir() and any(candidate.glob(f"*/{MANIFEST}")):
            return candidate
    raise TaskError("no bundled tasks found: reinstall code-gym, or pass a task folder")


def load_task_dir(folder: str | Path) -> list[Task]:
    """Every task under `folder` (a task folder itself, or a folder of task folders), sorted by id."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        return [load_task(folder)]
    found = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
    if not found:
        raise TaskError(f"{folder}: no task folders (none has a {MANIFEST})")
    return [load_task(p) for p in found]


def bundled_tasks() -> list[Task]:
    return load_task_dir(bundled_tasks_dir())


def resolve_task(spec: "str | Path | Task", pool: list[Task] | None = None) -> Task:
    """A Task from a Task, a folder path, or a bundled task id."""
    if isinstance(spec, Task):
        return spec
    path = Path(spec)
    if (path / MANIFEST).is_file():
        return load_task(path)
    tasks = pool if pool is not None else bundled_tasks()
    for task in tasks:
        if task.id == str(spec):
            return task
    raise TaskError(f"unknown task {spec!r}: pass a task folder or one of: {', '.join(t.id for t in tasks)}")
