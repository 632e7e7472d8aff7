"""The grader's file policy: which of the agent's changes reach the graded copy.

Test files and the task's protected paths (`Task.is_protected`) always keep the task's version,
and so do the files the grader owns whatever the task says: conftest files, pytest's
configuration and the interpreter's start-up hooks. `apply_changes` writes the rest into a
pristine copy; `guarded_keys` stats the files a run's verdict depends on, so that a run that
rewrites them is void. The integrity audit (`code_gym.grading.audit`) reports the same paths as
findings; static rewards skip them.
"""
from __future__ import annotations

import configparser
import errno
import os
import posixpath
import shutil
import stat
import tomllib
from pathlib import Path

from code_gym.util.hostfs import walk
from code_gym.tasks.task import Task

CONFTEST = "conftest.py"
# every file pytest 9 reads its configuration from, besides setup.cfg and pyproject.toml (their
# pytest sections): _pytest/config/findpaths.py, locate_config
PYTEST_CONFIGS = frozenset({"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini"})
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
# errors of a path the patch chose, not of the host: its change is skipped, the rest graded
_PATH_ERRORS = frozenset({errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP})
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
    the grader owns (conftest, pytest configuration, start-up hooks). Returns the skipped paths.

    A patch may turn a package folder into a module file of the same name, or the reverse: what
    stands in the way is removed from the copy first (`_make_room`), unless the grader keeps it.
    A change that cannot be applied for its path alone (a file where a test's folder goes, a name
    too long) is skipped like a kept file, so that the rest is still graded. Paths go in sorted
    order: a deleted file comes before the files of the folder that replaced it."""
    ignored = []
    for path in sorted(changes):
        data = changes[path]
        try:
            if not _plain(path) or task.is_protected(path) or grader_owned(path, task.original_file(path), data):
                ignored.append(path)
            elif data is None:
                _remove_file(root, path)
            elif _make_room(task, root, path):
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_bytes(data)
            else:
                ignored.append(path)
        except OSError as exc:
            if exc.errno not in _PATH_ERRORS:
                raise  # the host's trouble (disk full, I/O error), not the patch's: no grade to give
            ignored.append(path)
    return ignored


def _plain(path: str) -> bool:
    """Whether `path` is relative and names no "." or ".." (so it stays inside the copy); the
    workspace's scans give no other kind, a caller of `grade` might."""
    return not path.startswith("/") and all(part not in ("", ".", "..") for part in path.split("/"))


def _remove_file(root: Path, path: str) -> None:
    """Delete the file or link at `path` in the copy, if one is there (a folder is left alone)."""
    found = _obstacle(root, path)
    if found and found[0] == path and not stat.S_ISDIR(found[1].st_mode):
        os.unlink(root / path)


def _make_room(task: Task, root: Path, path: str) -> bool:
    """Clear the way for a file at `path` in the copy: a file or link where one of its folders goes,
    or a folder (with everything in it) where it goes. False, with nothing removed, when what is in
    the way is the grader's to keep: a test, protected or grader-owned file, a folder holding one,
    or a folder a test is laid into."""
    if any(test.startswith(path + "/") for test in task.visible_tests + task.hidden_tests):
        return False
    found = _obstacle(root, path)
    if found is None:
        return True
    where, st = found
    if not stat.S_ISDIR(st.st_mode):
        if where != path and _kept(task, where):
            return False
        os.unlink(root / where)
        return True
    if any(_kept(task, f"{path}/{inner}") for inner in walk(root / path)):
        return False
    shutil.rmtree(root / path)  # lstat said a folder, not a link: rmtree removes links inside as links
    return True


def _obstacle(root: Path, path: str) -> tuple[str, os.stat_result] | None:
    """The first entry on the way to `path` in `root` that is not a folder (a file or link where a
    folder goes), else the entry at `path` itself, with its lstat; None when nothing is there.
    Each folder on the way is checked before the next is looked up, so no link is ever followed."""
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        where = "/".join(parts[:depth])
        try:
            st = os.lstat(root / where)
        except FileNotFoundError:
            return None
        if depth == len(parts) or not stat.S_ISDIR(st.st_mode):
            return where, st
    return None


def _kept(task: Task, path: str) -> bool:
    """Whether the graded copy keeps the task's own file at `path` whatever the patch does."""
    return task.is_protected(path) or grader_owned(path, task.original_file(path), None) is not None


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
