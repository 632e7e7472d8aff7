"""A Go task's environment: its dependencies' source from Debian packages, and a build cache.

task.toml names the repository's import path and the Debian packages of its dependencies:

    [environment]
    import_path = "github.com/stretchr/testify"
    packages = ["golang-github-davecgh-go-spew-dev", "golang-github-pmezard-go-difflib-dev"]

The packages' Depends closure (`code_gym.tasks.debian`) is unpacked once per set into
`<cache>/go-environments/<key>/` (key: the go version and every package's name and version), whose
`usr/share/gocode` is the second GOPATH entry, bound read-only. Go builds in GOPATH mode, as Debian
builds these packages (the reader links the repository at /tmp/code-gym-gopath/src/<import path>),
with cgo off unless the repository's own Go files import "C" (then the image needs gcc).

The build cache `<cache>/go-caches/<key>/` (key: the environment's, the test command, cgo, and every
file of the repository with the hidden tests laid) is made once per task by a sandboxed warm-up
run of the reader (`go test -run '^$' -exec /bin/true ./...`: every package and test package
compiles and is vetted, no test binary runs), bound read-only; each graded run copies it to a
fresh GOCACHE under /tmp, so only what the patch changed compiles again. Without a local sandbox
(neither bubblewrap nor user namespaces) there is no cache and runs compile from scratch.

Every command of the task (the agent's too) has a `go` first on PATH: `<cache>/go-tools/<key>/go`,
a shell script that runs the reader's `wrap` (reader/gotest.py, copied beside it with the channel's
module it imports; the one implementation of the link, the variables and the cache copy): it links
the repository at /tmp/code-gym-gopath/src/<import path> when no link is there, seeds /tmp/code-gym-gocache from the
build cache on the command's first go call (each command has a fresh /tmp), and runs Debian's go
from the link's folder that mirrors the caller's folder, so `go test ./...`, `go build` and
`go vet` in /repo or a folder of it build as the import path, warm.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from code_gym.sandbox.base import Runtime
from code_gym.tasks.task import Task, TaskError
from code_gym.util.hostfs import cache_root, owned_prefix

ENV_FORMAT = "1"  # bump when the way environments or caches are built changes: every key changes with it
RECORD = "code-gym-environment.json"  # written last: a folder without it is unfinished
CACHE_RECORD = "code-gym-cache.json"
GOCODE = "usr/share/gocode"
LINK_ROOT = "/tmp/code-gym-gopath"  # the reader links the repository here (reader/gotest.py)
IMAGE_PACKAGES = ("golang-go", "python3")
# the `go` first on a task's PATH: the reader beside it, in its wrapper mode ($0: the script's path)
GO_WRAPPER = '#!/bin/sh\nexec python3 -I "${0%/*}/gotest.py" --go "$@"\n'
CGO_PACKAGES = ("gcc", "libc6-dev")
WARM_TIMEOUT = 1200.0
_IMPORT_PATH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]*(?:/[A-Za-z0-9._~+-]+)*$")
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")
_CGO_IMPORT = re.compile(rb'^\s*import\s+(?:\(\s*)?"C"', re.M)


@dataclass(frozen=True)
class GoSpec:
    """task.toml's [environment] of a Go task."""
    import_path: str
    packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoEnvironment:
    key: str
    folder: Path | None  # the unpacked packages (None: no dependency)
    installed: tuple[str, ...]  # "name version" of every package of the closure
    cached: bool

    @property
    def gopath(self) -> str:
        """The dependencies' GOPATH entry ("" for none)."""
        return str(self.folder / GOCODE) if self.folder is not None else ""


