"""The sandbox contract: where commands run. A backend is a small class; the env never branches on it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    """Per-command limits. Output beyond `max_output` bytes keeps its head and tail with a marker."""
    timeout: float = 30.0
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 256 << 20
    max_output: int = 64 << 10


@dataclass
class ExecResult:
    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0

    def describe(self) -> str:
        """Output plus what a reader must know: timeouts and exit codes."""
        text = self.output
        if self.timed_out:
            text += "\n[command timed out and was killed]"
        elif self.exit_code not in (0, None):
            text += f"\n[exit code {self.exit_code}]"
        return text


class Sandbox(Protocol):
    """Runs shell commands with the workspace as the current directory."""

    name: str
    workdir: str  # where the workspace appears to commands

    def exec(self, command: str, *, timeout: float | None = None,
             binds: dict[Path, str] | None = None) -> ExecResult:
        """Run `command` with bash. `binds` maps extra host folders to paths visible inside."""
        ...

    def close(self) -> None:
        ...
