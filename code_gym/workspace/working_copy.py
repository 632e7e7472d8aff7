"""Per-episode working copy of a repository, snapshots, and the diffs between them.

A snapshot records each file's stat key (mtime, size, inode, mode and ctime: `touch -r` sets
mtime back, nothing but the kernel's clock sets ctime); content is read only for files whose key
changed (or whose ctime is not older than the previous scan, as git does for "racily clean"
entries), and unchanged content is read lazily from the pristine source. So a step that edits one file of a
500-file repo reads one file, and its diff is computed in-process, with no subprocess. A file over
`hostfs.MAX_DIFF_BYTES` is kept as its size and hash (`Digest`) and diffed as binary: a step that
writes gigabytes costs the host process no memory.

Where this process may mount (root), everything an episode writes lives on a tmpfs of
`disk_quota` bytes (`CODE_GYM_DISK_QUOTA`, default 1 GiB) mounted nosuid and nodev: the overlay's
upper dir, or the whole copy.
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from code_gym.workspace.base_commit import base_commit, hide_source_git
from code_gym.util.hostfs import Digest, StatKey, fs_bytes
from code_gym.workspace.diffs import FileDiff, file_diff, git_mode, is_link, renamed_diff
from code_gym.util.hostfs import (discard, mount_overlay, mount_quota, overlay_supported, owned_prefix, read_bounded,
                             read_entry, stat_key, unmount, wait_for_cleanup, walk)

# The initial scan of a copy reads files whose mtime is this close to it (a source just written).
_RACY_NS = 100_000_000
_MTIME, _CTIME = 0, 4  # in a StatKey
_CLOCK = ".clock"  # beside the repository, on its file system: stamped by each scan (`Workspace._clock`)
DEFAULT_DISK_QUOTA = 1 << 30
# files and folders an episode may add beyond its repository's: each step's scan walks them all
# (~23 us each here); unbounded, 300k empty files made every later step take 7 s
EXTRA_INODES = 100_000


@functools.lru_cache(maxsize=256)
def _entries(source: Path) -> int:
    """Files and folders in a task's repository (read-only, so counted once per process)."""
    return sum(len(dirs) + len(files) + 1 for _, dirs, files in os.walk(source))


def default_disk_quota() -> int:
    """$CODE_GYM_DISK_QUOTA (bytes; 0: none) when set, else DEFAULT_DISK_QUOTA."""
    value = os.environ.get("CODE_GYM_DISK_QUOTA")
    if value is None:
        return DEFAULT_DISK_QUOTA
    if not value.isdecimal():
        raise ValueError(f"CODE_GYM_DISK_QUOTA must be a number of bytes (0: no quota), got {value!r}")
    return int(value)


@dataclass
class Snapshot:
    keys: dict[str, StatKey]
    content: dict[str, bytes | Digest]  # files read at scan time; others equal the pristine source
    horizon: int  # the ctime a write got as the scan began (`Workspace._clock`)


def _skip_git(folder: str, names: list[str]) -> list[str]:
    return [".git"] if ".git" in names else []



_SOURCE_SCANS: dict[tuple[str, int], Snapshot] = {}
_OPEN: "weakref.WeakSet[Workspace]" = weakref.WeakSet()


@atexit.register
def _close_open_workspaces() -> None:
    """An interpreter that exits without env.close() still unmounts and removes its workspaces."""
    for ws in list(_OPEN):
        ws.close()
    wait_for_cleanup()