def read_environment(table: object, where: Path) -> GoSpec:
    if table is None:
        raise TaskError(f"{where}: a Go task needs [environment] with import_path = \"...\" (the repository's Go "
                        "import path) and packages = [...] (the Debian packages of its dependencies, may be empty)")
    if not isinstance(table, dict):
        raise TaskError(f"{where}: [environment] must be a table")
    unknown = sorted(set(table) - {"import_path", "packages"})
    if unknown:
        raise TaskError(f"{where}: [environment] has unknown key(s) {', '.join(unknown)}: a Go task's environment "
                        "takes import_path and packages")
    path = table.get("import_path")
    if not isinstance(path, str) or not _IMPORT_PATH.match(path) or ".." in path.split("/"):
        raise TaskError(f"{where}: [environment] import_path must be a Go import path such as "
                        f"\"github.com/google/go-cmp\", got {path!r}")
    packages = table.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise TaskError(f"{where}: [environment] packages must be a list of Debian package names")
    for name in packages:
        if not _PACKAGE.match(name) or not name.endswith("-dev"):
            raise TaskError(f"{where}: [environment] packages names {name!r}, which is not a Debian library "
                            "package (golang-...-dev)")
    return GoSpec(path, tuple(dict.fromkeys(packages)))


@lru_cache(maxsize=1)
def go_version() -> str:
    """The version of the go that builds and runs the tests (the system's, which sandboxes show)."""
    go = shutil.which("go")
    if go is None:
        raise TaskError("go is not installed: Go tasks need Debian's golang-go (apt-get install golang-go)")
    return subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout.strip()


def environments_dir() -> Path:
    return cache_root() / "go-environments"


def caches_dir() -> Path:
    return cache_root() / "go-caches"


def tools_dir() -> Path:
    return cache_root() / "go-tools"


def tools() -> Path:
    """The folder of the `go` wrapper (and the reader it runs, with the channel's module it imports),
    made once per reader source."""
    from code_gym.languages.go.runner import reader_files

    files = reader_files()
    folder = tools_dir() / _digest([ENV_FORMAT, GO_WRAPPER, *(f"{n}\n{t}" for n, t in sorted(files.items()))])
    if (folder / "go").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, text in files.items():
            (scratch / name).write_text(text)
            (scratch / name).chmod(0o644)
        (scratch / "go").write_text(GO_WRAPPER)  # last: a folder with it is finished
        (scratch / "go").chmod(0o755)
        scratch.chmod(0o755)
        try:
            os.rename(scratch, folder)
        except OSError:  # another process made it first
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def build_environment(spec: GoSpec) -> GoEnvironment:
    """The unpacked closure of `spec.packages`, from the cache or unpacked now (under a lock)."""
    from code_gym.tasks import debian

    if not spec.packages:
        return GoEnvironment(_digest([ENV_FORMAT, go_version()]), None, (), True)
    try:
        closure = debian.closure(spec.packages)
    except debian.DebianError as error:
        raise TaskError(f"the Go environment of {spec.import_path} cannot be resolved: {error}") from None
    installed = tuple(sorted(f"{p.name} {p.version}" for p in closure))
    key = _digest([ENV_FORMAT, go_version(), installed])
    folder = environments_dir() / key
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.parent / f"{key}.lock"):
        if (folder / RECORD).is_file():
            return GoEnvironment(key, folder, installed, True)
        unpacked = folder.parent / f".{key}-packages"
        shutil.rmtree(unpacked, ignore_errors=True)
        try:
            debian.extract(closure, unpacked)
        except debian.DebianError as error:
            raise TaskError(f"the Go environment of {spec.import_path} cannot be unpacked: {error}") from None
        (unpacked / RECORD).write_text(json.dumps({"key": key, "go": go_version(), "packages": installed}, indent=1))
        if folder.exists():
            shutil.rmtree(folder)
        os.rename(unpacked, folder)
        return GoEnvironment(key, folder, installed, False)


def needs_cgo(repo: Path) -> bool:
    """Whether a Go file of the repository imports "C"."""
    for path in repo.rglob("*.go"):
        try:
            if path.is_file() and _CGO_IMPORT.search(path.read_bytes()):
                return True
        except OSError:
            continue
    return False


