"""Build a project's environment: a virtualenv with pytest, coverage and the project's requirements,
made once per requirement set and interpreter and cached under the code-gym cache folder.

Installation needs the network, so it runs on the host, and only from wheels (`--only-binary
:all:`): installing a wheel runs none of its code, while building an sdist runs its setup.py, so a
requirement with no wheel for the interpreter rejects the environment, unless the spec allows
sdists: then the installer runs inside bubblewrap with the network (docs/security.md). After the
build the host never runs the environment's interpreter: tests and agent commands run it inside the
sandbox, which binds the folder read-only (its `Runtime`: code_gym/languages/python/runtime.py). The project itself is
never installed: its repository copy is the current folder of every command, so that copy is what
`import` finds.
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from email.parser import HeaderParser
from functools import lru_cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from code_gym.languages.python.environments.requirements import Requirements, project_requirements
from code_gym.util.hostfs import cache_root, owned_prefix
from code_gym.languages.python.environments.spec import BASE_REQUIREMENTS, EnvSpec
from code_gym.languages.python.runtime import python_runtime
from code_gym.sandbox.base import Runtime
from code_gym.tasks.task import Task, TaskError

RECORD = "code-gym-environment.json"  # written last: an environment folder without it is unfinished
INSTALLERS = ("uv", "pip")
OVERRIDES = "code-gym-overrides.txt"  # uv's --override file, in the environment's folder


class EnvironmentBuildError(TaskError):
    """The environment cannot be built; `requirement` is the one the installer could not provide
    (None when it names none), `error` the installer's own error line."""

    def __init__(self, message: str, requirement: str | None = None, error: str = ""):
        super().__init__(message)
        self.requirement = requirement
        self.error = error


@dataclass(frozen=True)
class Environment:
    spec: EnvSpec
    prefix: Path  # the virtualenv folder
    base_prefix: Path  # the installation its interpreter comes from
    installed: tuple[str, ...]  # "name==version" of every distribution in it
    pytest_plugins: tuple[str, ...]  # modules of its pytest11 entry points (loaded with PYTEST_PLUGINS)
    build_seconds: float
    installer: str
    cached: bool  # this call found it already built

    def runtime(self) -> Runtime:
        return python_runtime(self.prefix, self.base_prefix, self.pytest_plugins)


@lru_cache(maxsize=None)
def python_version(python: str) -> str:
    """The version of the interpreter at `python` (a trusted interpreter, not an environment's)."""
    try:
        out = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentBuildError(f"python {python!r} cannot be run ({exc}); pass the path of a Python "
                                    "interpreter (e.g. /usr/bin/python3.11)") from None
    if out.returncode != 0 or not re.fullmatch(r"\d+\.\d+\.\d+\S*", out.stdout.strip()):
        raise EnvironmentBuildError(f"{python!r} is not a Python interpreter: {out.stderr.strip()[-300:]}")
    return out.stdout.strip()


