"""The grader's file policy: which of the agent's changes reach the graded copy.

Test files and the task's protected paths (`Task.is_protected`) always keep the task's version,
and so do the files the grader owns whatever the task says: conftest files, pytest's
configuration and the interpreter's start-up hooks. `apply_changes` writes the rest into a
pristine copy; `guarded_keys` stats the files a run's verdict depends on, so that a run that
rewrites them is void. The integrity audit (`code_gym.integrity`) reports the same paths as
findings; static rewards skip them.
"""
from __future__ import annotations

import configparser
import posixpath
import shutil
import tomllib
from pathlib import Path

from code_gym.hostfs import walk
from code_gym.task import Task

CONFTEST = "conftest.py"
# every file pytest 9 reads its configuration from, besides setup.cfg and pyproject.toml (their
# pytest sections): _pytest/config/findpaths.py, locate_config
PYTEST_CONFIGS = frozenset({"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini"})
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
GUARDED_NAMES = frozenset({CONFTEST, "setup.cfg", "pyproject.toml"}) | PYTEST_CONFIGS | STARTUP_HOOKS


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule that makes the grader keep the task's own version of `path`, if any: conftest files,
    pytest configuration and interpreter start-up hooks never come from the agent."""
    name = posixpath.basename(path)
    if name == CONFTEST:
        return "conftest"
    if name in PYTEST_CONFIGS:
        return "test-config"
    if name == "setup.cfg" and _cfg_section(old) != _cfg_section(new):
        return "test-config"
    if name == "pyproject.toml" and _toml_section(old) != _toml_section(new):
        return "test-config"
    if name in STARTUP_HOOKS or name.endswith(".pth"):
        return "startup-hook"
    return None


def _cfg_section(data: bytes | None) -> object:
    if data is None:
        return {}
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(data.decode("utf-8", "replace"))
    except configparser.Error:
        return "unparseable"
    return {s: dict(parser.items(s)) for s in ("tool:pytest", "pytest") if parser.has_section(s)}


def _toml_section(data: bytes | None) -> object:
    if data is None:
        return None
    try:
        doc = tomllib.loads(data.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        return "unparseable"
    return doc.get("tool", {}).get("pytest") if isinstance(doc.get("tool"), dict) else None


def apply_changes(task: Task, root: Path, changes: dict[str, bytes | None]) -> list[str]:
    """Write changed files into a pristine copy, except test files, protected paths and the files
    the grader owns (conftest, pytest configuration, start-up hooks). Returns the skipped paths."""
    ignored = []
    for path, data in changes.items():
        if task.is_protected(path) or grader_owned(path, task.original_file(path), data):
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
    """Copy the hidden tests into a graded copy (they exist nowhere the agent can read)."""
    for rel in task.hidden_tests:
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.hidden_dir / rel, dest)


def guarded_keys(task: Task, root: Path, extra: tuple[str, ...] = ()) -> dict[str, tuple[int, int, int, int]]:
    """Stat keys of the files the tests' verdict depends on: tests, protected paths, conftest,
    configuration and start-up hooks, and the `extra` paths (the run's canary file). ctime cannot
    be set back by the code under test."""
    keys = {}
    for path, st in walk(root).items():
        name = posixpath.basename(path)
        if task.is_protected(path) or path in extra or name in GUARDED_NAMES or name.endswith(".pth"):
            keys[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return keys
