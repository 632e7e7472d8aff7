"""Host file-system helpers shared by the workspace, the grader and the sandboxes: the tree walk
that every scan uses, mount(2) through libc, the names of code-gym's temp folders (the reaper
finds a dead process's leftovers by them), and the background remover of closed workspaces."""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import os
import queue
import shutil
import stat
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path


IGNORED_NAMES = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
TEMP_PREFIX = "code-gym-"
# (mtime_ns, size, inode, mode, ctime_ns), as `stat_key` gives. ctime is the part a process
# cannot forge: `touch -r` and os.utime set mtime back, and every write, utime or chmod stamps
# ctime with the kernel's clock, which a sandbox cannot set.
StatKey = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Digest:
    """A file too large to hold in memory (`read_bounded`): its size and git blob id. Two equal
    digests mean equal content; a diff shows the file as binary."""
    size: int
    oid: str


# A changed file larger than this is compared and shown by size and hash, never held in memory.
MAX_DIFF_BYTES = 1 << 20
_MS_NOSUID, _MS_NODEV = 2, 4


def owned_prefix(kind: str) -> str:
    """Temp-folder prefix `code-gym-<kind>-<pid>-`: the reaper removes folders whose process is gone."""
    return f"{TEMP_PREFIX}{kind}-{os.getpid()}-"


