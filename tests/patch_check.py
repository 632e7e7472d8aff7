"""Helpers of the patch tests: a tree's state as git records it, and `git apply` of a patch onto a
copy of a source (tests/test_patch_roundtrip.py, tests/test_diff_quoting.py, the red-team tests)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from code_gym.util.hostfs import walk

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull,
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def tree_state(root: Path) -> dict[bytes, tuple[str, bytes]]:
    """Each file and link under `root` (the scan's ignored names left out, .git among them) by the
    bytes of its path: (git's mode, content or link target). Folders are not part of it (git
    records none)."""
    state = {}
    for path, st in walk(root).items():
        full = root / path
        if stat.S_ISLNK(st.st_mode):
            state[os.fsencode(path)] = ("120000", os.fsencode(os.readlink(full)))
        else:
            state[os.fsencode(path)] = ("100755" if st.st_mode & 0o111 else "100644", full.read_bytes())
    return state


def copy_source(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return dest


def git_apply(patch: str, where: Path, check: bool = True) -> subprocess.CompletedProcess:
    """`git apply` of `patch` (text, as info["patch"] holds it) in the folder `where`."""
    return subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch.encode(), cwd=where,
                          env=GIT_ENV, capture_output=True, check=check)


def git_repo(root: Path) -> None:
    """Make `root` a git repository whose one commit is its files."""
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "-c",
                                                  "commit.gpgsign=false", "commit", "--allow-empty", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def git_diff(root: Path, *extra: str) -> str:
    """git's own `git diff --binary` of the work tree against its commit (new files included)."""
    subprocess.run(["git", "add", "-A"], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    done = subprocess.run(["git", "-c", "core.quotePath=true", "diff", "--cached", "--binary", "--no-color",
                           *extra], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    return done.stdout.decode("latin-1")
