"""The project a build starts from: a private copy of a source folder or an unpacked sdist, with its
test files and source modules told apart."""
from __future__ import annotations

import posixpath
import shlex
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from code_gym.grading.builder import BuildError
from code_gym.languages.python.environments import Environment, EnvironmentBuildError, Requirements, project_environment, pytest_config
from code_gym.tasks.loaders.folder import copy_tree, task_id
from code_gym.languages.python.runtime import python_runtime
from code_gym.sandbox import Runtime

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "build", "dist",
                       ".eggs", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", "site-packages"})
TEST_DIRS = frozenset({"tests", "test", "testing"})
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")


@dataclass(frozen=True)
class Project:
    name: str
    root: Path  # a private copy: the builder never touches the source
    test_files: tuple[str, ...]  # repo-relative, pytest's default naming (test_*.py, *_test.py)
    source_files: tuple[str, ...]  # the other .py files: where tasks are made
    test_command: str
    requirements: Requirements | None = None  # what its metadata declares (None: environments off)
    environment: Environment | None = None  # the virtualenv its tests run with (None: code-gym's Python)

    @property
    def runtime(self) -> Runtime:
        return self.environment.runtime() if self.environment is not None else python_runtime()

    @property
    def manifest_environment(self) -> dict:
        """The task.toml [environment] table of its tasks (empty: none)."""
        return {"environment": self.environment.spec.as_manifest()} if self.environment is not None else {}


@dataclass(frozen=True)
class EnvOptions:
    """How a project's environment is made (code_gym.languages.python.environments)."""
    enabled: bool = True  # False: tests run with code-gym's own interpreter, as before environments
    python: str | None = None  # the interpreter to build on (None: code-gym's own)
    installer: str = "uv"  # or "pip"
    sdists: bool = False  # build requirements that have no wheel, in a sandbox with the network


def _skipped(rel: str) -> bool:
    name = posixpath.basename(rel)
    return name in SKIP_DIRS or name.endswith(".egg-info")


def is_test_file(rel: str) -> bool:
    name = posixpath.basename(rel)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def is_test_code(rel: str) -> bool:
    """Test files, conftest.py, and anything in a tests/ folder: never a place to make a task."""
    parts = rel.split("/")
    return is_test_file(rel) or parts[-1] == "conftest.py" or any(p in TEST_DIRS for p in parts[:-1])


def test_folders(paths) -> set[str]:
    """The outermost test folders ("tests/", "pkg/tests/") holding `paths`; none for a test file
    beside the code."""
    found = set()
    for path in paths:
        parts = path.split("/")[:-1]
        depth = next((i for i, part in enumerate(parts) if part in TEST_DIRS), None)
        if depth is not None:
            found.add("/".join(parts[: depth + 1]) + "/")
    return found


def _unpack(archive: Path, target: Path) -> Path:
    """Unpack an sdist into `target`; returns its top folder."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                if name.startswith("/") or ".." in name.split("/"):
                    raise BuildError(f"{archive}: entry {name!r} points outside the archive")
            zf.extractall(target)
    else:
        try:
            with tarfile.open(archive) as tf:
                tf.extractall(target, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise BuildError(f"{archive}: not a readable sdist: {exc}") from None
    entries = list(target.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def open_project(source: str | Path, workdir: Path, env_options: EnvOptions = EnvOptions()) -> Project:
    """Copy (or unpack) `source` into `workdir`, list its test files and source modules, and build
    (or find in the cache) the environment its metadata asks for."""
    source = Path(source)
    if source.is_dir():
        origin, name = source, source.resolve().name
    elif source.is_file() and source.name.endswith(SDIST_SUFFIXES):
        origin = _unpack(source, workdir / "unpacked")
        name = origin.name if origin != workdir / "unpacked" else source.name.split(".")[0]
    else:
        raise BuildError(f"{source}: not a project folder or an sdist ({', '.join(SDIST_SUFFIXES)})")
    root = workdir / "project"
    copy_tree(origin, root, _skipped)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    tests = tuple(f for f in files if is_test_file(f))
    if not tests:
        raise BuildError(f"{source}: no test files (test_*.py or *_test.py): the builder needs the project's pytest suite")
    sources = tuple(f for f in files if not is_test_code(f) and posixpath.basename(f) != "setup.py")
    if not sources:
        raise BuildError(f"{source}: no source modules outside the tests")
    src_layout = (root / "src").is_dir() and any(f.startswith("src/") for f in sources)
    if not env_options.enabled:
        return Project(task_id(name), root, tests, sources, make_test_command(root, src_layout))
    try:
        requirements, environment = project_environment(root, env_options.python, env_options.installer,
                                                            sdists=env_options.sdists)
    except EnvironmentBuildError as exc:
        raise BuildError(f"{source}: {exc}") from None
    return Project(task_id(name), root, tests, sources, make_test_command(root, src_layout, environment), requirements,
                   environment)


def make_test_command(root: Path, src_layout: bool, environment: Environment | None = None) -> str:
    """The tasks' test command: `python -m pytest`, with `src/` on pytest's `pythonpath` for a src
    layout (added to the project's own pythonpath setting, which `-o` would otherwise replace:
    semver's `pythonpath = src tests` puts its conftest's helper modules on the path), and
    `--no-cov` when the environment has pytest-cov (a project's `--cov` addopts would trace every
    run of the builder and the grader, and fight the builder's coverage tracer).

    pytest's own `pythonpath` setting, not a PYTHONPATH prefix: a command that sets PYTHONPATH
    replaces the grader's results plugin path (its runs are void) and cannot use the warm runner,
    which takes only `python -m pytest` plus arguments as shlex.join writes them."""
    words = ["python", "-m", "pytest"]
    configured = pytest_config(root).get("pythonpath", "").split()
    if src_layout and "src" not in configured:
        words += ["-o", "pythonpath=" + " ".join(["src", *configured])]
    if environment is not None and "pytest_cov.plugin" in environment.pytest_plugins:
        words.append("--no-cov")
    return shlex.join(words)