def variables(spec: GoSpec, environment: GoEnvironment, cgo: bool) -> tuple[tuple[str, str], ...]:
    """What every command of the task runs with: GOPATH mode, nothing fetched, the reader's settings."""
    gopath = LINK_ROOT + (f":{environment.gopath}" if environment.gopath else "")
    return (("GO111MODULE", "off"), ("GOPATH", gopath), ("GOFLAGS", ""), ("GOPROXY", "off"), ("GOENV", "off"),
            ("CGO_ENABLED", "1" if cgo else "0"), ("CODE_GYM_GO_PACKAGE", spec.import_path),
            ("CODE_GYM_GO_DEPENDENCIES", environment.gopath))


def task_runtime(task: Task) -> Runtime:
    """The runtime of `task`'s commands: the `go` wrapper first on PATH, the dependencies bound
    read-only, the Go variables, the reader, and the task's build cache (made now on first use)."""
    from code_gym.languages.go.runner import GoReporter

    spec = task.environment
    environment = build_environment(spec)
    cgo = needs_cgo(task.repo)
    packages = IMAGE_PACKAGES + (CGO_PACKAGES if cgo else ())
    wrapper = tools()
    folders = (wrapper,) + ((environment.folder,) if environment.folder is not None else ())
    base = Runtime(folders=folders, path=(str(wrapper),), env=variables(spec, environment, cgo), reporter=GoReporter(),
                   packages=packages)
    cache = build_cache(task, environment, base)
    if cache is None:
        return base
    return Runtime(folders=(*folders, cache), path=base.path, env=(*base.env, ("CODE_GYM_GO_CACHE", str(cache))),
                   reporter=base.reporter, packages=packages)


# -- the build cache

def cache_key(task: Task, environment: GoEnvironment, runtime: Runtime) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([ENV_FORMAT, environment.key, task.test_command, runtime.env]).encode())
    for folder, prefix in ((task.repo, "repo"), (task.hidden_dir, "hidden")):
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            digest.update(f"{prefix}/{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def build_cache(task: Task, environment: GoEnvironment, runtime: Runtime) -> Path | None:
    """The task's build cache, from the cache or warmed now in a local sandbox; None when no local
    sandbox runs here or the warm-up timed out (runs then compile from scratch)."""
    from code_gym.sandbox.local import available_isolation

    kind = available_isolation()[0]
    if kind == "none":
        return None
    key = cache_key(task, environment, runtime)
    folder = caches_dir() / key
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.parent / f"{key}.lock"):
        if (folder / CACHE_RECORD).is_file():
            return folder
        scratch = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        try:
            record = warm_up(task, runtime, scratch, kind)
            if record is None:
                return None
            (scratch / CACHE_RECORD).write_text(json.dumps(record, indent=1))
            scratch.chmod(0o755)  # mkdtemp's 0700: a container's uid reads it too
            if folder.exists():
                shutil.rmtree(folder)
            os.rename(scratch, folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return folder


def warm_up(task: Task, runtime: Runtime, cache: Path, kind: str) -> dict | None:
    """Run the reader's warm-up on a copy of the task's repository (hidden tests laid) with `cache`
    as its writable GOCACHE; what it did, or None when it timed out."""
    from code_gym.grading.file_policy import lay_hidden_tests
    from code_gym.languages.go.runner import warm_command
    from code_gym.sandbox import Limits, LocalSandbox
    from code_gym.sandbox.records import new_nonce

    copy = Path(tempfile.mkdtemp(prefix=owned_prefix("gowarm")))
    try:
        repo = copy / "repo"
        shutil.copytree(task.repo, repo, symlinks=True)
        lay_hidden_tests(task, repo)
        limits = Limits(timeout=WARM_TIMEOUT, max_output=1 << 20, processes=512)
        sandbox = LocalSandbox(repo, kind, limits, runtime=runtime)
        binds = {cache: str(cache)}
        started = time.monotonic()
        run = sandbox.exec(warm_command(task.test_command, sandbox.inside(cache, binds)), binds=binds,
                           records=new_nonce())
        sandbox.close()
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    if run.timed_out:
        return None
    return {"task": task.id, "exit_code": run.exit_code, "seconds": round(time.monotonic() - started, 2),
            "output": run.output[-2000:]}


# -- helpers

def _digest(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


class _locked:
    """An exclusive flock on `path` for a with-block."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.handle = open(self.path, "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.handle.close()
