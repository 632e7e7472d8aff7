"""Per-command control groups: a process-count and a total-memory limit, and a sure way to kill a tree.

RLIMIT_NPROC is not enforced for root (every command here runs as root), so a fork bomb is only
stopped by a cgroup `pids.max`. cgroup v2 is used when its `pids` controller is delegated to us,
else the v1 `pids` and `memory` hierarchies when writable (as on the project's machines). Each
group is named after the creating process (`code-gym/<pid>-<n>`), so `reap()` can remove the
groups of a process that crashed.
"""
from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "code-gym"
_COUNTER = itertools.count()


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _bases() -> list[tuple[Path, tuple[str, ...]]]:
    """(parent folder, controllers) per hierarchy we can use; empty when cgroups are not ours to use."""
    if (ROOT / "cgroup.controllers").exists():  # unified (v2) hierarchy
        enabled = (ROOT / "cgroup.subtree_control").read_text().split() if (ROOT / "cgroup.subtree_control").exists() else []
        if "pids" in enabled and _writable(ROOT):
            return [(ROOT / PARENT, tuple(c for c in ("pids", "memory") if c in enabled))]
        return []
    found = []
    for controller in ("pids", "memory"):
        if _writable(ROOT / controller) and (ROOT / controller / "cgroup.procs").exists():
            found.append((ROOT / controller / PARENT, (controller,)))
    return found if any("pids" in c for _, c in found) else []


_BASES: list[tuple[Path, tuple[str, ...]]] | None = None


def bases() -> list[tuple[Path, tuple[str, ...]]]:
    global _BASES
    if _BASES is None:
        try:
            _BASES = _bases()
        except OSError:
            _BASES = []
    return _BASES


def available() -> bool:
    """Whether commands can be put in a cgroup with a pids limit here."""
    return bool(bases())


class CommandGroup:
    """One cgroup per command (one per hierarchy on v1), created before the command starts."""

    def __init__(self, max_processes: int, memory_bytes: int):
        name = f"{os.getpid()}-{next(_COUNTER)}"
        self.paths: list[Path] = []
        for base, controllers in bases():
            base.mkdir(exist_ok=True)
            if base.parent == ROOT and (ROOT / "cgroup.controllers").exists():
                _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in controllers))
            path = base / name
            path.mkdir()
            self.paths.append(path)
            if "pids" in controllers:
                _write(path / "pids.max", str(max_processes))
            if "memory" in controllers:
                limit_file = "memory.max" if (path / "memory.max").exists() else "memory.limit_in_bytes"
                _write(path / limit_file, str(memory_bytes))
        self._procs = [str(p / "cgroup.procs").encode() for p in self.paths]

    def join(self) -> None:
        """Move the calling process in (call in the child between fork and exec: no allocation-heavy work)."""
        pid = str(os.getpid()).encode()
        for procs in self._procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def pids(self) -> list[int]:
        out: set[int] = set()
        for path in self.paths:
            try:
                out |= {int(x) for x in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return sorted(out)

    def kill(self) -> None:
        """Kill every process in the group (fork bombs included: repeat until it is empty)."""
        kill_file = self.paths[0] / "cgroup.kill" if self.paths else None
        if kill_file is not None and kill_file.exists():
            _write(kill_file, "1")
        for _ in range(200):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)

    def remove(self) -> None:
        self.kill()
        for path in self.paths:
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (the owner test of every reaper)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def leftover_groups(include_live: bool = False) -> list[Path]:
    """Groups created by code-gym processes that are gone (or by any process, with include_live)."""
    out = []
    for base, _ in bases():
        if base.is_dir():
            for path in base.iterdir():
                owner = path.name.split("-")[0]
                if path.is_dir() and owner.isdigit() and (include_live or not pid_alive(int(owner))):
                    out.append(path)
    return out


def reap() -> int:
    """Kill the processes of and remove the groups left by crashed code-gym processes. Returns how many."""
    groups = leftover_groups()
    for path in groups:
        group = CommandGroup.__new__(CommandGroup)
        group.paths = [path]
        group.remove()
    return len(groups)
