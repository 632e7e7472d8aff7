"""Bytecode made once per project, so that the builder's test runs do not each compile the project
and rewrite its test modules' asserts again.

Every run of a candidate works on a fresh copy of the project with bytecode writing off, so each
one compiled every module it imported and had pytest rewrite the asserts of every test module it
collected: on `toolz`, half of a warm run (0.6 of 1.2 s; docs/benchmarks.md, "Task supply").
Instead:

- the project's modules are compiled once on the host into their `__pycache__` as hash-checked
  pycs (PEP 552): the interpreter compares the source's hash, so a copy whose file the candidate
  changed recompiles that file, whatever its mtime (compiling runs none of the code: it is parsed,
  as the builder already parses it to find functions);
- pytest's rewritten test modules come from the baseline run, which runs with bytecode writing on:
  only pycs of the project's own files whose header matches that file as pytest checks it (its
  mtime and size, or since pytest 9.2 its hash) are taken, read without following links. The builder never changes a test file, and a run
  of a task folder (the reference) gets them lent with the laid hidden files' mtimes set back where
  their bytes are the project's.

Task folders never hold any of this: `__pycache__` is left out when they are written."""
from __future__ import annotations

import importlib.util
import os
import py_compile
import re
import shutil
import stat
from pathlib import Path

from code_gym.languages.python import source as pysource
CACHE = "__pycache__"
WRITE_BYTECODE = "PYTHONDONTWRITEBYTECODE= "  # a command prefix: this run writes bytecode (the sandbox's default is off)
MAX_PYC_BYTES = 16 << 20
_PYTEST_PYC = re.compile(r"^(?P<stem>[^/]+)\.[a-z]+-\d+-pytest-[^/]+\.pyc$")


def compile_sources(root: Path, files) -> int:
    """Hash-checked pycs of `files` (repo-relative .py paths) under `root`; returns how many."""
    made = 0
    for rel in files:
        path = root / rel
        try:
            with pysource._LOCK:  # the compiler shares the parser's interpreter-wide state
                py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)), doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH, quiet=2)
            made += 1
        except (py_compile.PyCompileError, SyntaxError, ValueError, RecursionError, MemoryError, OSError):
            continue  # not Python this interpreter compiles: imported from source as before
    return made


def _read_plain(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file, never through a link; None otherwise or when over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def _matches(pyc: bytes, source: Path) -> bool:
    """pytest's own validity check of a rewritten module: before pytest 9.2 flags 0 and the source's
    mtime and size; since, flags 3 and the source's hash (importlib.util.source_hash)."""
    info = source.lstat()
    if len(pyc) <= 16 or not stat.S_ISREG(info.st_mode):
        return False
    if pyc[4:8] == b"\3\0\0\0":
        return importlib.util.source_hash(source.read_bytes())[:8] == pyc[8:16]
    return (pyc[4:8] == b"\0\0\0\0" and int.from_bytes(pyc[8:12], "little") == int(info.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(pyc[12:16], "little") == info.st_size & 0xFFFFFFFF)


def harvest(run_root: Path, project_root: Path) -> int:
    """Copy pytest's rewritten modules that a run wrote under `run_root` into `project_root`: only
    pycs of files the project has, matching them (see the module docstring); returns how many."""
    taken = 0
    for folder, dirs, files in os.walk(run_root):  # links to folders are listed, never entered
        here = Path(folder)
        if here.name != CACHE or here.is_symlink():
            continue
        rel_dir = here.parent.relative_to(run_root)
        for name in files:
            match = _PYTEST_PYC.match(name)
            source = project_root / rel_dir / f"{match['stem']}.py" if match else None
            if source is None or source.is_symlink() or not source.is_file():
                continue
            data = _read_plain(here / name, MAX_PYC_BYTES)
            if data is None or len(data) > MAX_PYC_BYTES or not _matches(data, source):
                continue
            target = project_root / rel_dir / CACHE
            target.mkdir(exist_ok=True)
            (target / name).write_bytes(data)
            taken += 1
    return taken


def lend(project_root: Path, run_root: Path) -> None:
    """Copy the project's bytecode into a run's folder made from a task folder, and give each test
    file there whose bytes are the project's the project file's times (a laid hidden test file is
    written anew), so that pytest takes its rewritten module."""
    for folder, dirs, files in os.walk(project_root):
        here = Path(folder)
        if here.name != CACHE:
            continue
        rel_dir = here.parent.relative_to(project_root)
        if not (run_root / rel_dir).is_dir():
            continue
        shutil.copytree(here, run_root / rel_dir / CACHE, dirs_exist_ok=True)
        for name in files:
            match = _PYTEST_PYC.match(name)
            if not match:
                continue
            mine, theirs = project_root / rel_dir / f"{match['stem']}.py", run_root / rel_dir / f"{match['stem']}.py"
            if theirs.is_file() and not theirs.is_symlink() and theirs.read_bytes() == mine.read_bytes():
                info = mine.stat()
                os.utime(theirs, ns=(info.st_atime_ns, info.st_mtime_ns))
