"""A JavaScript project's environment: the `node_modules` its package.json (and lockfile) asks
for, installed once per dependency set and cached, bound read-only into the sandbox.

What is installed comes from the task's own package.json (the grader's copy: the agent never
changes dependencies): `dependencies`, `devDependencies` and `optionalDependencies`, plus
package-lock.json when the project ships one. npm installs them on the host from the registry
with install scripts off (`--ignore-scripts`: no package code runs while installing) into
`<cache>/js-environments/<key>/node_modules`, where the key hashes everything that decides the
result. A dependency npm cannot install rejects the environment with the package named.
Commands find the packages through NODE_PATH (node's CommonJS `require`, jest's resolver, the
grader's drivers) and their programs (`mocha`, `jest`, `tape`) through `node_modules/.bin` on PATH.
ES modules do not read NODE_PATH: the environment holds a resolve hook (ESM_HOOK, registered
with `--import` in NODE_OPTIONS) that looks up a bare specifier the repository cannot resolve
in the environment's node_modules, as `require` does through NODE_PATH.
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

from code_gym.tasks.task import Task, TaskError
from code_gym.util.hostfs import cache_root

ENV_FORMAT = "2"  # bump when the way environments are built changes: every key changes with it
RECORD = "code-gym-environment.json"  # written last: a folder without it is unfinished
DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "optionalDependencies")
LOCKFILE = "package-lock.json"
# a version range npm resolves from the registry; anything else (file:, link:, git URLs, tarball
# URLs, github shorthands) names code outside the registry, which an environment does not take
_REGISTRY_RANGE = re.compile(r"^(?:npm:)?[\w.*^~<>=|@/ -]*$")
INSTALL_TIMEOUT = 600.0
ESM_HOOK = "esm-register.mjs"  # in the environment's folder: `node --import` it to resolve ES imports there
_ESM_REGISTER = "import { register } from 'node:module';\nregister('./esm-resolve.mjs', import.meta.url);\n"
# a bare specifier the importing file cannot resolve is resolved as if imported from the folder
# holding node_modules (node 18.19+ and 20.6+ run resolve hooks registered with module.register)
_ESM_RESOLVE = """const ANCHOR = new URL('./anchor.mjs', import.meta.url).href;
const BARE = /^(?![./]|[a-zA-Z][a-zA-Z0-9+.-]*:)/;
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (error && error.code === 'ERR_MODULE_NOT_FOUND' && BARE.test(specifier) && context.parentURL !== ANCHOR) {
      return next(specifier, { ...context, parentURL: ANCHOR });
    }
    throw error;
  }
}
"""


class EnvironmentBuildError(TaskError):
    """The environment cannot be built; `package` is the dependency npm could not install (None
    when its error names none) and `error` npm's own error lines."""

    def __init__(self, message: str, package: str | None = None, error: str = ""):
        super().__init__(message)
        self.package = package
        self.error = error


@dataclass(frozen=True)
class NpmSpec:
    """What a project's node_modules holds: its declared dependencies (name -> version range,
    sorted) and the hash of its lockfile ("" without one). Its key names the cached build."""
    dependencies: tuple[tuple[str, str], ...]
    lockfile: str = ""

    @property
    def key(self) -> str:
        text = json.dumps([ENV_FORMAT, node_version(), self.dependencies, self.lockfile])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class NpmEnvironment:
    spec: NpmSpec
    folder: Path  # holds node_modules/ and the record
    installed: tuple[str, ...]  # "name@version" of every package npm put in node_modules
    build_seconds: float
    cached: bool  # this call found it already built

    @property
    def node_modules(self) -> Path:
        return self.folder / "node_modules"

    @property
    def esm_hook(self) -> Path:
        return self.folder / ESM_HOOK


@lru_cache(maxsize=1)
def node_version() -> str:
    """The version of the node that runs the tests (the system's, which every sandbox shows)."""
    node = shutil.which("node")
    if node is None:
        raise TaskError("node is not installed: JavaScript tasks need node 18 or newer "
                        "(run scripts/setup.sh, or apt-get install nodejs npm)")
    return subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()


def read_package_json(repo: Path) -> dict:
    """The project's package.json as a dict ({} when it has none); TaskError when it is not JSON."""
    path = repo / "package.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: not valid JSON ({exc}); fix the project's package.json") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: must hold a JSON object")
    return data


def project_spec(repo: Path) -> NpmSpec | None:
    """The environment the project at `repo` declares (None: no dependencies at all). A dependency
    from outside the registry is refused here, naming it."""
    package = read_package_json(repo)
    dependencies: dict[str, str] = {}
    for name in DEPENDENCY_FIELDS:
        table = package.get(name, {})
        if not isinstance(table, dict):
            raise TaskError(f"{repo / 'package.json'}: '{name}' must be an object of name -> version range")
        for dependency, wanted in table.items():
            if not isinstance(wanted, str) or not _REGISTRY_RANGE.match(wanted):
                raise EnvironmentBuildError(
                    f"{repo / 'package.json'}: {name} {dependency!r} asks for {wanted!r}, which is not a version range "
                    "of the npm registry (local paths, git and tarball URLs are not installed): pin a registry version",
                    dependency)
            dependencies.setdefault(dependency, wanted)
    if not dependencies:
        return None
    lock = repo / LOCKFILE
    digest = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else ""
    return NpmSpec(tuple(sorted(dependencies.items())), digest)


