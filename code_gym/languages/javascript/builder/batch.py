"""Build tasks from many npm packages in one run: registry specs (`name@version`, fetched with
`npm pack`: nothing of the package runs to fetch it), package tarballs (.tgz), package folders, a
folder of them, or a file listing them. The run itself (resumable, one progress bar, per-package
yields, rejections, environment build times and cache hits in `OUT/manifest.json`, local or on
Ray) is every language's: `code_gym.grading.builder.build_many`."""
from __future__ import annotations

from pathlib import Path

from code_gym.grading import builder as shared
from code_gym.grading.builder import STATE_NAME, BatchReport, BuildError
from code_gym.languages.javascript.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.javascript.builder.project import ARCHIVE_SUFFIXES, is_npm_spec, npm_pack
from code_gym.tasks.loaders.folder import task_id

__all__ = ["STATE_NAME", "BatchReport", "build_many", "expand_sources", "fetch", "read_as_folder_of_projects",
           "source_key"]


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of packages (each subfolder and tarball in it a source), said
    so the per-package reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir() or (path / "package.json").exists():
        return None
    return f"{item} has no package.json, so it was read as a folder of packages (each subfolder and .tgz in it one package)"


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: an npm spec `name@version`, a package tarball, a package
    folder (one with package.json), a folder of packages and tarballs, or a text file listing any of
    these one a line (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file() and not item.endswith(ARCHIVE_SUFFIXES):
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif folder_of_projects := read_as_folder_of_projects(item):
            inner = sorted(p for p in path.iterdir() if p.is_dir() or p.name.endswith(ARCHIVE_SUFFIXES))
            if not inner:
                raise BuildError(f"{folder_of_projects}, and it holds none: pass a package folder, .tgz files or "
                                 "npm specs name@version")
            out += [str(p) for p in inner]
        elif path.exists() or is_npm_spec(item):
            out.append(item)
        else:
            raise BuildError(f"{item}: not a file, a folder or an npm spec `name@version` (an exact version)")
    return list(dict.fromkeys(out))


def source_key(source: str) -> str:
    """The folder under OUT/projects/ a source builds into: `name-version` for a spec."""
    name = source if is_npm_spec(source) else Path(source).name
    for suffix in ARCHIVE_SUFFIXES:
        name = name.removesuffix(suffix)
    return task_id(name.replace("@", "-"))


def fetch(source: str, downloads: Path) -> Path:
    """The source as a local tarball or folder: an npm spec packed into `downloads`."""
    return npm_pack(source, downloads) if is_npm_spec(source) else Path(source)


SOURCES = shared.Sources(build=build_tasks, fetch=fetch, key=source_key)


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` (`code_gym.grading.builder.build_many`): `options.workers`
    sandbox runs at once locally; `ray_address` sends each package to a Ray cluster instead. With
    `max_minutes`, no package starts after that many minutes (the rest stay pending: run again to
    go on). With `retry_failed`, packages that failed (`environment`, `error`) before are built again."""
    return shared.build_many(SOURCES, sources, out, options, ray_address, max_minutes, retry_failed)
