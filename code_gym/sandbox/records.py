"""The results channel of one test run, host side: how a backend gives the runtime's reporter to a
command and collects what it streams.

A caller asks for it with `Sandbox.exec(..., records=NONCE)` and gets the raw stream back in
`ExecResult.records`; `code_gym.grading.records` reads and checks it. A warm run gets the reporter
from its server (code_gym.sandbox.runner); a cold run gets the files `Runtime.reporter` lays in a
folder of its own (`ReporterFolder`), bound read-only into the sandbox, the variables that name it,
and a write end the backend opened before the command started: a pipe (local) or the exec's stderr
stream (Docker).
"""
from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

from code_gym.sandbox.base import Reporter
from code_gym.util.hostfs import owned_prefix

INSIDE = "/run/code-gym-records"  # where a local sandbox sees the reporter's folder


def new_nonce() -> str:
    return secrets.token_hex(16)


class ReporterFolder:
    """A fresh host folder for one run's reporter files, removed at `close`."""

    def __init__(self, reporter: Reporter):
        self.reporter = reporter
        self.path = Path(tempfile.mkdtemp(prefix=owned_prefix("records")))

    def env(self, inside: str, fd: int, nonce: str, base: dict[str, str]) -> dict[str, str]:
        """Lay the reporter's files and return the command's environment: `base` (its cold
        environment) with what the reporter sets. `inside`: where the command sees the folder."""
        files, env = self.reporter.setup(inside, fd, nonce, dict(base))
        for name, text in files.items():
            if Path(name).name != name or name in (".", ".."):
                raise ValueError(f"a reporter file must be a plain file name, got {name!r}")
            (self.path / name).write_text(text)
        return env

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