def cache_root() -> Path:
    """Where loaders materialize task folders: $CODE_GYM_CACHE, else $XDG_CACHE_HOME/code-gym,
    else ~/.cache/code-gym."""
    if os.environ.get("CODE_GYM_CACHE"):
        return Path(os.environ["CODE_GYM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "code-gym"


def ignored(name: str) -> bool:
    return name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


def walk(root: Path) -> dict[str, os.stat_result]:
    """The stat of every file and symlink under `root` by relative path (ignored names left out)."""
    found: dict[str, os.stat_result] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:  # any OSError: a folder gone meanwhile, or one deeper than PATH_MAX (ENAMETOOLONG)
            entries = list(os.scandir(root / rel if rel else root))
        except OSError:
            continue
        for entry in entries:
            if ignored(entry.name):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:  # gone since the listing
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                found[path] = st
            # a FIFO, socket or device is no file a diff can hold (git keeps none): opening a FIFO
            # nobody writes to would block the host's scan for good
    return found


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode, st.st_ctime_ns)


def fs_bytes(path: str) -> bytes:
    """The bytes of a path. A name read from disk that is not UTF-8 holds surrogate escapes and
    gets its bytes back (os.fsencode); a lone surrogate no disk name holds (one from an action's
    JSON) is written as its UTF-8 form rather than raise."""
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def _regular(fd: int, where: object, mode: str):
    """`fd` (opened O_NONBLOCK, so that a FIFO never blocked the open) as a blocking file object if
    it is a regular file; closed and OSError otherwise."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(where))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: Path):
    """`path` opened for reading (binary) if it is a regular file, never following a link and never
    blocking (a FIFO put in its place since the walk would block an open without O_NONBLOCK);
    OSError otherwise."""
    return _regular(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), path, "rb")


_SYS_OPENAT2, _RESOLVE_NO_MAGICLINKS, _RESOLVE_BENEATH = 437, 0x02, 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def open_beneath(root: Path, rel: str, flags: int, mode: int = 0o644) -> int:
    """A file descriptor of `rel` opened under the folder `root` such that every component of the
    path, links included, resolves inside `root`, checked by the kernel as it opens (openat2 with
    RESOLVE_BENEATH, Linux 5.6+): a link or folder swapped in after a path check cannot send the
    host's read or write outside (where openat2 is missing, no link is followed at all). OSError
    (EXDEV: it would leave `root`) otherwise."""
    dirfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        fd = libc().syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd), ctypes.c_char_p(os.fsencode(rel)),
                            ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err != errno.ENOSYS:
            raise OSError(err, os.strerror(err), str(root / rel))
        parts = [p for p in Path(rel).parts if p not in ("", ".")]
        if not parts or ".." in parts:
            raise OSError(errno.EXDEV, "not a path inside the folder", str(root / rel))
        fd = dirfd
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            if fd != dirfd:
                os.close(fd)
            fd = nxt
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        finally:
            if fd != dirfd:
                os.close(fd)
    finally:
        os.close(dirfd)


def make_dirs_beneath(root: Path, rel: str) -> None:
    """`mkdir -p` of `rel` under `root`, each folder made inside a parent opened beneath `root`."""
    done = ""
    for part in [p for p in Path(rel).parts if p not in ("", ".")]:
        here = f"{done}/{part}" if done else part
        try:
            os.close(open_beneath(root, here, os.O_RDONLY | os.O_DIRECTORY))
        except FileNotFoundError:
            parent = open_beneath(root, done or ".", os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.mkdir(part, dir_fd=parent)
            except FileExistsError:
                pass
            finally:
                os.close(parent)
        done = here


def read_beneath(root: Path, rel: str) -> bytes:
    """The bytes of the regular file `rel` under `root` (`open_beneath`; never a FIFO or device)."""
    with _regular(open_beneath(root, rel, os.O_RDONLY | os.O_NONBLOCK), root / rel, "rb") as fh:
        return fh.read()


def write_beneath(root: Path, rel: str, data: bytes, exclusive: bool = False) -> None:
    """Write the regular file `rel` under `root` (`open_beneath`), made if missing (`exclusive`:
    only if missing). A FIFO there fails at once (O_NONBLOCK) rather than block the host."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | (os.O_EXCL if exclusive else 0)
    with _regular(open_beneath(root, rel, flags), root / rel, "wb") as fh:
        fh.truncate(0)
        fh.write(data)


def _link_target(path: Path) -> bytes | None:
    """A symlink's target as bytes (as git stores it, whatever its encoding); None for anything
    else, a link removed meanwhile included."""
    try:
        return os.fsencode(os.readlink(path))
    except OSError:
        return None


def read_entry(path: Path) -> bytes:
    """File content, or for a symlink its target (as git stores it); b"" for anything else."""
    target = _link_target(path)
    if target is not None:
        return target
    try:
        with open_regular(path) as fh:
            return fh.read()
    except OSError:
        return b""


def read_bounded(path: Path, limit: int = MAX_DIFF_BYTES) -> bytes | Digest:
    """`read_entry`, except that a file over `limit` bytes is streamed into its Digest."""
    target = _link_target(path)
    if target is not None:
        return target
    try:
        with open_regular(path) as fh:
            head = fh.read(limit + 1)
            if len(head) <= limit:
                return head
            size = os.fstat(fh.fileno()).st_size
            blob = hashlib.sha1(b"blob %d\0" % size)  # git's blob id, as diffs' index lines give it
            blob.update(head)
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                blob.update(chunk)
            return Digest(size, blob.hexdigest())
    except OSError:
        return b""


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
                _OVERLAY_OK = mount_overlay(probe / "lower", probe / "upper", probe / "work", probe / "merged")
                if _OVERLAY_OK:
                    unmount(probe / "merged")
            finally:
                shutil.rmtree(probe, ignore_errors=True)
    return _OVERLAY_OK


_OVERLAY_OK: bool | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once, with errno kept for error messages."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _LIBC


_LIBC = None
_MNT_DETACH = 2


def mount_overlay(lower: Path | str, upper: Path, work: Path, merged: Path) -> bool:
    """mount(2) directly: a `mount` subprocess costs more than the mount itself. `lower` may list
    several read-only layers, top first, separated by ':'. The layers are named by descriptor
    (/proc/self/fd/N): the mount's options, which any sandbox that sees the workspace can read in
    /proc/self/mountinfo, then say nothing of where the task and the layers live. nosuid, nodev:
    a setuid file or a device node written by a command means nothing on the host."""
    paths = [*str(lower).split(":"), str(upper), str(work)]
    try:
        fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in paths]
    except OSError:
        return False
    try:
        names = [f"/proc/self/fd/{fd}" for fd in fds]
        opts = f"lowerdir={':'.join(names[:-2])},upperdir={names[-2]},workdir={names[-1]}".encode()
        return libc().mount(b"overlay", os.fsencode(merged), b"overlay", _MS_NOSUID | _MS_NODEV, opts) == 0
    finally:
        for fd in fds:
            os.close(fd)


def mount_quota(target: Path, size: int, inodes: int | None = None) -> bool:
    """A tmpfs of `size` bytes and at most `inodes` files and folders (None: the kernel's default,
    half the RAM's pages) at `target` (nosuid, nodev): the disk quota of what is written there."""
    opts = (f"size={size},mode=0700" + (f",nr_inodes={inodes}" if inodes else "")).encode()
    return libc().mount(b"code-gym", os.fsencode(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts) == 0


def disk_full(path: Path, slack: int = 1 << 20) -> int | None:
    """The size in bytes of the file system holding `path` when less than `slack` is left on it (else None)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize if st.f_bavail * st.f_frsize < slack else None


def unmount(target: Path) -> None:
    """Lazily detach the mount at `target` (MNT_DETACH)."""
    libc().umount2(os.fsencode(target), _MNT_DETACH)


_TRASH: "queue.Queue[Path]" = queue.Queue()
_CLEANER: threading.Thread | None = None
_CLEANER_LOCK = threading.Lock()


def _clean_forever() -> None:
    while True:
        path = _TRASH.get()
        shutil.rmtree(path, ignore_errors=True)
        _TRASH.task_done()


def discard(path: Path) -> None:
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
