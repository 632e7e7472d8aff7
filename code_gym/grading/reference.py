"""The reference solution of a task: the files its patch changes (`reference_changes`) and the
test ids the task's runner collects with it applied (`reference_test_ids`, cached per process and
on disk)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from code_gym import languages
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.util.hostfs import cache_root, read_entry, walk
from code_gym.sandbox import Limits, make_sandbox
from code_gym.tasks.task import Task, TaskError
from code_gym.workspace.working_copy import Workspace


def patch_changes(repo: Path, patch: str) -> dict[str, bytes | None]:
    """The files a unified diff changes in `repo`, with their new content: `git apply` on a copy
    (applying a patch runs none of its code). ValueError, with git's message, when it does not apply."""
    if not patch.strip():
        return {}
    ws = Workspace(repo, strategy="copy")
    try:
        done = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=ws.root, input=patch.encode(),
                              capture_output=True)
        if done.returncode != 0:
            raise ValueError(done.stderr.decode(errors="replace").strip())
        ws.scan_changes()
        return ws.changed_files()
    finally:
        ws.close()


def reference_changes(task: Task) -> dict[str, bytes | None]:
    """The files the reference patch changes, with their new content (applied with `git apply`)."""
    try:
        return patch_changes(task.repo, task.reference_patch)
    except ValueError as exc:
        raise TaskError(f"{task.root}/solution.patch: does not apply to repo/: {exc}") from None


_COLLECTED: dict[tuple, tuple[str, ...] | None] = {}


def reference_test_ids(task: Task, isolation: str = "auto") -> tuple[str, ...] | None:
    """The test ids the runner collects from the visible and hidden tests with the reference solution
    applied, or None when that collection fails. Cached per process, and on disk (under
    `code_gym.util.hostfs.cache_root()`) by a hash of everything that decides them."""
    key = (task.id, str(task.root), str(task.repo), task.test_command, task.visible_tests, task.hidden_tests,
           hashlib.sha1(task.reference_patch.encode()).hexdigest())
    if key not in _COLLECTED:
        stored = _stored_ids_path(task)
        try:
            _COLLECTED[key] = tuple(json.loads(stored.read_text()))
        except (OSError, ValueError):
            ids = _COLLECTED[key] = _collect_reference(task, isolation)
            if ids is not None:
                store_atomically(stored, json.dumps(list(ids)))
    return _COLLECTED[key]


def task_digest(task: Task, *extra: str) -> str:
    """A hash of everything that decides a task's reference behaviour (test command, test files,
    reference patch, repository and hidden files), plus `extra` texts."""
    digest = hashlib.sha1()
    for text in (task.test_command, *task.visible_tests, "|", *task.hidden_tests, "|", task.reference_patch, *extra):
        digest.update(text.encode() + b"\0")
    for root in (task.repo, task.hidden_dir):
        for path in sorted(walk(root)):
            digest.update(path.encode("utf-8", "surrogatepass") + b"\0" + read_entry(root / path) + b"\0")
    return digest.hexdigest()


def _stored_ids_path(task: Task) -> Path:
    return cache_root() / "test-ids" / f"{task_digest(task)}.json"


def store_atomically(path: Path, text: str) -> None:
    """Write atomically (concurrent graders may store the same file); a read-only cache is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as fh:
            fh.write(text)
        os.replace(fh.name, path)
    except OSError:
        pass


def _collect_reference(task: Task, isolation: str) -> tuple[str, ...] | None:
    try:
        changes = reference_changes(task)
    except TaskError:
        return None
    copy = Workspace(task.repo, strategy="copy")
    try:
        apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        language = languages.of(task)
        sandbox = make_sandbox(isolation, copy.root, Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else (), image=task.image,
                               runtime=language.runtime(task))
        try:
            run = sandbox.exec(language.collect_command(task.test_command, task.visible_tests + task.hidden_tests),
                               timeout=task.timeouts.tests)
        finally:
            sandbox.close()
    finally:
        copy.close()
    if run.timed_out or run.exit_code != 0:
        return None
    return language.collected_ids(run.output) or None
