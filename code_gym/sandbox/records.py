"""The results channel of one test run, host side: how a backend gives the grader's pytest plugin
(`records_plugin.py`) to a command and collects what it streams.

A caller asks for it with `Sandbox.exec(..., records=NONCE)` and gets the raw stream back in
`ExecResult.records`; `code_gym.grading.records` reads and checks it. A warm run gets the plugin from
the runner (code_gym.sandbox.runner); a cold run gets it as a module under a name drawn per run,
in a folder of its own bound into the sandbox, loaded through PYTEST_PLUGINS (which pytest reads
with plugin autoloading off, before any conftest or test module), and a write end the backend
opened before the command started: a pipe (local) or the exec's stderr stream (Docker).
"""
from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

from code_gym.util.hostfs import owned_prefix

ENV = "CODE_GYM_RECORDS"
INSIDE = "/run/code-gym-records"  # where a local sandbox sees the plugin folder
PLUGIN_SOURCE = (Path(__file__).resolve().parents[1] / "languages" / "python" / "records_plugin.py").read_text()


def new_nonce() -> str:
    return secrets.token_hex(16)


class PluginFolder:
    """A host folder holding the plugin as module `code_gym_records_<random>` (a module of the
    repository cannot be named like it: sys.path[0] is the repository)."""

    def __init__(self):
        self.path = Path(tempfile.mkdtemp(prefix=owned_prefix("records")))
        self.module = f"code_gym_records_{secrets.token_hex(8)}"
        (self.path / f"{self.module}.py").write_text(PLUGIN_SOURCE)

    def env(self, inside: str, fd: int, nonce: str, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (a cold command's environment) with the plugin's folder first on the path, the
        plugin first among the plugins (a task environment's own PYTEST_PLUGINS kept after it), and
        its settings."""
        base = dict(base or {})
        path = ":".join(p for p in (inside, base.get("PYTHONPATH", "")) if p)
        plugins = ",".join(p for p in (self.module, base.get("PYTEST_PLUGINS", "")) if p)
        return base | {"PYTHONPATH": path, "PYTEST_PLUGINS": plugins, ENV: f"{fd} {nonce}"}

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
