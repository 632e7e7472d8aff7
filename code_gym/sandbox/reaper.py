"""What code-gym processes leave on a machine: count it (`census`) and remove what dead ones left (`reap_all`).

Everything code-gym creates is recognisable: temp folders are named `code-gym-<kind>-<pid>-...`
(workspaces with their mounts, grading results, slots, git layers), cgroups carry the creating
process's id, containers the `code-gym` label. Every process reaps once, when it makes its first
sandbox (`code_gym.sandbox.leftovers.reap_on_start`: a glob of /tmp and of the cgroup folders,
and a pid check each); the Docker backend removes dead processes' containers when it is created.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from code_gym.util.hostfs import TEMP_PREFIX
from code_gym.sandbox import cgroup
from code_gym.sandbox.leftovers import reap_folders



def census() -> dict[str, set[str]]:
    """What code-gym things exist on this machine now, by kind: temp folders, mounts, cgroups,
    containers, sandbox processes (bwrap, unshare, warm runners). Compare two censuses for leaks."""
    tmp = Path(tempfile.gettempdir())
    found = {
        "temp dirs": {str(p) for p in tmp.glob(f"{TEMP_PREFIX}*")},
        "mounts": {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
                   if f"{tmp}/{TEMP_PREFIX}" in line},
        "cgroups": {str(g) for g in cgroup.leftover_groups(include_live=True)},
        "processes": _sandbox_processes(),
        "containers": set(),
    }
    try:
        from code_gym.sandbox.docker import LABEL, client, docker_unavailable

        if docker_unavailable() is None:
            found["containers"] = {c.name for c in client().containers.list(all=True, filters={"label": LABEL})}
    except ImportError:
        pass
    return found


def _sandbox_processes() -> set[str]:
    """bwrap / unshare processes and warm runners on this machine, as "pid name"."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        name = os.path.basename(argv[0]) if argv and argv[0] else b""
        if name in (b"bwrap", b"unshare") or any(a.endswith(b"/run/code-gym/runner.sock") for a in argv):
            found.add(f"{entry.name} {name.decode(errors='replace')}")
    return found


def reap_all() -> dict[str, int]:
    """Remove what crashed code-gym processes left: containers, workspaces and slots (with their
    mounts), grading folders, cgroups."""
    removed = {"containers": 0, "slots": 0, "cgroups": cgroup.reap()}
    try:
        from code_gym.sandbox.docker import docker_unavailable, reap

        if docker_unavailable() is None:
            removed["containers"] = reap()
    except ImportError:
        pass
    removed["slots"] = reap_folders()
    return removed
