"""Per-episode working copy of a repository, snapshots, and the diffs between them.

A snapshot records each file's stat key; content is read only for files whose key changed (or
whose mtime is too close to the previous scan to trust, as git does for "racily clean" entries),
and unchanged content is read lazily from the pristine source. So a step that edits one file of a
500-file repo reads one file, and its diff is computed in-process, with no subprocess.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import difflib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import queue
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path

IGNORED_NAMES = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
TEMP_PREFIX = "code-gym-"


def owned_prefix(kind: str) -> str:
    """Temp-folder prefix `code-gym-<kind>-<pid>-`: the reaper removes folders whose process is gone."""
    return f"{TEMP_PREFIX}{kind}-{os.getpid()}-"
# Linux stamps mtimes from a coarse clock (a few ms); entries this close to a scan are re-read.
_RACY_NS = 100_000_000

StatKey = tuple[int, int, int, int]


@dataclass
class Snapshot:
    keys: dict[str, StatKey]
    content: dict[str, bytes]  # files read at scan time; others equal the pristine source
    taken_ns: int


@dataclass
class FileDiff:
    """One file's change. `added` holds (new line number, text) of each added line."""
    path: str
    status: str  # "modified", "added", "deleted", "renamed", "mode"
    text: str
    old_path: str | None = None
    binary: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)


def _ignored(name: str) -> bool:
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def _walk(root: Path) -> dict[str, os.stat_result]:
    found: dict[str, os.stat_result] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(root / rel if rel else root))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if _ignored(entry.name):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
            else:
                found[path] = st
    return found


def _key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)


def read_entry(path: Path) -> bytes:
    """File content, or for a symlink its target (as git stores it)."""
    if path.is_symlink():
        return os.readlink(path).encode()
    try:
        return path.read_bytes()
    except (IsADirectoryError, PermissionError, OSError):
        return b""


def _is_binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _mode(key: StatKey | None) -> str:
    if key is None:
        return "100644"
    mode = key[3]
    if (mode & 0o170000) == 0o120000:
        return "120000"
    return "100755" if mode & 0o111 else "100644"


def _hunks(old: str, new: str) -> tuple[list[str], list[tuple[int, str]], list[tuple[int, str]]]:
    """Unified-diff hunk lines (without file headers), the added and the removed lines."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[str] = []
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", line) for line in old_lines[a1:a2]]
                continue
            if tag in ("replace", "delete"):
                out += [_line("-", line) for line in old_lines[a1:a2]]
                removed += [(a1 + k + 1, line.rstrip("\n")) for k, line in enumerate(old_lines[a1:a2])]
            if tag in ("replace", "insert"):
                out += [_line("+", line) for line in new_lines[b1:b2]]
                added += [(b1 + k + 1, line.rstrip("\n")) for k, line in enumerate(new_lines[b1:b2])]
    return out, added, removed


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _line(tag: str, line: str) -> str:
    if line.endswith("\n"):
        return tag + line
    return f"{tag}{line}\n\\ No newline at end of file\n"


def file_diff(path: str, old: bytes | None, new: bytes | None, old_key: StatKey | None = None,
              new_key: StatKey | None = None) -> FileDiff:
    """A git-style diff of one path; `old` None means added, `new` None means deleted."""
    header = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        status, header = "added", header + [f"new file mode {_mode(new_key)}\n"]
    elif new is None:
        status, header = "deleted", header + [f"deleted file mode {_mode(old_key)}\n"]
    else:
        status = "modified"
        if _mode(old_key) != _mode(new_key) and old_key and new_key:
            header += [f"old mode {_mode(old_key)}\n", f"new mode {_mode(new_key)}\n"]
            if old == new:
                return FileDiff(path, "mode", "".join(header))
    old_b, new_b = old or b"", new or b""
    if _is_binary(old_b) or _is_binary(new_b):
        a = "/dev/null" if old is None else f"a/{path}"
        b = "/dev/null" if new is None else f"b/{path}"
        index = f"index {_blob_id(old)}..{_blob_id(new)}\n"
        return FileDiff(path, status, "".join(header) + index + f"Binary files {a} and {b} differ\n", binary=True)
    body, added, removed = _hunks(old_b.decode(), new_b.decode())
    if not body:
        return FileDiff(path, status, "".join(header))
    a = "/dev/null" if old is None else f"a/{path}"
    b = "/dev/null" if new is None else f"b/{path}"
    text = "".join(header + [f"--- {a}\n", f"+++ {b}\n"] + body)
    return FileDiff(path, status, text, added=added, removed=removed)


def _blob_id(data: bytes | None) -> str:
    """git's object id of a blob (all zeros for none): binary hunks need it for `git apply`."""
    if data is None:
        return "0" * 40
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _renamed(old_path: str, new_path: str) -> FileDiff:
    text = (f"diff --git a/{old_path} b/{new_path}\nsimilarity index 100%\n"
            f"rename from {old_path}\nrename to {new_path}\n")
    return FileDiff(new_path, "renamed", text, old_path=old_path)


