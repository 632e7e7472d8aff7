"""The grader's file policy, the one home of "which paths does the grader own?".

The graded copy keeps the task's own version of a path (`kept_rule`) when it is a test file or a
path the task protects (`Task.is_protected`: rule "protected-path"), or when the task's language
owns it whatever the task says (pytest's configuration, conftest files and start-up hooks for
Python: `Language.grader_owned`). `apply_changes` writes every other change into a pristine copy;
`guarded_keys` stats the files a run's verdict depends on, so that a run that rewrites them is
void. The integrity audit (`code_gym.grading.audit`) reports kept paths as findings; static
rewards skip them.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

from code_gym import languages
from code_gym.util.hostfs import walk
from code_gym.tasks.task import Task

# errors of a path the patch chose, not of the host: its change is skipped, the rest graded
_PATH_ERRORS = frozenset({errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP})


def kept_rule(task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
    """Why the graded copy keeps the task's version of `path` (an audit rule name), or None when
    the agent's change to it goes in."""
    if task.is_protected(path):
        return "protected-path"
    return languages.of(task).grader_owned(path, old, new)


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
            if not _plain(path) or kept_rule(task, path, task.original_file(path), data):
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
    return kept_rule(task, path, task.original_file(path), None) is not None


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
    language = languages.of(task)
    keys = {}
    for path, st in walk(root).items():
        if task.is_protected(path) or path in extra or language.guarded(path):
            keys[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return keys