class Workspace:
    """A writable copy of `source` for one episode: an overlayfs mount when permitted, else a copy.

    Never a hardlink copy: an agent writing through a hardlink would corrupt the pristine task.
    The source's own `.git` is never part of the copy; with `git=True` the workspace gets a fresh
    repository with exactly one commit of the starting files (`base_commit`), so `git diff` and
    `git status` work and no history can leak a fix.

    `disk_quota` (bytes; None: `default_disk_quota()`, 0: none) caps what the episode can write, where
    this process may mount a tmpfs (root); `self.quota` is the cap in force (0: none).
    """

    def __init__(self, source: Path, strategy: str = "auto", parent: str | Path | None = None, git: bool = False,
                 disk_quota: int | None = None):
        if strategy not in ("auto", "overlay", "copy"):
            raise ValueError(f"workspace strategy must be 'auto', 'overlay' or 'copy', got {strategy!r}")
        quota = default_disk_quota() if disk_quota is None else disk_quota
        if quota < 0:
            raise ValueError(f"disk_quota must be a number of bytes >= 0 (0: no quota), got {quota}")
        self.source = Path(source).resolve()
        self.base = Path(tempfile.mkdtemp(prefix=owned_prefix("ws"), dir=parent))
        self.root = self.base / "repo"
        self.strategy = "copy"
        inodes = EXTRA_INODES + _entries(self.source) if EXTRA_INODES else None
        self.quota = quota if quota and overlay_supported() and mount_quota(self.base, quota, inodes) else 0
        _OPEN.add(self)  # from here on close() unmounts what is mounted
        self.root.mkdir()
        (self.base / _CLOCK).touch()
        commit = base_commit(self.source) if git else None
        if strategy != "copy" and overlay_supported():
            upper = self.base / "upper"
            upper.mkdir()
            (self.base / "work").mkdir()
            # The base repository is written into the writable layer. Stacked as a second read-only
            # layer instead, a freshly built one left the repository unimportable through the warm
            # test runner's mount in 5 of 50 episodes ("No module named ..."); written, in 0 of 75.
            if commit:
                hidden = hide_source_git(self.source, commit.write(upper))
            else:
                hidden = not (self.source / ".git").exists()
            if hidden and mount_overlay(self.source, upper, self.base / "work", self.root):
                self.strategy = "overlay"
            else:
                shutil.rmtree(upper, ignore_errors=True)
        if self.strategy == "copy":
            if strategy == "overlay":
                self.close()
                raise RuntimeError("overlay workspace requested but overlayfs cannot be mounted here (needs root; "
                                   "a source with its own .git also needs git=True)")
            shutil.copytree(self.source, self.root, symlinks=True, dirs_exist_ok=True, ignore=_skip_git)
            if commit:
                commit.write(self.root)
        self.initial = self._initial_snapshot()
        self.last = self.initial

    def _initial_snapshot(self) -> Snapshot:
        # An overlay shows the source's own files (same stat keys on one file system), so the source's
        # scan is reused across episodes. Were a key to differ, the file would merely be re-read once.
        if self.strategy != "overlay":
            return self.scan(None)
        stamp = (str(self.source), self.source.stat().st_mtime_ns)
        horizon = self._clock()
        cached = _SOURCE_SCANS.get(stamp)
        if cached is None:
            keys = {path: stat_key(st) for path, st in walk(self.source).items()}
            cached = _SOURCE_SCANS[stamp] = Snapshot(keys, {}, horizon)
        # The source does not change, so a file whose key still matches, with a ctime before now,
        # is untouched: any write from now on stamps a newer ctime.
        return Snapshot(dict(cached.keys), {}, horizon)

    def _clock(self) -> int:
        """The ctime a write on the workspace's file system gets now: that of a file beside the
        repository, stamped here. Every later write stamps one at least as new (the kernel's clock,
        which nothing in a sandbox sets), so a file whose key is unchanged and whose ctime is older
        than a scan's horizon was not written since that scan. Git's "racily clean" check compares
        with its index file's mtime the same way. A clock read instead would need a margin for
        the file system's coarse stamps: with 100 ms, every file of a fresh copy was re-read."""
        clock = self.base / _CLOCK
        os.utime(clock)
        return os.stat(clock).st_ctime_ns

    def _pristine(self, path: str) -> bytes | Digest | None:
        full = self.source / path
        return read_bounded(full) if full.exists() or full.is_symlink() else None

    def content(self, snap: Snapshot, path: str) -> bytes | Digest | None:
        if path not in snap.keys:
            return None
        if path in snap.content:
            return snap.content[path]
        return self._pristine(path)

    def scan(self, prev: Snapshot | None) -> Snapshot:
        started, horizon = time.time_ns(), self._clock()
        stats = walk(self.root)
        keys = {path: stat_key(st) for path, st in stats.items()}
        content: dict[str, bytes | Digest] = {}
        for path, key in keys.items():
            same = prev is not None and prev.keys.get(path) == key
            if same and key[_CTIME] < prev.horizon:  # the same file (`_clock`)
                if path in prev.content:
                    content[path] = prev.content[path]
                continue
            if prev is None and key[_MTIME] < started - _RACY_NS:
                continue  # initial scan: untouched copies of the source
            data = read_bounded(self.root / path)
            if prev is None and data == self._pristine(path):
                continue
            if same and path not in prev.content and data == self._pristine(path):
                continue  # re-read only for its recent ctime (a fresh copy), still the source's
            content[path] = data
        return Snapshot(keys, content, horizon)

    def diff(self, old: Snapshot, new: Snapshot) -> list[FileDiff]:
        diffs: list[FileDiff] = []
        paths = sorted(set(old.keys) | set(new.keys))
        gone: dict[tuple[bytes | Digest, bool], list[str]] = {}  # (content, is a link) -> deleted paths
        born: list[str] = []
        for path in paths:
            if path in new.content or path not in new.keys or path not in old.keys or path in old.content:
                a, b = self.content(old, path), self.content(new, path)
                if a == b and git_mode(old.keys.get(path)) == git_mode(new.keys.get(path)):
                    continue
                if a is None:
                    born.append(path)
                    continue
                if b is None:
                    gone.setdefault((a, is_link(old.keys[path])), []).append(path)
                    continue
                diffs.append(file_diff(path, a, b, old.keys[path], new.keys[path]))
        for path in born:
            b = self.content(new, path)
            was = gone.get((b, is_link(new.keys[path]))) if b else None
            if was:
                moved = was.pop(0)
                diffs.append(renamed_diff(moved, path, old.keys[moved], new.keys[path]))
            else:
                diffs.append(file_diff(path, None, b, None, new.keys[path]))
        for (a, _), left in gone.items():
            diffs += [file_diff(path, a, None, old.keys[path], None) for path in left]
        return sorted(diffs, key=lambda d: fs_bytes(d.path))  # git's order: by the bytes of the name

    def scan_changes(self) -> list[FileDiff]:
        """The changes since the previous call (or since the start)."""
        new = self.scan(self.last)
        diffs = self.diff(self.last, new)
        self.last = new
        return diffs

    def patch(self) -> list[FileDiff]:
        """The cumulative changes since the start of the episode, as of the last `scan_changes()`."""
        return self.diff(self.initial, self.last)

    def changed_files(self) -> dict[str, bytes | None]:
        """Final content of each path changed since the start (None: deleted). A file the scans kept
        as a Digest is read from the workspace here, whole (the grader writes it)."""
        changed = {}
        for path in sorted(set(self.initial.keys) | set(self.last.keys)):
            new = self.content(self.last, path)
            if self.content(self.initial, path) != new:
                changed[path] = read_entry(self.root / path) if isinstance(new, Digest) else new
        return changed

    def close(self, wait: bool = True) -> None:
        """Unmount and remove the workspace; `wait=False` removes the files in a background thread
        (deleting even a few files costs milliseconds on a busy disk: not on the reset path)."""
        if self in _OPEN:
            if self.strategy == "overlay":
                unmount(self.root)
            if self.quota:
                unmount(self.base)  # frees everything the episode wrote at once
        _OPEN.discard(self)
        if wait:
            shutil.rmtree(self.base, ignore_errors=True)
        else:
            discard(self.base)
