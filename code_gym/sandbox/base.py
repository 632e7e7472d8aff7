"""The sandbox contract: where commands run. A backend is a small class; the env never branches on it.

The sandbox knows no language: what a task's commands need (folders, variables, the records
reporter, a warm server) comes from its language as a `Runtime`."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol


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


class Reporter(Protocol):
    """How a run with records (`Sandbox.exec(..., records=NONCE)`) gets the grader's results channel.

    For each such run the backend makes a fresh host folder, binds it read-only inside (at `inside`),
    and gives the command the channel's write end as descriptor `fd`; only the backend holds the read
    end. The reporter says what to lay in the folder and how the command finds it."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """(files: plain file name -> text, laid in the folder; the command's environment: `env`
        plus the variables that name the folder, the descriptor and the nonce)."""
        ...


@dataclass(frozen=True)
class WarmServer:
    """A server a backend starts once inside a long-lived sandbox and sends runs to
    (code_gym.sandbox.runner). `[*interpreter, program, SOCKET, OPTIONS]` is its command line
    (`runner.server_argv`: OPTIONS names the runner's uid and the runs'); `takes(command)` is the argv
    a run of `command` gets (None: the command runs cold). The program speaks the runner's protocol
    and does its duties (`runner.server_program` writes both for a program in Python: it runs as a
    uid no run has and forks each run as the runs' uid); it may decline a run (the backend then runs
    it cold, through the reporter)."""
    program: str
    interpreter: tuple[str, ...]
    takes: Callable[[str], list[str] | None]


@dataclass(frozen=True)
class Runtime:
    """What a language gives a sandbox to run a task's commands with (`Language.runtime(task)`).

    Backends bind `folders` read-only at their own paths, put `path` first on PATH and set `env`;
    a container's image must hold the Debian `packages` (local backends use the host's programs);
    a run with records gets its results channel through `reporter`, and commands that `warm.takes`
    go to a warm server. Frozen and made of plain data and module-level functions: it keys runner
    and container pools, and travels to Ray workers by pickle."""
    folders: tuple[Path, ...] = ()
    path: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    reporter: Reporter | None = None
    warm: WarmServer | None = None
    packages: tuple[str, ...] = ()  # the Debian packages a container image needs for these commands

    def variables(self, path: str) -> dict[str, str]:
        """The environment variables it sets, given the backend's own PATH."""
        return dict(self.env) | {"PATH": ":".join([*self.path, path])}


def check_records(runtime: Runtime | None, records: str | None) -> None:
    """Refuse a run with records that nothing in the runtime can report (at the boundary, before
    anything starts)."""
    if records and (runtime is None or runtime.reporter is None):
        raise ValueError("exec(records=...) needs a runtime with a reporter: make the sandbox with "
                         "runtime=<the task language's runtime(task)>, whose reporter streams the records")


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


# The kernel's limit on one argument of a program (MAX_ARG_STRLEN, 32 pages, with its NUL): a command
# reaches bash as one, so a longer one cannot start at all ("Argument list too long")
MAX_ARGUMENT_BYTES = (128 << 10) - 1


def oversized(argv: list[str], command: str) -> ExecResult | None:
    """A result that refuses `command`, before anything starts, when the program line `argv` that
    carries it is over the kernel's limits (one argument, or all of them together); None when it fits."""
    sizes = [len(a.encode("utf-8", "surrogateescape")) for a in argv]
    if max(sizes) <= MAX_ARGUMENT_BYTES and sum(sizes) + len(sizes) <= os.sysconf("SC_ARG_MAX") // 2:
        return None
    size = len(command.encode("utf-8", "surrogateescape"))
    allowed = MAX_ARGUMENT_BYTES - max(0, max(sizes) - size)  # less what the sandbox wraps around it
    return ExecResult(f"[code-gym: the command was not run: it is {size:,} bytes, and a command here may be at most "
                      f"{allowed:,} bytes (the kernel's limit on one argument is 128 KiB, and this sandbox wraps the "
                      f"command in {max(0, max(sizes) - size):,} more). Write long text to a file with the editor tool "
                      f"(create), then run a short command on it (bash script.sh, python script.py)]", 126)


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
        `records` (a nonce): give the command the grader's results channel through the runtime's
        reporter (code_gym.sandbox.records) and return its stream in `ExecResult.records`; a
        ValueError without a reporter."""
        ...

    def inside(self, host_path: Path, binds: dict[Path, str]) -> str:
        """Where a folder given in `binds` appears to commands."""
        ...

    def close(self) -> None:
        ...


class Backend(Protocol):
    """Makes sandboxes; passed as `isolation=` to the env, grading and make_sandbox."""

    def sandbox(self, workspace: Path, limits: Limits, mask: tuple = (), image: str | None = None,
                runtime: Runtime | None = None) -> Sandbox:
        ...


class CappedOutput:
    """Collects command output, keeping the first and last `cap`/2 bytes and counting the rest."""

    def __init__(self, cap: int):
        self.cap = cap
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
            text += (f"\n[... {self.dropped} bytes of output omitted: output is capped at {self.cap:,} bytes, its "
                     f"head and tail kept; to see the rest, send it to a file and read parts of it "
                     f"(command > out.txt; grep -n PATTERN out.txt; sed -n 100,200p out.txt) ...]\n")
            text += self.tail.decode("utf-8", "replace")
        elif self.tail:
            text = (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        return text
