"""A Rust crate's environment: the crates its Cargo.lock needs, from Debian's librust-*-dev
packages, as a cargo directory source, made once per package set and bound read-only; and the
per-task target cache, so that a graded run compiles only what the patch changed.

- Environment: task.toml's `[environment] packages = ["librust-serde-dev", ...]` and the Depends
  closure of them (`code_gym.tasks.debian`), unpacked with `dpkg-deb -x` (no maintainer script
  runs) into `<cache>/rust-environments/<key>/`: `registry/` holds the crates as Debian ships
  them (`/usr/share/cargo/registry/<crate>-<version>/`, each with its .cargo-checksum.json, which a
  directory source needs) and `cargo-home/config.toml` replaces crates.io with that directory and
  sets `net.offline`; `bin/cargo`, first on PATH, starts a command's CARGO_TARGET_DIR from a copy of
  the target cache, then runs Debian's cargo. CARGO_HOME points at `cargo-home/`, read-only: an offline cargo that only
  reads a directory source writes nothing there. The key hashes the rustc version and the
  packages' names and versions. The config also turns debug info and incremental compilation off
  (profiles dev and test): smaller targets to copy, faster links, the same test outcomes.
- Target cache: `<cache>/rust-caches/<key>/target`, made once per task (key: the environment's,
  the repository's files, the test command) by the reader in build-only mode in a bubblewrap
  sandbox (build scripts and proc macros run there, never on the host), at the in-sandbox path
  every run uses (TARGET_INSIDE). Runs bind it read-only and start from a copy (`cp -a`, mtimes
  kept), so cargo finds the dependencies' units fresh. Beside it, SOURCES: each repository file's
  size, hash and time as the build left them, and a time no unit of the cache is newer than. Cargo
  decides freshness by modification times alone, so before cargo runs, the reader (and the wrapper,
  for an agent's own cargo call) dates every file whose bytes differ from these and whose time is
  not later than the cache after it: the patch is compiled whenever it was written (a grade that
  builds a cold cache writes the patch first). A build that fails (a starting repository
  that does not compile) still leaves the dependencies' units, and is kept.
- `generate_lockfile`: Cargo.lock made offline against an environment with Debian's
  /usr/bin/cargo (resolution only: no crate code runs).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from code_gym.grading import channel
from code_gym.tasks.task import Task, TaskError
from code_gym.util.hostfs import cache_root

ENV_FORMAT = "3"  # bump when the way environments are built changes: every key changes with it
CACHE_FORMAT = "2"  # 2: the cache holds SOURCES
RECORD = "code-gym-environment.json"  # written last: a folder without it is unfinished
CACHE_RECORD = "code-gym-target-cache.json"
SOURCES = "code-gym-sources.json"  # beside target/: the files the cache was built from (reader/cargotest.py reads it)
PREPARE = "code-gym-cargotest.py"  # in the environment's bin/: the reader, which the wrapper runs with --prepare
CARGO = "/usr/bin/cargo"  # Debian's: a rustup cargo elsewhere on PATH is another toolchain
RUSTC = "/usr/bin/rustc"
_PACKAGE = re.compile(r"^librust-[a-z0-9][a-z0-9+.-]*-dev$")
CACHE_TIMEOUT = 1800.0
CACHE_MEMORY = 4 << 30  # what a graded run gets (Limits' default): a cache build that fits fits a run too
# Debian's cargo 1.65 / rustc 1.63; rustc links through libc-dev, a virtual package debootstrap
# cannot resolve (libc6-dev provides it); the reader is Python
IMAGE_PACKAGES = ("cargo", "rustc", "libc6-dev", "python3")
BUILD_JOBS = str(max(1, min(os.cpu_count() or 1, 8)))


class EnvironmentBuildError(TaskError):
    """The environment cannot be made; `package` is the Debian package at fault (None when the
    error names none)."""

    def __init__(self, message: str, package: str | None = None):
        super().__init__(message)
        self.package = package


@dataclass(frozen=True)
class RustSpec:
    """The Debian packages a task names (sorted); the environment holds their closure."""
    packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class RustEnvironment:
    key: str
    folder: Path
    packages: tuple[str, ...]  # "name=version" of every package unpacked (the closure)
    crates: tuple[str, ...]  # the registry's crate folders ("serde-1.0.152")
    build_seconds: float
    cached: bool

    @property
    def registry(self) -> Path:
        return self.folder / "registry"

    @property
    def cargo_home(self) -> Path:
        return self.folder / "cargo-home"

    @property
    def bin(self) -> Path:
        return self.folder / "bin"


def read_environment(table: object, where: Path) -> RustSpec:
    """task.toml's [environment] for a Rust task: `packages`, a list of librust-*-dev package names
    (none: the crate has no dependency)."""
    if table is None:
        return RustSpec()
    if not isinstance(table, dict):
        raise TaskError(f"{where}: [environment] must be a table with `packages = [\"librust-...-dev\", ...]`")
    unknown = sorted(set(table) - {"packages"})
    if unknown:
        raise TaskError(f"{where}: [environment] has unknown key(s) {', '.join(unknown)}: a Rust environment is "
                        "`packages`, the Debian librust-*-dev packages of the crate's dependencies")
    packages = table.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise TaskError(f"{where}: [environment] packages must be a list of Debian package names")
    bad = [p for p in packages if not _PACKAGE.match(p)]
    if bad:
        raise TaskError(f"{where}: [environment] packages: {', '.join(map(repr, bad))} is not a Debian Rust library "
                        "package name (librust-<crate>-dev, lower case)")
    return RustSpec(tuple(sorted(set(packages))))


@lru_cache(maxsize=1)
def rustc_version() -> str:
    """The version of Debian's rustc, which compiles every run (the sandbox shows /usr)."""
    if not Path(RUSTC).is_file() or not Path(CARGO).is_file():
        raise TaskError("Debian's cargo and rustc are not installed (/usr/bin/cargo, /usr/bin/rustc): Rust tasks "
                        "need them (run scripts/setup.sh, or apt-get install cargo)")
    return subprocess.run([RUSTC, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()


def environments_dir() -> Path:
    return cache_root() / "rust-environments"


def caches_dir() -> Path:
    return cache_root() / "rust-caches"


def cargo_config(registry: Path) -> str:
    return (f'[source.crates-io]\nreplace-with = "code-gym-debian"\n\n'
            f'[source.code-gym-debian]\ndirectory = {json.dumps(str(registry))}\n\n'
            "[net]\noffline = true\n\n"
            "[build]\nincremental = false\n\n"
            "[term]\ncolor = \"never\"\nprogress.when = \"never\"\n\n"
            "[profile.dev]\ndebug = 0\nstrip = \"debuginfo\"\n\n[profile.test]\ndebug = 0\nstrip = \"debuginfo\"\n")


# first on every command's PATH: a command's first cargo call starts CARGO_TARGET_DIR from a copy of the
# task's target cache (each command has a fresh /tmp), so an agent's own `cargo test` is warm too; the
# reader's --prepare makes the copy and dates the files the agent changed after the cache's units (cargo
# goes by modification times: an edit dated before the cache would otherwise not be compiled)
CARGO_WRAPPER = """#!/bin/sh
if [ -n "${CODE_GYM_RUST_CACHE:-}" ] && [ -n "${CARGO_TARGET_DIR:-}" ] && [ -d "$CODE_GYM_RUST_CACHE" ] \\
        && [ ! -e "$CARGO_TARGET_DIR" ]; then
    python3 -I @PREPARE@ --prepare >&2 || rm -rf "$CARGO_TARGET_DIR"
fi
exec /usr/bin/cargo "$@"
"""


def _bin_files(folder: Path) -> dict[str, str]:
    """The environment's bin/ (`folder` its final place): the cargo wrapper, the reader it runs and
    the channel's module the reader imports."""
    from code_gym.languages.rust.runner import HERE

    reader = (HERE / "reader" / "cargotest.py").read_text()
    return {"cargo": CARGO_WRAPPER.replace("@PREPARE@", shlex.quote(str(folder / "bin" / PREPARE))), PREPARE: reader,
            channel.NAME: channel.source()}


def _install_bin(folder: Path, into: Path) -> None:
    """Write `folder`'s bin/ files into `into` where they differ (an environment made by an older
    grader gets this one's wrapper and reader), each replaced at once."""
    into.mkdir(exist_ok=True)
    for name, text in _bin_files(folder).items():
        path = into / name
        try:
            if path.is_file() and path.read_text() == text:
                continue
            fresh = path.with_name(f".{name}.{os.getpid()}")
            fresh.write_text(text)
            fresh.chmod(0o755)
            os.replace(fresh, path)
        except OSError:
            continue


def _resolve(spec: RustSpec) -> list:
    from code_gym.tasks import debian

    if not spec.packages:
        return []
    try:
        return debian.closure(list(spec.packages))
    except debian.DebianError as error:
        raise EnvironmentBuildError(f"the Rust environment {', '.join(spec.packages)} cannot be resolved: {error}",
                                    str(error).split(":", 1)[0]) from None


def environment(spec: RustSpec, root: Path | None = None) -> RustEnvironment:
    """The environment of `spec`, from the cache or made now (under a lock, so concurrent graders
    make it once)."""
    packages = _resolve(spec)
    pinned = sorted(f"{p.name}={p.version}" for p in packages)
    key = hashlib.sha256(json.dumps([ENV_FORMAT, rustc_version(), pinned]).encode()).hexdigest()[:16]
    folder = (root or environments_dir()) / key
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / RECORD).is_file():
            _install_bin(folder, folder / "bin")
            return _load(folder, cached=True)
        started = time.monotonic()
        scratch = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        try:
            registry = scratch / "registry"
            if packages:
                from code_gym.tasks import debian

                try:
                    unpacked = debian.extract(packages, scratch / "debian")
                except debian.DebianError as error:
                    raise EnvironmentBuildError(f"the Rust environment cannot be made: {error}",
                                                str(error).split(":", 1)[0]) from None
                shipped = unpacked / "usr" / "share" / "cargo" / "registry"
                if shipped.is_dir():
                    shipped.rename(registry)
                shutil.rmtree(unpacked)
            registry.mkdir(exist_ok=True)
            crates = sorted(p.name for p in registry.iterdir() if (p / "Cargo.toml").is_file())
            _install_bin(folder, scratch / "bin")
            (scratch / "cargo-home").mkdir()
            (scratch / "cargo-home" / "config.toml").write_text(cargo_config(folder / "registry"))
            record = {"key": key, "rustc": rustc_version(), "asked": list(spec.packages), "packages": pinned,
                      "crates": crates, "build_seconds": time.monotonic() - started}
            (scratch / RECORD).write_text(json.dumps(record, indent=1))
            if folder.exists():
                shutil.rmtree(folder)
            scratch.rename(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return _load(folder, cached=False)


def _load(folder: Path, cached: bool) -> RustEnvironment:
    record = json.loads((folder / RECORD).read_text())
    return RustEnvironment(record["key"], folder, tuple(record["packages"]), tuple(record["crates"]),
                           record["build_seconds"], cached)


def task_environment(task: Task) -> RustEnvironment:
    """The environment of `task` (made on first use)."""
    spec = task.environment if isinstance(task.environment, RustSpec) else RustSpec()
    return environment(spec)


def cargo_env(env: RustEnvironment) -> dict[str, str]:
    """What cargo on the host needs to read `env` (resolution only)."""
    return {"CARGO_HOME": str(env.cargo_home), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8"}


def generate_lockfile(repo: Path, env: RustEnvironment, timeout: float = 300.0) -> str:
    """Write `repo`/Cargo.lock, resolved offline against `env` with Debian's cargo (no crate code
    runs: cargo only reads manifests). Returns cargo's output; EnvironmentBuildError when a
    dependency (normal, build, dev or optional: cargo resolves them all) is not in the environment."""
    rustc_version()
    done = subprocess.run([CARGO, "generate-lockfile", "--offline"], cwd=repo, env=cargo_env(env), capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        error = "\n".join(ln for ln in done.stderr.splitlines() if ln.strip())[-800:]
        wanted = re.search(r"no matching package named `([^`]+)`", error) or \
            re.search(r"failed to select a version for the requirement `([^ `]+)", error)
        raise EnvironmentBuildError(f"{repo}: Cargo.lock cannot be made from the environment "
                                    f"({', '.join(env.crates) or 'no crates'}): {error}",
                                    wanted.group(1) if wanted else None)
    return done.stderr


# -- the per-task target cache

def _repo_digest(task: Task) -> str:
    """The repository's files and the hidden tests (by role, not by folder: a task whose hidden_dir
    is its repository still hashes every file of it)."""
    sha = hashlib.sha256()
    for hidden, base in ((False, task.repo), (True, task.hidden_dir)):
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = path.relative_to(base).as_posix()
            if rel.split("/")[0] in (".git", "target"):
                continue
            if hidden and rel not in task.hidden_tests:
                continue
            sha.update(f"{hidden}:{rel}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    return sha.hexdigest()


def cache_key(task: Task, env: RustEnvironment) -> str:
    text = json.dumps([CACHE_FORMAT, env.key, _repo_digest(task), task.test_command])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TargetCache:
    folder: Path
    ok: bool  # the starting repository built (else the cache holds what did: the dependencies)
    build_seconds: float
    size: int  # bytes
    cached: bool

    @property
    def target(self) -> Path:
        return self.folder / "target"


def runtime_env(env: RustEnvironment, cache: TargetCache | None) -> tuple[tuple[str, str], ...]:
    """The variables of every run (and of the cache's build, less the cache)."""
    from code_gym.languages.rust.runner import CACHE_ENV, TARGET_INSIDE

    pairs = [("CARGO_HOME", str(env.cargo_home)), ("CARGO_TARGET_DIR", TARGET_INSIDE),
             ("CARGO_BUILD_JOBS", BUILD_JOBS), ("CARGO_TERM_COLOR", "never")]
    if cache is not None:
        pairs.append((CACHE_ENV, str(cache.target)))
    return tuple(pairs)


def runtime(env: RustEnvironment, cache: TargetCache | None):
    """The sandbox runtime of a task with `env` and `cache`: both folders bound read-only, the cargo
    wrapper first on PATH, the variables, the reader."""
    from code_gym.languages.rust.runner import RustReporter
    from code_gym.sandbox.base import Runtime

    folders = (env.folder,) + ((cache.folder,) if cache is not None else ())
    return Runtime(folders=folders, path=(str(env.bin),), env=runtime_env(env, cache), reporter=RustReporter(),
                   packages=IMAGE_PACKAGES)


def target_cache(task: Task, env: RustEnvironment, root: Path | None = None) -> TargetCache | None:
    """The task's target cache, built now in a bubblewrap sandbox on first use; None where no
    bubblewrap runs (each run then builds from scratch)."""
    from code_gym.sandbox.local import available_isolation

    key = cache_key(task, env)
    folder = (root or caches_dir()) / key
    if (folder / CACHE_RECORD).is_file():
        return _load_cache(folder, cached=True)
    if "bwrap" not in available_isolation():
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / CACHE_RECORD).is_file():
            return _load_cache(folder, cached=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        try:
            record = _build_cache(task, env, scratch)
            (scratch / CACHE_RECORD).write_text(json.dumps(record, indent=1))
            if folder.exists():
                shutil.rmtree(folder)
            scratch.rename(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return _load_cache(folder, cached=False)


def _build_cache(task: Task, env: RustEnvironment, scratch: Path) -> dict:
    from code_gym.languages.rust.runner import TARGET_INSIDE, build_command
    from code_gym.sandbox import Limits, LocalSandbox
    from code_gym.sandbox.local import WORKDIR
    from code_gym.workspace.working_copy import Workspace

    started = time.monotonic()
    (scratch / "target").mkdir()
    copy = Workspace(task.repo, strategy="copy", disk_quota=0)
    try:
        for rel in task.hidden_tests:  # the graded copies hold them too
            dest = copy.root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(task.hidden_dir / rel, dest)
        limits = Limits(timeout=CACHE_TIMEOUT, memory_bytes=CACHE_MEMORY, file_size_bytes=2 << 30,
                        max_output=256 << 10, processes=512)
        sandbox = LocalSandbox(copy.root, "bwrap", limits, runtime=runtime(env, None))
        run = sandbox.exec(build_command(task.test_command), binds={scratch / "target": TARGET_INSIDE},
                           records="cache")
        sandbox.close()
        files = _sources(copy.root)
    finally:
        copy.close()
    size, newest = 0, time.time_ns()
    for path in (scratch / "target").rglob("*"):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            size += st.st_size
            newest = max(newest, st.st_mtime_ns)
    # no unit of the cache is newer than built_ns: a run dates a changed file older than it after it
    (scratch / SOURCES).write_text(json.dumps({"built_ns": newest, "root": WORKDIR, "files": files}))
    return {"ok": run.exit_code == 0, "exit_code": run.exit_code, "timed_out": run.timed_out,
            "build_seconds": time.monotonic() - started, "size": size, "output": run.output[-4000:]}


def _sources(root: Path) -> dict[str, list]:
    """The repository's files as the cache's build left them (.git and target/ left out):
    path -> [size, sha256, mtime_ns]. Runs compare their files with these (reader/cargotest.py)."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", "target") or not path.is_file() or path.is_symlink():
            continue
        st = path.stat()
        files[rel] = [st.st_size, hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns]
    return files


def _load_cache(folder: Path, cached: bool) -> TargetCache:
    record = json.loads((folder / CACHE_RECORD).read_text())
    return TargetCache(folder, record["ok"], record["build_seconds"], record["size"], cached)
