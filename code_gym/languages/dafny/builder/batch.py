"""Build tasks from many verified Dafny programs in one run: .dfy files, folders of them, or text
files listing either one a line. Each program is a project of the shared batch run
(`code_gym.grading.builder.build_many`: resumable, one progress bar, per-program yields and
rejections in `OUT/manifest.json`, local or on Ray)."""
from __future__ import annotations

from pathlib import Path

from code_gym.grading import builder as shared
from code_gym.grading.builder import BatchReport, BuildError
from code_gym.languages.dafny.builder.pipeline import BuildOptions, build_tasks
from code_gym.tasks.loaders.folder import task_id

__all__ = ["BatchReport", "build_many", "expand_sources", "fetch", "read_as_folder_of_projects", "source_key"]

CORPUS = Path(__file__).resolve().parent / "corpus"  # the programs this project wrote and verified


def read_as_folder_of_projects(item: str) -> str | None:
    """Why `item` is read as a folder of programs (each .dfy file in it one source), said so the
    per-program reasons that follow make sense; None for anything else."""
    path = Path(item)
    if not path.is_dir():
        return None
    return f"{item} is a folder, so each .dfy file in it was read as one program"


def expand_sources(items: list[str]) -> list[str]:
    """Sources from what the user passed: a .dfy file, a folder of them (not its subfolders), or
    a text file listing either one a line (# starts a comment)."""
    out: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_file() and path.suffix == ".dfy":
            out.append(item)
        elif path.is_file():
            lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
            out += expand_sources([line for line in lines if line])
        elif path.is_dir():
            inner = sorted(str(p) for p in path.glob("*.dfy") if p.is_file())
            if not inner:
                raise BuildError(f"{item} holds no .dfy file: pass verified Dafny programs or folders of them")
            out += inner
        else:
            raise BuildError(f"{item}: not a file or a folder: pass .dfy files, folders of them, or a list of either")
    return list(dict.fromkeys(out))


def source_key(source: str) -> str:
    """The folder under OUT/projects/ a program builds into: its file name's stem."""
    return task_id(Path(source).stem)


def fetch(source: str, downloads: Path) -> Path:
    return Path(source)


SOURCES = shared.Sources(build=build_tasks, fetch=fetch, key=source_key)


def build_many(sources: list[str], out: str | Path, options: BuildOptions = BuildOptions(),
               ray_address: str | None = None, max_minutes: float | None = None,
               retry_failed: bool = False) -> BatchReport:
    """Build every program into `out` (`code_gym.grading.builder.build_many`): `options.workers`
    verifier runs at once locally; `ray_address` sends each program to a Ray cluster instead. With
    `max_minutes`, no program starts after that many minutes (the rest stay pending: run again to
    go on). With `retry_failed`, programs that failed before are built again."""
    return shared.build_many(SOURCES, sources, out, options, ray_address, max_minutes, retry_failed)
