"""The one-commit git repository a workspace starts with: the source's files as commit "base",
no history, refs, remotes or reflog, built once per source and process and kept in memory."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from code_gym.util.hostfs import IGNORED_NAMES, IGNORED_SUFFIXES, owned_prefix

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


def hide_source_git(source: Path, upper_git: Path) -> bool:
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
