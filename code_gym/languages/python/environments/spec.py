"""A task's Python environment as task.toml names it ([environment]: the project's requirements on
one interpreter): `EnvSpec`, read and checked by `read_environment`."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from code_gym.tasks.task import TaskError

# what every environment holds besides a project's requirements: the grader and the builder run pytest
# (its junit XML) and the builder's baseline runs coverage
BASE_REQUIREMENTS = ("pytest>=8,<10", "coverage>=7")
ENV_FORMAT = "1"  # bump when the way environments are built changes: every key changes with it


@dataclass(frozen=True)
class EnvSpec:
    """The environment a task's commands run with (task.toml [environment]): the project's
    requirements on one interpreter. Its key (a hash of both) names the cached build."""
    requirements: tuple[str, ...]  # PEP 508 strings, sorted; BASE_REQUIREMENTS are added at build
    python: str  # the interpreter the virtualenv is made from
    python_version: str
    # requirements without a wheel may be built from sdists, in a sandbox with the network (how the
    # environment is built, not what it holds: not part of the key)
    sdists: bool = False

    @property
    def install_set(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.requirements) | set(BASE_REQUIREMENTS)))

    @property
    def key(self) -> str:
        text = json.dumps([ENV_FORMAT, self.python, self.python_version, self.install_set])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def as_manifest(self) -> dict:
        return {"key": self.key, "python": self.python, "python_version": self.python_version,
                "requirements": list(self.requirements), **({"sdists": True} if self.sdists else {})}


def read_environment(table: object, where: Path) -> EnvSpec | None:
    """task.toml's [environment] table (None when it has none) as an EnvSpec; TaskError naming `where`."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise TaskError(f"{where}: [environment] must be a table (python, python_version, requirements)")
    python, version = table.get("python"), table.get("python_version")
    requirements = table.get("requirements", [])
    if not isinstance(python, str) or not python or not isinstance(version, str) or not version:
        raise TaskError(f"{where}: [environment] needs 'python' (an interpreter path) and 'python_version'")
    if not isinstance(requirements, list) or not all(isinstance(r, str) and r for r in requirements):
        raise TaskError(f"{where}: [environment] 'requirements' must be a list of PEP 508 strings")
    bad = next((r for r in requirements if r.lstrip().startswith("-")), None)
    if bad is not None:  # handed to the installer on the host: an option there runs what it names
        raise TaskError(f"{where}: [environment] requirement {bad!r} is an installer option, not a PEP 508 "
                        "requirement: list distributions (name, version specifiers) only")
    if not isinstance(table.get("sdists", False), bool):
        raise TaskError(f"{where}: [environment] 'sdists' must be true or false")
    spec = EnvSpec(tuple(sorted(set(requirements))), python, version, table.get("sdists", False))
    if "key" in table and table["key"] != spec.key:
        raise TaskError(f"{where}: [environment] key {table['key']!r} does not match its requirements and python "
                        f"({spec.key}): the table was edited; remove 'key' or restore the requirements")
    return spec
