"""Build tasks from many crates in one run: Debian package names (`librust-semver-dev`, unpacked
from apt's download: nothing of the crate runs to fetch it), crate folders, a folder of them, or a
file listing them. The run itself (resumable, one progress bar, per-crate yields, rejections,
environment build times and cache hits in `OUT/manifest.json`, local or on Ray) is every
language's: `code_gym.grading.builder.build_many`."""
from __future__ import annotations

from pathlib import Path

from code_gym.grading import builder as shared
from code_gym.grading.builder import STATE_NAME, BatchReport, BuildError
from code_gym.languages.rust.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.rust.builder.project import REGISTRY, is_debian_package, unpack_package
from code_gym.tasks.loaders.folder import task_id

__all__ = ["STATE_NAME", "BatchReport", "build_many", "expand_sources", "fetch", "read_as_folder_of_projects",
           "source_key"]


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of crates (each subfolder with a Cargo.toml a source), said so
    the per-crate reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir() or (path / "Cargo.toml").exists():
        return None
    return f"{item} has no Cargo.toml, so it was read as a folder of crates (each subfolder with a Cargo.toml one crate)"


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: a Debian package `librust-NAME-dev`, a crate folder (one
    with Cargo.toml), a folder of crate folders, or a text file listing any of these one a line
    (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file():
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif folder_of_projects := read_as_folder_of_projects(item):
            inner = sorted(p for p in path.iterdir() if p.is_dir() and (p / "Cargo.toml").is_file())
            if not inner:
                raise BuildError(f"{folder_of_projects}, and it holds none: pass crate folders or Debian packages "
                                 "librust-NAME-dev")
            out += [str(p) for p in inner]
        elif path.exists() or is_debian_package(item):
            out.append(item)
        else:
            raise BuildError(f"{item}: not a file, a crate folder or a Debian package librust-NAME-dev")
    return list(dict.fromkeys(out))


def source_key(source: str) -> str:
    """The folder under OUT/projects/ a source builds into: the crate's name for a package."""
    name = source.removeprefix("librust-").removesuffix("-dev") if is_debian_package(source) else Path(source).name
    return task_id(name)


def fetch(source: str, downloads: Path) -> Path:
    """The source as a local crate folder: a package's crate unpacked into `downloads` (kept: a
    second call unpacks nothing; the .deb comes from the shared Debian download cache)."""
    if not is_debian_package(source):
        return Path(source)
    folder = downloads / source
    if not folder.is_dir():
        unpack_package(source, folder)
    crates = sorted(folder.glob(f"unpacked/{REGISTRY}/*/Cargo.toml"))
    return crates[0].parent


SOURCES = shared.Sources(build=build_tasks, fetch=fetch, key=source_key)


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` (`code_gym.grading.builder.build_many`): `options.workers`
    sandbox runs at once locally; `ray_address` sends each crate to a Ray cluster instead. With
    `max_minutes`, no crate starts after that many minutes (the rest stay pending: run again to go
    on). With `retry_failed`, crates that failed (`environment`, `error`) before are built again."""
    return shared.build_many(SOURCES, sources, out, options, ray_address, max_minutes, retry_failed)