def default_python() -> str:
    """The interpreter code-gym runs on (the one a virtualenv of it was made from)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def environment_spec(requirements, python: str | None = None, sdists: bool = False) -> EnvSpec:
    """The spec of an environment with `requirements` (PEP 508 strings) on `python`; `sdists`: build
    requirements that have no wheel, in a sandbox (else they reject the environment)."""
    python = str(Path(python or default_python()).absolute())
    for text in requirements:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise EnvironmentBuildError(f"requirement {text!r} is not valid PEP 508: {exc}", text) from None
    return EnvSpec(tuple(sorted(set(requirements))), python, python_version(python), sdists)


# where interpreters are installed, besides PATH: the system's, pyenv's and uv's
_PYTHON_HOMES = ("/usr/bin", "/usr/local/bin", "~/.pyenv/versions/*/bin", "~/.local/share/uv/python/*/bin")


def trusted_pythons() -> dict[str, str]:
    """The interpreters the host may run to make an environment, by real path: the one code-gym runs
    on, and every `python3` / `python3.N` in a folder of PATH or an installation folder
    (_PYTHON_HOMES): places the user installs interpreters, not where task data lands."""
    found = [default_python(), sys.executable]
    folders = os.environ.get("PATH", "").split(os.pathsep) + [os.path.expanduser(h) for h in _PYTHON_HOMES]
    for folder in folders:
        found += glob.glob(os.path.join(folder, "python3")) + glob.glob(os.path.join(folder, "python3.[0-9]*"))
    return {os.path.realpath(p): p for p in found
            if p and not p.endswith("-config") and os.path.isfile(p) and os.access(p, os.X_OK)}


def check_spec(spec: EnvSpec) -> None:
    """Refuse a spec whose interpreter or requirements would make the host run what its author chose:
    the host runs `spec.python -m venv` and gives the requirements to the installer outside any
    sandbox, and a task folder's [environment] table (task data, possibly untrusted) sets both. The
    red team ran a script named as the interpreter, and an in-tree build backend through a
    requirement written as an installer option (`--editable=DIR`)."""
    if os.path.realpath(spec.python) not in trusted_pythons():
        raise EnvironmentBuildError(
            f"python {spec.python!r} is not an interpreter this machine trusts to make environments (the one "
            "code-gym runs on, or a python3 / python3.N on PATH or in /usr/bin, /usr/local/bin, pyenv's or uv's "
            "versions): a task's [environment] python must name one of those; rebuild the task here "
            "(code-gym tasks build) or edit it")
    for text in spec.requirements:
        try:
            if text.lstrip().startswith("-"):
                raise InvalidRequirement("an installer option, not a requirement")
            Requirement(text)
        except InvalidRequirement as exc:
            raise EnvironmentBuildError(f"requirement {text!r} is not valid PEP 508: {exc}", text) from None


def environments_dir() -> Path:
    return cache_root() / "environments"


def _installer_command(installer: str, prefix: Path, requirements: list[str], sdist_cache: Path | None) -> list[str]:
    """The install command: wheels only, or (`sdist_cache`: run in a sandbox) sdists built too, with
    a cache of their own so that nothing a build wrote reaches the host's installer cache."""
    python = str(prefix / "bin" / "python")
    binary = ["--only-binary", ":all:"] if sdist_cache is None else ["--cache-dir", str(sdist_cache)]
    if installer == "uv":
        from uv import find_uv_bin

        # the grader's pytest and coverage win over what a requirement's own metadata asks for
        # (an old plugin's `pytest<8`); pip has no overrides: there such a conflict fails the build
        overrides = prefix / OVERRIDES
        overrides.write_text("".join(f"{r}\n" for r in BASE_REQUIREMENTS))
        return [find_uv_bin(), "pip", "install", "--python", python, *binary, "--override", str(overrides),
                "--quiet", *requirements]
    return [sys.executable, "-m", "pip", "--python", python, "install", *binary, "--quiet",
            "--disable-pip-version-check", "--no-input", *requirements]


def _sandboxed(command: list[str], prefix: Path, cache: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run the installer in bubblewrap with the network, the environment and the sdist cache
    writable: an sdist's build (its setup.py) runs there, not on the host."""
    from code_gym.sandbox import Limits, LocalSandbox

    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=owned_prefix("envbuild")))
    try:
        limits = Limits(timeout=timeout, memory_bytes=8 << 30, file_size_bytes=4 << 30, max_output=1 << 20, processes=512)
        sandbox = LocalSandbox(scratch, "bwrap", limits, network=True)
        run = sandbox.exec(shlex.join(command), binds={prefix: str(prefix), cache: str(cache)})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if run.timed_out:
        raise subprocess.TimeoutExpired(command, timeout)
    return subprocess.CompletedProcess(command, run.exit_code, run.output, "")


_ERROR_LINE = re.compile(r"^\s*(?:ERROR:|error:|cause:|hint:|×|╰─▶)\s*(.*)$")


def explain_failure(output: str, requirements: list[str]) -> tuple[str | None, str]:
    """(the requirement the installer's output blames, its error line) from pip's or uv's output."""
    lines = [m.group(1).strip() for m in map(_ERROR_LINE.match, output.splitlines()) if m and m.group(1).strip()]
    names = {canonicalize_name(Requirement(r).name): r for r in requirements}
    for line in lines:
        for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", line):
            if canonicalize_name(word) in names:
                return names[canonicalize_name(word)], line
    return None, (lines[0] if lines else output.strip()[-300:])


def _distributions(prefix: Path) -> tuple[list[str], list[str]]:
    """("name==version" of each installed distribution, its pytest11 plugin modules), read from the
    dist-info files (nothing of the environment is imported or run)."""
    installed, plugins = [], []
    for info in sorted(prefix.glob("lib/python*/site-packages/*.dist-info")):
        try:
            meta = HeaderParser().parsestr((info / "METADATA").read_text(errors="replace"))
        except OSError:
            continue
        installed.append(f"{canonicalize_name(meta.get('Name', info.name))}=={meta.get('Version', '?')}")
        entry_points = info / "entry_points.txt"
        if entry_points.is_file():
            section = None
            for line in entry_points.read_text(errors="replace").splitlines():
                line = line.strip()
                if line.startswith("["):
                    section = line.strip("[]").strip()
                elif section == "pytest11" and "=" in line:
                    plugins.append(line.split("=", 1)[1].split(":")[0].strip())
    return sorted(installed), sorted(set(plugins))


