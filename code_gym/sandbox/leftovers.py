"""What dead code-gym processes left in /tmp and the cgroups, removed by the next process the first
time it makes a sandbox (`reap_on_start`: a glob and a pid check each). The backends call it;
`code_gym.sandbox.reaper` counts and removes leftovers of every kind on demand."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from code_gym.util.hostfs import TEMP_PREFIX
from code_gym.sandbox import cgroup, mounts
from code_gym.sandbox.cgroup import pid_alive


def _slot_owner(path: Path) -> int | None:
    """The pid in a temp folder's name (code-gym-<kind>-<pid>-<suffix>), None when it has none."""
    parts = path.name.split("-")
    if len(parts) == 5 and parts[3].isdigit():
        return int(parts[3])
    return None


_REAPED = False


def reap_on_start() -> None:
    """Remove what dead code-gym processes left in /tmp and the cgroups, the first time this process
    calls it (a forked child has nothing new to reap: its parent did)."""
    global _REAPED
    if not _REAPED:
        _REAPED = True
        cgroup.reap()
        reap_folders()


def reap_folders() -> int:
    """Unmount and remove the temp folders (workspaces, slots, results) of code-gym processes that are gone."""
    removed = 0
    for slot in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        owner = _slot_owner(slot)
        if owner is not None and owner != os.getpid() and not pid_alive(owner):
            mounts.remove_slot(slot)
            removed += 1
    return removed
