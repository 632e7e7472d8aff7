"""Build tasks from many Go sources in one run: Debian package names (`golang-*-dev`, fetched with
`apt-get download` and unpacked with `dpkg-deb -x`: nothing of the package runs to fetch it),
folders holding an import path's tree, a folder of such folders, or a file listing any of these.
The run itself (resumable, one progress bar, per-package yields, rejections, environment build
times and cache hits in `OUT/manifest.json`) is every language's:
`code_gym.grading.builder.build_many`."""
from __future__ import annotations

from pathlib import Path

from code_gym.grading import builder as shared
from code_gym.grading.builder import STATE_NAME, BatchReport, BuildError
from code_gym.languages.go.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.go.builder.project import is_debian_name
from code_gym.tasks.loaders.folder import task_id

__all__ = ["STATE_NAME", "BatchReport", "build_many", "expand_sources", "fetch", "read_as_folder_of_projects",
           "source_key"]


def _holds_go(path: Path) -> bool:
    """Whether a folder is one source: Go files in it or in the single-folder chain below it."""
    here = path
    while True:
        entries = [e for e in here.iterdir() if not e.name.startswith(".")]
        if any(e.is_file() for e in entries) or len(entries) != 1:
            return any(here.rglob("*.go"))
        here = entries[0]


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of sources (each subfolder one import path's tree), said so
    the per-source reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir() or _holds_go(path) and not _several(path):
        return None
    return f"{item} holds several import path trees side by side, so it was read as a folder of sources (each subfolder one)"


def _several(path: Path) -> bool:
    folders = [e for e in path.iterdir() if e.is_dir() and not e.name.startswith(".")]
    return len(folders) > 1 and not any(e.is_file() for e in path.iterdir()) and \
        all(_holds_go(f) for f in folders) and not any("." in f.name for f in folders)


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: a Debian package name (golang-*-dev), a folder holding an
    import path's tree, a folder of such folders, or a text file listing any of these one a line
    (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file():
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif read_as_folder_of_projects(item):
            out += [str(p) for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith(".")]
        elif path.is_dir() or is_debian_name(item):
            out.append(item)
        else:
            raise BuildError(f"{item}: not a file, a folder or a Debian package name golang-*-dev")
    return list(dict.fromkeys(out))


def source_key(source: str) -> str:
    """The folder under OUT/projects/ a source builds into: the package name without golang-/-dev."""
    name = source if is_debian_name(source) else Path(source).name
    return task_id(name.removeprefix("golang-").removesuffix("-dev"))


def fetch(source: str, downloads: Path) -> Path:
    """The source as it is: a package is unpacked by the build itself (from apt's download cache)."""
    return Path(source)


SOURCES = shared.Sources(build=build_tasks, fetch=fetch, key=source_key)


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` (`code_gym.grading.builder.build_many`): `options.workers`
    sandbox runs at once locally. With `max_minutes`, no source starts after that many minutes
    (the rest stay pending: run again to go on). With `retry_failed`, sources that failed
    (`environment`, `error`) before are built again. Ray is not offered: a Debian package is
    fetched on the node that builds it, and the nodes' apt would have to agree."""
    if ray_address:
        raise BuildError("Go sources are built locally (each needs the local apt index); drop --ray")
    return shared.build_many(SOURCES, sources, out, options, None, max_minutes, retry_failed)