def render(diffs: list[FileDiff]) -> str:
    return "".join(d.text for d in diffs)


def overlay_supported() -> bool:
    """Whether this process may mount overlayfs (root, or CAP_SYS_ADMIN)."""
    global _OVERLAY_OK
    if _OVERLAY_OK is None:
        _OVERLAY_OK = False
        if hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform == "linux":
            probe = Path(tempfile.mkdtemp(prefix=owned_prefix("probe")))
            try:
                for d in ("lower", "upper", "work", "merged"):
                    (probe / d).mkdir()
                _OVERLAY_OK = _mount_overlay(probe / "lower", probe / "upper", probe / "work", probe / "merged")
                if _OVERLAY_OK:
                    _unmount(probe / "merged")
            finally:
                shutil.rmtree(probe, ignore_errors=True)
    return _OVERLAY_OK


_OVERLAY_OK: bool | None = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _LIBC


_LIBC = None
_MNT_DETACH = 2


def _mount_overlay(lower: Path | str, upper: Path, work: Path, merged: Path) -> bool:
    """mount(2) directly: a `mount` subprocess costs more than the mount itself. `lower` may list
    several read-only layers, top first, separated by ':'."""
    opts = f"lowerdir={lower},upperdir={upper},workdir={work}".encode()
    return _libc().mount(b"overlay", str(merged).encode(), b"overlay", 0, opts) == 0


def _unmount(target: Path) -> None:
    _libc().umount2(str(target).encode(), _MNT_DETACH)


_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "code-gym", "GIT_AUTHOR_EMAIL": "code-gym@localhost", "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "code-gym", "GIT_COMMITTER_EMAIL": "code-gym@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
_OPAQUE = "trusted.overlay.opaque"


@dataclass(frozen=True)
class BaseCommit:
    """The `.git` folder of a repository whose one commit ("base") is a source's files, with no
    other history, refs, remotes or reflog, held in memory: one packed commit is a handful of files."""
    folders: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...]

    def write(self, root: Path) -> Path:
        """Create `root`/.git (a fresh copy each time: the agent may write to it)."""
        git_dir = root / ".git"
        git_dir.mkdir()
        for folder in self.folders:
            (git_dir / folder).mkdir()
        for rel, data in self.files:
            (git_dir / rel).write_bytes(data)
        return git_dir


_BASE_COMMITS: dict[tuple[str, int], BaseCommit] = {}


def base_commit(source: Path) -> BaseCommit | None:
    """The base commit of `source`, built once per source and process (a few `git` runs, tens of
    ms). None (with a warning) where git is not installed: the workspace then has no repository."""
    if shutil.which("git") is None:
        warnings.warn("code-gym: git is not installed; workspaces get no base commit", stacklevel=3)
        return None
    source = Path(source).resolve()
    stamp = (str(source), source.stat().st_mtime_ns)
    if stamp not in _BASE_COMMITS:
        _BASE_COMMITS[stamp] = _build_base_commit(source)
    return _BASE_COMMITS[stamp]