def _base_prefix(prefix: Path) -> Path:
    for line in (prefix / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise EnvironmentBuildError(f"{prefix}/pyvenv.cfg names no interpreter home")


def _load(spec: EnvSpec, prefix: Path, cached: bool) -> Environment:
    record = json.loads((prefix / RECORD).read_text())
    return Environment(spec, prefix, Path(record["base_prefix"]), tuple(record["installed"]),
                       tuple(record["pytest_plugins"]), record["build_seconds"], record["installer"], cached)


def _install(spec: EnvSpec, prefix: Path, installer: str, timeout: float, sdist_cache: Path | None) -> None:
    made = subprocess.run([spec.python, "-m", "venv", "--without-pip", str(prefix)], capture_output=True, text=True)
    if made.returncode != 0:
        raise EnvironmentBuildError(f"cannot make a virtualenv with {spec.python}: {made.stderr.strip()[-500:]}")
    requirements = list(spec.install_set)
    try:
        command = _installer_command(installer, prefix, requirements, sdist_cache)
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL) \
            if sdist_cache is None else _sandboxed(command, prefix, sdist_cache, timeout)
    except subprocess.TimeoutExpired:
        raise EnvironmentBuildError(f"installing {len(requirements)} requirements took over {timeout:g}s") from None
    if run.returncode != 0:
        requirement, line = explain_failure(run.stdout + "\n" + run.stderr, requirements)
        blamed = f"requirement {requirement!r} cannot be installed" if requirement else "the requirements cannot be installed"
        how = ("sdists built in a sandbox" if sdist_cache is not None else
               f"wheels only: a requirement with no wheel for Python {spec.python_version} needs sdists=True "
               "(--sdists), which builds it in a sandbox with the network")
        raise EnvironmentBuildError(f"the environment cannot be built: {blamed}: {line} ({installer}, {how})",
                                    requirement, line)


def build_environment(spec: EnvSpec, installer: str = "uv", root: Path | None = None,
                      timeout: float = 900.0) -> Environment:
    """The environment of `spec`, built now unless the cache holds it (`Environment.cached`).
    Only wheels are installed unless `spec.sdists`: then the installer runs inside bubblewrap with
    the network, so an sdist's build runs there (docs/security.md, "Environments").
    Safe to call from several processes at once: one builds, the others wait for it."""
    if installer not in INSTALLERS:
        raise ValueError(f"installer must be one of {INSTALLERS}, got {installer!r}")
    check_spec(spec)
    root = Path(root or environments_dir())
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / spec.key
    with open(root / f"{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (prefix / RECORD).is_file():
            return _load(spec, prefix, cached=True)
        shutil.rmtree(prefix, ignore_errors=True)  # an unfinished build (a crash): start again
        started = time.monotonic()
        try:
            _install(spec, prefix, installer, timeout, root / ".sdist-cache" if spec.sdists else None)
        except BaseException:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        installed, plugins = _distributions(prefix)
        record = {"spec": {"requirements": list(spec.requirements), "python": spec.python,
                           "python_version": spec.python_version},
                  "base_prefix": str(_base_prefix(prefix)), "installed": installed, "pytest_plugins": plugins,
                  "build_seconds": round(time.monotonic() - started, 3), "installer": installer, "sdists": spec.sdists}
        tmp = prefix / f".{RECORD}.{os.getpid()}"
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, prefix / RECORD)
        return _load(spec, prefix, cached=False)


_RUNTIMES: dict[tuple[str, str], Runtime] = {}


def task_runtime(task: Task, installer: str = "uv") -> Runtime:
    """What a sandbox running `task`'s commands needs: its environment, built from the spec in
    task.toml when this machine's cache lacks it, or (the task names none) the backend's own
    interpreter; the records reporter and the warm pytest server either way."""
    if task.environment is None:
        return python_runtime()
    key = (str(environments_dir()), task.environment.key)
    if key not in _RUNTIMES:
        _RUNTIMES[key] = build_environment(task.environment, installer).runtime()
    return _RUNTIMES[key]



def project_environment(root: Path, python: str | None = None, installer: str = "uv",
                        extra: tuple[str, ...] = (), sdists: bool = False) -> tuple[Requirements, Environment | None]:
    """The requirements the project at `root` declares (plus `extra`), and its environment, built or
    from the cache; None when it declares nothing (code-gym's own interpreter has pytest and
    coverage). A requirement that cannot be installed raises EnvironmentBuildError naming it and the
    file that declares it."""
    requirements = project_requirements(root)
    wanted = tuple(dict.fromkeys(requirements.requirements + tuple(extra)))
    if not wanted:
        return requirements, None
    try:
        return requirements, build_environment(environment_spec(wanted, python, sdists), installer)
    except EnvironmentBuildError as exc:
        where = requirements.sources.get(exc.requirement or "", ())
        if not where:
            raise
        raise EnvironmentBuildError(f"{exc} (declared in {', '.join(where)})", exc.requirement, exc.error) from None
