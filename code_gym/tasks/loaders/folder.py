"""Write a task folder in the bundled format (task.toml, repo/, hidden/, solution.patch).

Every loader and the builder end here, so the env, `code-gym tasks validate` and the grader read
their output exactly like a hand-written task."""
from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path

from code_gym.util.hostfs import make_dirs_beneath, write_beneath
from code_gym.tasks.task import MANIFEST, Task, load_task

PATCH_NAME = "solution.patch"
# task.toml keys in the order they are written; tables ([timeouts], [source]) go last
_KEY_ORDER = ("id", "kind", "language", "statement", "visible_tests", "hidden_tests", "protected_paths", "reference_patch",
              "test_command", "fail_to_pass", "pass_to_pass", "image")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def task_id(text: str) -> str:
    """A valid task id from any name: lower-case, runs of other characters become one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "task"


def _escape_control(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def _toml_string(value: str) -> str:
    if "\n" in value:
        body = value.replace("\\", "\\\\").replace('"', '\\"')
        return '"""\n' + _CONTROL.sub(_escape_control, body) + '"""'
    return _CONTROL.sub(_escape_control, json.dumps(value, ensure_ascii=False))


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to task.toml")


def dump_manifest(data: Mapping) -> str:
    """task.toml text for `data` (scalars, lists, and one level of tables); checked by reading it back."""
    keys = [k for k in _KEY_ORDER if k in data] + sorted(k for k in data if k not in _KEY_ORDER)
    lines = [f"{k} = {_toml_value(data[k])}" for k in keys if not isinstance(data[k], Mapping)]
    for k in keys:
        if isinstance(data[k], Mapping):
            lines += ["", f"[{k}]"] + [f"{sub} = {_toml_value(v)}" for sub, v in data[k].items()]
    text = "\n".join(lines) + "\n"
    if tomllib.loads(text) != json.loads(json.dumps(data)):
        raise AssertionError("task.toml writer lost information")  # a bug here, not bad input
    return text


def write_task(dest: Path, manifest: Mapping, fill_repo: Callable[[Path], None],
               hidden: Mapping[str, bytes | str], reference_patch: str) -> Task:
    """Write a task folder at `dest` (replacing one that is there) and load it back.

    `fill_repo(folder)` puts the starting repository into `folder`; `hidden` maps repo-relative
    paths to hidden test contents. The folder is built beside `dest` and renamed into place, so a
    reader never sees half a task."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent)) / dest.name
    try:
        (staging / "repo").mkdir(parents=True)
        fill_repo(staging / "repo")
        (staging / "hidden").mkdir()
        for rel, content in hidden.items():  # beneath hidden/ only, whatever the path (loaders' data may be hostile)
            make_dirs_beneath(staging / "hidden", posixpath.dirname(rel))
            write_beneath(staging / "hidden", rel, content.encode() if isinstance(content, str) else content,
                          exclusive=True)
        (staging / PATCH_NAME).write_text(reference_patch)
        (staging / MANIFEST).write_text(dump_manifest({"reference_patch": PATCH_NAME, **manifest}))
        load_task(staging)  # raises TaskError before anything replaces `dest`
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)
    return load_task(dest)


def copy_tree(source: Path, target: Path, skip: Callable[[str], bool] = lambda rel: False) -> None:
    """Copy regular files and folders of `source` into `target` (symlinks are left out: a task repo
    must not point outside itself); `skip(relative_path)` drops entries."""
    for dirpath, dirnames, filenames in os.walk(source):
        rel_dir = os.path.relpath(dirpath, source)
        rel_dir = "" if rel_dir == "." else rel_dir
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))
                             and not skip(os.path.join(rel_dir, d)))
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            rel = os.path.join(rel_dir, name)
            src = Path(dirpath) / name
            if src.is_symlink() or not src.is_file() or skip(rel):
                continue
            shutil.copy2(src, target / rel)