def _build_base_commit(source: Path) -> BaseCommit:
    with tempfile.TemporaryDirectory(prefix=owned_prefix("git")) as tmp:
        git_dir = Path(tmp) / ".git"
        env = {**_GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp,
               "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(source)}

        def git(*args: str) -> None:
            done = subprocess.run(["git", *args], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"git {args[0]} failed building the base commit of {source}: {done.stderr.strip()}")

        git("init", "-q", "--template=", "--initial-branch=main")
        git("config", "--unset", "core.worktree")  # the folder it is written into is the work tree
        (git_dir / "info").mkdir()
        # what the workspace scan ignores is not part of the base commit either
        (git_dir / "info" / "exclude").write_text("".join(f"{name}/\n" for name in sorted(IGNORED_NAMES))
                                                 + "".join(f"*{suffix}\n" for suffix in IGNORED_SUFFIXES))
        git("add", "-A")
        git("-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "--allow-empty", "-m", "base")
        # as few files as git needs (each reset writes them): one pack, packed refs, no reflog
        git("repack", "-a", "-d", "-q", "-n")
        git("prune-packed", "-q")
        git("pack-refs", "--all")
        shutil.rmtree(git_dir / "logs", ignore_errors=True)
        (git_dir / "COMMIT_EDITMSG").unlink(missing_ok=True)
        for empty in ("refs/heads", "refs/tags", "objects/info"):
            if (git_dir / empty).is_dir() and not any((git_dir / empty).iterdir()):
                (git_dir / empty).rmdir()
        entries = sorted(git_dir.rglob("*"))
        return BaseCommit(tuple(p.relative_to(git_dir).as_posix() for p in entries if p.is_dir()),
                          tuple((p.relative_to(git_dir).as_posix(), p.read_bytes()) for p in entries if p.is_file()))


def _hide_source_git(source: Path, upper_git: Path) -> bool:
    """Whether an overlay over `source` whose upper layer holds `upper_git` shows none of the
    source's own git history: true when the source has no .git, or when upper's .git is made
    opaque (needs root, as overlays do); then the merged .git is upper's alone."""
    if not (source / ".git").exists():
        return True
    try:
        os.setxattr(upper_git, _OPAQUE, b"y")
    except OSError:
        return False
    return True


def _skip_git(folder: str, names: list[str]) -> list[str]:
    return [".git"] if ".git" in names else []


_SOURCE_SCANS: dict[tuple[str, int], Snapshot] = {}
_OPEN: "weakref.WeakSet[Workspace]" = weakref.WeakSet()


_TRASH: "queue.Queue[Path]" = queue.Queue()
_CLEANER: threading.Thread | None = None
_CLEANER_LOCK = threading.Lock()


def _clean_forever() -> None:
    while True:
        path = _TRASH.get()
        shutil.rmtree(path, ignore_errors=True)
        _TRASH.task_done()


def _discard(path: Path) -> None:
    """Remove `path` in the background (already unmounted; the reaper covers a crash meanwhile)."""
    global _CLEANER
    with _CLEANER_LOCK:
        if _CLEANER is None:
            _CLEANER = threading.Thread(target=_clean_forever, name="code-gym-cleaner", daemon=True)
            _CLEANER.start()
    _TRASH.put(path)


def wait_for_cleanup() -> None:
    """Block until every workspace closed with `wait=False` is removed."""
    _TRASH.join()


def _forget_cleaner() -> None:
    """A forked child (e.g. an AsyncVectorEnv worker) has no cleaner thread: start its own."""
    global _CLEANER, _TRASH
    _CLEANER, _TRASH = None, queue.Queue()


os.register_at_fork(after_in_child=_forget_cleaner)


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
    """

    def __init__(self, source: Path, strategy: str = "auto", parent: str | Path | None = None, git: bool = False):
        if strategy not in ("auto", "overlay", "copy"):
            raise ValueError(f"workspace strategy must be 'auto', 'overlay' or 'copy', got {strategy!r}")
        self.source = Path(source).resolve()
        self.base = Path(tempfile.mkdtemp(prefix=owned_prefix("ws"), dir=parent))
        self.root = self.base / "repo"
        self.root.mkdir()
        self.strategy = "copy"
        commit = base_commit(self.source) if git else None
        if strategy != "copy" and overlay_supported():
            upper = self.base / "upper"
            upper.mkdir()
            (self.base / "work").mkdir()
            # The base repository is written into the writable layer. Stacked as a second read-only
            # layer instead, a freshly built one left the repository unimportable through the warm
            # test runner's mount in 5 of 50 episodes ("No module named ..."); written, in 0 of 75.
            if commit:
                hidden = _hide_source_git(self.source, commit.write(upper))
            else:
                hidden = not (self.source / ".git").exists()
            if hidden and _mount_overlay(self.source, upper, self.base / "work", self.root):
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
        _OPEN.add(self)

    def _initial_snapshot(self) -> Snapshot:
        # An overlay shows the source's own files (same stat keys on one file system), so the source's
        # scan is reused across episodes. Were a key to differ, the file would merely be re-read once.
        if self.strategy != "overlay":
            return self.scan(None)
        stamp = (str(self.source), self.source.stat().st_mtime_ns)
        cached = _SOURCE_SCANS.get(stamp)
        if cached is None:
            keys = {path: _key(st) for path, st in _walk(self.source).items()}
            cached = _SOURCE_SCANS[stamp] = Snapshot(keys, {}, time.time_ns())
        # The source does not change, so a file whose key was recorded more than _RACY_NS before now
        # and still matches it is untouched: any write from now on stamps a newer mtime.
        return Snapshot(dict(cached.keys), {}, time.time_ns())

    def _pristine(self, path: str) -> bytes | None:
        full = self.source / path
        return read_entry(full) if full.exists() or full.is_symlink() else None

    def content(self, snap: Snapshot, path: str) -> bytes | None:
        if path not in snap.keys:
            return None
        if path in snap.content:
            return snap.content[path]
        return self._pristine(path)

    def scan(self, prev: Snapshot | None) -> Snapshot:
        started = time.time_ns()
        stats = _walk(self.root)
        keys = {path: _key(st) for path, st in stats.items()}
        content: dict[str, bytes] = {}
        for path, key in keys.items():
            if prev is not None and prev.keys.get(path) == key and key[0] < prev.taken_ns - _RACY_NS:
                if path in prev.content:
                    content[path] = prev.content[path]
                continue
            if prev is None and key[0] < started - _RACY_NS:
                continue  # initial scan: untouched copies of the source
            data = read_entry(self.root / path)
            if prev is None and data == self._pristine(path):
                continue
            content[path] = data
        return Snapshot(keys, content, started)

    def diff(self, old: Snapshot, new: Snapshot) -> list[FileDiff]:
        diffs: list[FileDiff] = []
        paths = sorted(set(old.keys) | set(new.keys))
        gone: dict[bytes, str] = {}
        born: list[str] = []
        for path in paths:
            if path in new.content or path not in new.keys or path not in old.keys or path in old.content:
                a, b = self.content(old, path), self.content(new, path)
                if a == b and _mode(old.keys.get(path)) == _mode(new.keys.get(path)):
                    continue
                if a is None:
                    born.append(path)
                    continue
                if b is None:
                    gone[a] = path
                    continue
                diffs.append(file_diff(path, a, b, old.keys[path], new.keys[path]))
        for path in born:
            b = self.content(new, path)
            if b in gone and b:
                diffs.append(_renamed(gone.pop(b), path))
            else:
                diffs.append(file_diff(path, None, b, None, new.keys[path]))
        for a, path in gone.items():
            diffs.append(file_diff(path, a, None, old.keys[path], None))
        return sorted(diffs, key=lambda d: d.path)

    def step(self) -> list[FileDiff]:
        """The changes since the previous call (or since the start)."""
        new = self.scan(self.last)
        diffs = self.diff(self.last, new)
        self.last = new
        return diffs

    def patch(self) -> list[FileDiff]:
        """The cumulative changes since the start of the episode, as of the last `step()`."""
        return self.diff(self.initial, self.last)

    def changed_files(self) -> dict[str, bytes | None]:
        """Final content of each path changed since the start (None: deleted)."""
        return {p: self.content(self.last, p) for p in sorted(set(self.initial.keys) | set(self.last.keys))
                if self.content(self.initial, p) != self.content(self.last, p)}

    def close(self, wait: bool = True) -> None:
        """Unmount and remove the workspace; `wait=False` removes the files in a background thread
        (deleting even a few files costs milliseconds on a busy disk: not on the reset path)."""
        if self.strategy == "overlay" and self in _OPEN:
            _unmount(self.root)
        _OPEN.discard(self)
        if wait:
            shutil.rmtree(self.base, ignore_errors=True)
        else:
            _discard(self.base)
