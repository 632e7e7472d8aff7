"""Slot folders: host folders made shared mounts, so that a workspace mounted onto one later shows up
inside a sandbox (a container or a long-lived bubblewrap) that was started with the slot bound in.

mount(2) is called through libc (a `mount` subprocess costs more than the mount); needs root.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

from code_gym.util.hostfs import libc, unmount

_MS_BIND, _MS_REC, _MS_SHARED = 4096, 16384, 1 << 20
# the new mount API (Linux 5.12+; the same numbers on every architecture)
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_AT_FDCWD, _AT_EMPTY_PATH, _OPEN_TREE_CLONE, _MOVE_MOUNT_F_EMPTY_PATH, _MOUNT_ATTR_RDONLY = -100, 0x1000, 1, 4, 1


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _mount(source: Path | None, target: Path, flags: int) -> None:
    src = str(source).encode() if source is not None else None
    if libc().mount(src, str(target).encode(), None, flags, None) != 0:
        raise OSError(f"mount {source} on {target} failed: {os.strerror(ctypes.get_errno())}")


def shared_folder(path: Path) -> None:
    """Make `path` a mount point of its own with shared propagation."""
    path.mkdir(parents=True, exist_ok=True)
    _mount(path, path, _MS_BIND)
    _mount(None, path, _MS_SHARED)


def attach(source: Path, slot: Path) -> None:
    """Mount `source` (recursively: an overlay workspace included) onto the slot."""
    _mount(source, slot, _MS_BIND | _MS_REC)


def seal(path: Path) -> None:
    """Stack a read-only copy of the mount at `path` on it. On a slot (`shared_folder`) the copy
    propagates into every sandbox that has the slot bound: from then on nothing inside can write
    there (no capability to unmount it), while a socket in it still takes connections. The copy is
    made read-only before it is attached (open_tree, mount_setattr, move_mount): a bind mount
    remounted read-only afterwards would propagate as the writable mount it was when attached."""
    lib, target = libc(), str(path).encode()

    def call(number: int, *args) -> int:
        result = lib.syscall(ctypes.c_long(number), *args)
        if result < 0:
            raise OSError(ctypes.get_errno(), f"sealing {path} read-only failed (needs Linux 5.12+ and root): "
                                              f"{os.strerror(ctypes.get_errno())}")
        return result

    fd = call(_SYS_OPEN_TREE, ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(target),
              ctypes.c_uint(_OPEN_TREE_CLONE | os.O_CLOEXEC))
    try:
        attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
        call(_SYS_MOUNT_SETATTR, ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_uint(_AT_EMPTY_PATH),
             ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
        call(_SYS_MOVE_MOUNT, ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(target),
             ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH))
    finally:
        os.close(fd)


def mounts_at(path: Path) -> int:
    target = str(path)
    with open("/proc/self/mountinfo") as f:
        return sum(line.split()[4] == target for line in f)


def detach(path: Path, keep: int = 1) -> None:
    """Unmount what is stacked on `path`, leaving the lowest `keep` mounts (a slot's own shared mount)."""
    for _ in range(8):
        if mounts_at(path) <= keep:
            return
        unmount(path)


def remove_slot(slot: Path) -> None:
    """Unmount everything under `slot` (a workspace's quota tmpfs: `slot` itself) and remove its folders."""
    if not slot.is_dir():
        return
    try:
        subs = sorted(p for p in slot.iterdir() if p.is_dir())
    except (PermissionError, FileNotFoundError):
        subs = []
    for sub in subs:
        detach(sub, keep=0)
    detach(slot, keep=0)
    try:
        paths = sorted(slot.glob("**/*"), reverse=True)
    except OSError:  # another process's reaper removed part of it meanwhile (a Ray worker's, at its start)
        paths = []
    for path in paths + [slot]:
        try:
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        except OSError:
            pass
