"""The sandbox contract: where commands run. A backend is a small class; the env never branches on it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    """Per-command limits. Output beyond `max_output` bytes keeps its head and tail with a marker.

    What each backend enforces, and how, is in docs/sandboxes.md.
    """
    timeout: float = 30.0
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 256 << 20
    max_output: int = 64 << 10
    processes: int = 256
    cpus: float = 1.0


@dataclass(frozen=True)
class PythonEnv:
    """A virtualenv that commands run with (code_gym.languages.python.environments builds them). Backends bind
    `prefix` read-only at its own path (its scripts name it) with the installation its interpreter
    comes from, and put its bin/ first on PATH, so `python`, `pytest` and the packages it holds are
    the environment's. Its pytest plugins load through PYTEST_PLUGINS: plugin autoloading stays off."""
    prefix: Path
    base_prefix: Path
    pytest_plugins: tuple[str, ...] = ()

    def variables(self, path: str) -> dict[str, str]:
        """The environment variables it sets, given the backend's own PATH."""
        found = {"PATH": f"{self.prefix}/bin:{path}", "VIRTUAL_ENV": str(self.prefix)}
        if self.pytest_plugins:
            found["PYTEST_PLUGINS"] = ",".join(self.pytest_plugins)
        return found


@dataclass
class ExecResult:
    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0
    disk_full: int | None = None  # the size of the workspace's disk quota when the command filled it
    records: bytes | None = None  # the results channel's stream, when `exec` was asked for one

    def describe(self) -> str:
        """Output plus what a reader must know: timeouts, exit codes, a full disk quota."""
        text = self.output
        if self.timed_out:
            text += "\n[command timed out and was killed]"
        elif self.exit_code not in (0, None):
            text += f"\n[exit code {self.exit_code}]"
        if self.disk_full:
            text += (f"\n[the episode's disk quota of {self.disk_full >> 20} MiB is full: writes fail with "
                     "'No space left on device' until files are deleted]")
        return text


class Sandbox(Protocol):
    """Runs shell commands with the workspace as the current directory.

    The workspace is a host folder (code_gym.workspace.working_copy.Workspace): editor tools read and write it
    and diffs come from scanning it, whatever the backend; a backend only has to make commands see
    it. Reset is a new Workspace plus a new sandbox; `close` releases what the sandbox holds (a
    container goes back to its pool) and leaves no process behind.
    """

    name: str
    workdir: str  # where the workspace appears to commands

    def exec(self, command: str, *, timeout: float | None = None,
             binds: dict[Path, str] | None = None, records: str | None = None) -> ExecResult:
        """Run `command` with bash. `binds` maps extra host folders to paths visible inside.
        `records` (a nonce): give a pytest command the grader's results channel
        (code_gym.sandbox.records) and return its stream in `ExecResult.records`."""
        ...

    def inside(self, host_path: Path, binds: dict[Path, str]) -> str:
        """Where a folder given in `binds` appears to commands."""
        ...

    def close(self) -> None:
        ...


class Backend(Protocol):
    """Makes sandboxes; passed as `isolation=` to the env, grading and make_sandbox."""

    def sandbox(self, workspace: Path, limits: Limits, mask: tuple = (), image: str | None = None,
                runtime: PythonEnv | None = None) -> Sandbox:
        ...


class CappedOutput:
    """Collects command output, keeping the first and last `cap`/2 bytes and counting the rest."""

    def __init__(self, cap: int):
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            self.dropped += len(self.tail) - self.half
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        text = self.head.decode("utf-8", "replace")
        if self.dropped:
            text += f"\n[... {self.dropped} bytes of output omitted ...]\n" + self.tail.decode("utf-8", "replace")
        elif self.tail:
            text = (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        return text
