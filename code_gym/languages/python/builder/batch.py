"""Build tasks from many Python projects in one run: sdists, requirement specs (`name==version`,
fetched from the package index as an sdist; nothing of the project runs to fetch it), project
folders, a folder of them, or a file listing them. The run itself (resumable, one progress bar,
local or on Ray) is every language's: `code_gym.grading.builder.build_many`."""
from __future__ import annotations

import os
import re
from pathlib import Path

from code_gym.grading import builder as shared
from code_gym.grading.builder import STATE_NAME, BatchReport, BuildError
from code_gym.languages.python.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.python.builder.project import SDIST_SUFFIXES
from code_gym.tasks.loaders.folder import task_id

_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")

__all__ = ["STATE_NAME", "BatchReport", "build_many", "expand_sources", "fetch", "fetch_sdist",
           "read_as_folder_of_projects", "source_key"]


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of projects (each subfolder and sdist in it a source), said
    so the per-project reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir() or any((path / m).exists() for m in _PROJECT_MARKERS):
        return None
    return (f"{item} has no pyproject.toml, setup.py or setup.cfg, so it was read as a folder of projects "
            "(each subfolder and sdist in it one project)")


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: an sdist, a `name==version` spec, a project folder
    (one with pyproject.toml, setup.py or setup.cfg), a folder of projects and sdists, or a text
    file listing any of these one a line (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file() and not item.endswith(SDIST_SUFFIXES):
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif folder_of_projects := read_as_folder_of_projects(item):
            inner = sorted(p for p in path.iterdir() if p.is_dir() or p.name.endswith(SDIST_SUFFIXES))
            if not inner:
                raise BuildError(f"{folder_of_projects}, and it holds none: pass a project folder, "
                                 "sdists or name==version specs")
            out += [str(p) for p in inner]
        elif path.exists() or _REQUIREMENT.match(item):
            out.append(item)
        else:
            raise BuildError(f"{item}: not a file, a folder or a `name==version` requirement")
    seen: set[str] = set()
    return [s for s in out if not (s in seen or seen.add(s))]


def source_key(source: str) -> str:
    name = Path(source).name if not _REQUIREMENT.match(source) or Path(source).exists() else source
    for suffix in SDIST_SUFFIXES:
        name = name.removesuffix(suffix)
    return task_id(name.replace("==", "-"))


def fetch_sdist(spec: str, folder: Path) -> Path:
    """The sdist of `name==version` from the package index (PEP 503/691, through pypi-simple),
    its digest checked; kept in `folder`, so a second run downloads nothing."""
    from pypi_simple import PyPISimple

    name, version = spec.split("==")
    folder.mkdir(parents=True, exist_ok=True)
    with PyPISimple() as client:
        page = client.get_project_page(name)
        sdists = [p for p in page.packages if p.version == version and p.package_type == "sdist"]
        if not sdists:
            raise BuildError(f"{spec}: the index has no sdist of this version (the builder needs the source "
                             f"with its tests; pick a version that has a .tar.gz)")
        target = folder / sdists[0].filename
        if not target.exists():
            client.download_package(sdists[0], path=str(target) + ".part", verify=True)
            os.replace(str(target) + ".part", target)
    return target


def fetch(source: str, downloads: Path) -> Path:
    """The source as a local sdist or folder: a `name==version` spec fetched into `downloads`."""
    if _REQUIREMENT.match(source) and not Path(source).exists():
        return fetch_sdist(source, downloads)
    return Path(source)


SOURCES = shared.Sources(build=build_tasks, fetch=fetch, key=source_key)


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every source into `out` (`code_gym.grading.builder.build_many`): `options.workers`
    sandbox runs at once locally; `ray_address` ('auto', an address, or 'local' for a Ray instance
    on this machine) sends each project to a Ray cluster instead. With `max_minutes`, no project
    starts after that many minutes (the ones left stay pending: run again to go on). With
    `retry_failed`, projects that failed (`environment`, `error`) in an earlier run are built again."""
    return shared.build_many(SOURCES, sources, out, options, ray_address, max_minutes, retry_failed)
