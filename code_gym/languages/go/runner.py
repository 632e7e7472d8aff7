"""Go test runs: the command that tests the selected packages through the grader's reader
(reader/gotest.py, laid in the run's reporter folder), and the reporter that lays it.

task.toml's `test_command` is `go test` and its options (default `go test -count=1`; `-vet=off`,
`-short`, `-tags ...`, `-timeout ...`); the reader adds `-json` and the packages: the folders of
the selected test files (none selected: every package, `./...`). A run with must-fail canaries
drops `-failfast`. Without CODE_GYM_REPORTERS (a run without records) the command runs go alone,
through the task's `go` wrapper (environments.py), which makes the GOPATH link the reader would.
"""
from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass
from pathlib import Path

from code_gym.grading import channel
from code_gym.languages.base import TestRun

ENV = "CODE_GYM_RECORDS"
FOLDER_ENV = "CODE_GYM_REPORTERS"
DEFAULT_COMMAND = "go test -count=1"
HERE = Path(__file__).resolve().parent
READER = "gotest.py"
_READER_FILES = {READER: (HERE / "reader" / READER).read_text(), channel.NAME: channel.source()}


def reader_files() -> dict[str, str]:
    """The reader and the channel's module it imports (name -> text): laid for each run with
    records, and beside the task's `go` wrapper."""
    return dict(_READER_FILES)
_REFUSED = {"-json": "the reader adds it", "-c": "it builds without testing", "-o": "it builds without testing",
            "-exec": "the test binaries run as go runs them", "-args": "the reader appends the packages",
            "-i": "it installs packages"}


def command_words(test_command: str) -> list[str]:
    """The words of a `go test` command with options only; ValueError naming what is wrong."""
    try:
        words = shlex.split(test_command)
    except ValueError as error:
        raise ValueError(f"test_command {test_command!r} does not parse as a shell command ({error})") from None
    if len(words) < 2 or posixpath.basename(words[0]) != "go" or words[1] != "test":
        raise ValueError(f"test_command {test_command!r} is not a `go test` call: use 'go test' followed by its "
                         "options, e.g. 'go test -count=1'; the grader appends the packages")
    expects_value = False
    for word in words[2:]:
        if expects_value:
            expects_value = False
            continue
        if not word.startswith("-"):
            raise ValueError(f"test_command {test_command!r} names {word!r}, which is not an option: the grader "
                             "appends the packages to test")
        flag = "-" + word.lstrip("-").split("=", 1)[0]
        if flag in _REFUSED:
            raise ValueError(f"test_command {test_command!r} has {flag}, which a graded run cannot take: "
                             f"{_REFUSED[flag]}")
        expects_value = "=" not in word and flag in _VALUED
    return words


# go test's build and test flags that take a value as the next word
_VALUED = {"-p", "-run", "-bench", "-benchtime", "-count", "-cpu", "-parallel", "-timeout", "-tags", "-gcflags",
           "-ldflags", "-asmflags", "-gccgoflags", "-mod", "-modfile", "-pkgdir", "-toolexec", "-vet", "-shuffle",
           "-skip", "-fuzz", "-fuzztime", "-fuzzminimizetime", "-coverpkg", "-covermode", "-coverprofile",
           "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-outputdir", "-trace",
           "-overlay", "-compiler", "-installsuffix", "-buildmode", "-list"}


def package_folders(selected: tuple[str, ...]) -> list[str] | None:
    """The package folders of `selected` (test files, test ids or folders), in order; None: all."""
    if not selected:
        return None
    folders = []
    for item in selected:
        path = posixpath.normpath(item.split("::", 1)[0])
        folder = posixpath.dirname(path) if path.endswith(".go") else path
        folders.append("" if folder in ("", ".") else folder)
    return list(dict.fromkeys(folders))


def test_run(test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
             canaries: bool = False) -> TestRun:
    """The command that tests the packages of `selected` with the reader streaming records. The
    reader replaces the shell (`exec`), so no shell holds the channel while the tests run."""
    words = command_words(test_command)
    if canaries:
        words = [w for w in words if w.lstrip("-").split("=", 1)[0] != "failfast"]
    folders = package_folders(selected)
    spec = json.dumps({"command": words, "packages": folders})
    patterns = " ".join(shlex.quote("./" + f if f else ".") for f in folders) if folders is not None else "./..."
    plain = f"{shlex.join(words)} {patterns}"
    return TestRun(f'if [ -n "${{{FOLDER_ENV}:-}}" ]; then exec python3 -I "${FOLDER_ENV}/{READER}" '
                   f"{shlex.quote(spec)}; else {plain}; fi")


def warm_command(test_command: str, cache: str) -> str:
    """The reader's warm-up of a build cache in the writable folder `cache` (inside the sandbox)."""
    spec = json.dumps({"command": command_words(test_command), "warm": cache})
    return f'exec python3 -I "${FOLDER_ENV}/{READER}" {shlex.quote(spec)}'


def report_outcomes(results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
    """go test writes no report of its own besides the stream the reader reads: the records stand
    alone, checked by the canaries and the exit code."""
    return None


@dataclass(frozen=True)
class GoReporter:
    """The reader and the channel's module, laid read-only in the run's reporter folder (CODE_GYM_REPORTERS); the channel's
    descriptor and nonce in CODE_GYM_RECORDS."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        return dict(_READER_FILES), env | {FOLDER_ENV: inside, ENV: f"{fd} {nonce}"}