def environments_dir() -> Path:
    return cache_root() / "js-environments"


def build_environment(spec: NpmSpec, repo: Path | None = None, root: Path | None = None) -> NpmEnvironment:
    """The environment of `spec`, from the cache or installed now (under a lock, so concurrent
    graders build it once). `repo` supplies the lockfile when the spec has one."""
    folder = (root or environments_dir()) / spec.key
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / RECORD).is_file():
            return _load(spec, folder, cached=True)
        started = time.monotonic()
        _install(spec, folder, repo)
        installed = _installed(folder / "node_modules")
        record = {"key": spec.key, "node": node_version(), "dependencies": dict(spec.dependencies),
                  "lockfile": spec.lockfile, "installed": installed, "build_seconds": time.monotonic() - started}
        tmp = folder / (RECORD + ".tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, folder / RECORD)
        return _load(spec, folder, cached=False)


def _load(spec: NpmSpec, folder: Path, cached: bool) -> NpmEnvironment:
    record = json.loads((folder / RECORD).read_text())
    return NpmEnvironment(spec, folder, tuple(record["installed"]), record["build_seconds"], cached)


def _install(spec: NpmSpec, folder: Path, repo: Path | None) -> None:
    """npm install into a scratch folder beside `folder`, moved into place when it succeeded."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{spec.key}-", dir=folder.parent))
    try:
        manifest = {"name": "code-gym-environment", "version": "0.0.0", "private": True,
                    "dependencies": dict(spec.dependencies)}
        (scratch / "package.json").write_text(json.dumps(manifest, indent=1))
        if spec.lockfile and repo is not None and (repo / LOCKFILE).is_file():
            shutil.copyfile(repo / LOCKFILE, scratch / LOCKFILE)
        command = ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save",
                   "--loglevel=error", "--prefix", str(scratch)]
        try:
            done = subprocess.run(command, cwd=scratch, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                  env=_npm_env())
        except subprocess.TimeoutExpired:
            raise EnvironmentBuildError(f"npm install did not finish in {INSTALL_TIMEOUT:g} s for "
                                        f"{_listed(spec)}; the registry may be unreachable") from None
        if done.returncode != 0:
            package, error = explain_failure(done.stdout + done.stderr, [n for n, _ in spec.dependencies])
            named = f" ({package} could not be installed)" if package else ""
            raise EnvironmentBuildError(f"npm install failed for {_listed(spec)}{named}: {error}", package, error)
        (scratch / ESM_HOOK).write_text(_ESM_REGISTER)
        (scratch / "esm-resolve.mjs").write_text(_ESM_RESOLVE)
        if folder.exists():
            shutil.rmtree(folder)
        scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _npm_env() -> dict[str, str]:
    """npm's environment: the user's, with scripts off however npm is configured."""
    return os.environ | {"npm_config_ignore_scripts": "true", "npm_config_update_notifier": "false"}


def _listed(spec: NpmSpec) -> str:
    return ", ".join(f"{name}@{wanted}" for name, wanted in spec.dependencies)


_PACKAGE_IN_ERROR = (
    re.compile(r"404 Not Found - GET \S+?/(@[^/\s%]+(?:/|%2[fF])[^/\s]+|[^/\s@]+)(?:\s|$)"),
    re.compile(r"No matching version found for (@?[^@\s]+)@"),
    re.compile(r"notarget .*?for (@?[^@\s]+)@"),
    re.compile(r"'(@?[^@'\s]+)@[^']*' is not in this registry"),
)


def explain_failure(output: str, names: list[str]) -> tuple[str | None, str]:
    """(the dependency npm's output names as the one it could not install, or None; its error lines)."""
    lines = [line for line in output.splitlines()
             if ("ERR" in line or "error" in line.lower()) and "complete log" not in line]
    error = " ".join(line.split(None, 2)[-1] if line.startswith("npm") else line for line in lines[:4]).strip()
    for pattern in _PACKAGE_IN_ERROR:
        match = pattern.search(output)
        if match:
            name = match.group(1).replace("%2f", "/").replace("%2F", "/")
            return (name if name in names or not names else name), error or output.strip()[-300:]
    return None, error or output.strip()[-300:]


def _installed(node_modules: Path) -> list[str]:
    """"name@version" of every package npm laid (its hidden lockfile lists them)."""
    hidden = node_modules / ".package-lock.json"
    if not hidden.is_file():
        return []
    packages = json.loads(hidden.read_text()).get("packages", {})
    return sorted(f"{path.rsplit('node_modules/', 1)[-1]}@{meta.get('version', '?')}"
                  for path, meta in packages.items() if path)


def task_environment(task: Task) -> NpmEnvironment | None:
    """The environment of `task`'s project, built on first use; None when it declares no dependency."""
    spec = project_spec(task.repo)
    return None if spec is None else build_environment(spec, task.repo)
