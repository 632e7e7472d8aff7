"""`cargo test` runs: the command that builds and runs the selected test targets through the
grader's reader (reader/cargotest.py, laid in the run's reporter folder), and the reporter that
lays it.

task.toml's `test_command` is `cargo test` with cargo's options (`--features X`,
`--no-default-features`, `--release` ...) and, after `--`, libtest's (`--test-threads N`,
`--include-ignored`, `--skip NAME`); default `cargo test`. Which targets build and run is the
grader's: the selected test files are target roots (`src/lib.rs` for the library's unit tests,
`src/main.rs` or `src/bin/x.rs` for a binary's, `tests/x.rs` for an integration test), none
selected means every library, binary and integration-test target. Doc-tests are not run: rustdoc
snippets are not graded. Test ids read `SRC::NAME`, SRC the target's root ("src/lib.rs",
"tests/parse.rs"), NAME libtest's name of the test ("tests::parses_x").
Without CODE_GYM_REPORTERS (a run without records) the command is a plain `cargo test`.
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
CACHE_ENV = "CODE_GYM_RUST_CACHE"  # the task's target cache (read-only): each run starts from a copy of it
TARGET_INSIDE = "/tmp/code-gym-target"  # CARGO_TARGET_DIR of every run and of the cache's build
DEFAULT_COMMAND = "cargo test"
HERE = Path(__file__).resolve().parent
_READER_FILES = {"cargotest.py": (HERE / "reader" / "cargotest.py").read_text(), channel.NAME: channel.source()}

# cargo options a task may give (the rest decide targets, output or where things are, or read
# another configuration, toolchain or manifest: the grader's)
_CARGO_FLAGS = ("--all-features", "--no-default-features", "--release", "-q", "--quiet", "-v", "-vv", "--verbose",
                "--offline", "--locked", "--frozen", "--ignore-rust-version")
_CARGO_VALUES = ("--features", "-F", "--profile", "-j", "--jobs", "--color")
# libtest options a task may give after `--`
_LIBTEST_FLAGS = ("--include-ignored", "--ignored")
_LIBTEST_VALUES = ("--test-threads", "--skip")


@dataclass(frozen=True)
class Command:
    cargo: list[str]  # `cargo` (or its path) and `test`
    options: list[str]  # cargo's options
    libtest: list[str]  # the test binaries' options


def parse_command(test_command: str) -> Command:
    """The parts of a `cargo test` command; ValueError naming what the grader does not take."""
    try:
        words = shlex.split(test_command)
    except ValueError as error:
        raise ValueError(f"test_command {test_command!r} does not parse as a shell command ({error})") from None
    hint = "use 'cargo test' followed by cargo's options and, after '--', libtest's (e.g. 'cargo test --features x " \
           "-- --test-threads 2'); the grader chooses the targets"
    if len(words) < 2 or posixpath.basename(words[0]) != "cargo" or words[1] != "test":
        raise ValueError(f"test_command {test_command!r} is not a `cargo test` call: {hint}")
    rest = words[2:]
    options, libtest = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    _check(options, _CARGO_FLAGS, _CARGO_VALUES, f"test_command {test_command!r}: cargo's", hint)
    _check(libtest, _LIBTEST_FLAGS, _LIBTEST_VALUES, f"test_command {test_command!r}: libtest's", hint)
    return Command(words[:2], options, libtest)


def _check(words: list[str], flags: tuple[str, ...], values: tuple[str, ...], where: str, hint: str) -> None:
    """ValueError unless every word is one of `flags`, or one of `values` with its value."""
    i = 0
    while i < len(words):
        name = words[i].split("=", 1)[0]
        if name in flags:
            i += 1
        elif name in values:
            i += 1 if "=" in words[i] else 2
            if i > len(words):
                raise ValueError(f"{where} {name} needs a value")
        else:
            raise ValueError(f"{where} {words[i]!r} is not taken (only {', '.join(flags + values)}): {hint}")


def selection(selected: tuple[str, ...]) -> tuple[list[str], dict[str, list[str]] | None]:
    """(the target roots to run, the test names to run in each; None: all of them). A whole file
    among `selected` runs all its tests."""
    files = list(dict.fromkeys(t.split("::", 1)[0] for t in selected))
    whole = {t for t in selected if "::" not in t}
    names: dict[str, list[str]] = {}
    for test_id in selected:
        file, _, name = test_id.partition("::")
        if name and file not in whole:
            names.setdefault(file, []).append(name)
    return files, (names or None)


def test_run(test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
             canaries: bool = False) -> TestRun:
    """The command that builds and runs the targets of `selected` (target roots or ids) with the
    reader streaming records (a run with must-fail canaries never stops at a first failure: every
    selected target runs whatever the others did)."""
    command = parse_command(test_command)
    files, names = selection(selected)
    spec = json.dumps({"cargo": command.cargo, "options": command.options, "libtest": command.libtest,
                       "files": files, "names": names, "results": results})
    plain = shlex.join([*command.cargo, *command.options, "--offline", *(["--"] + command.libtest
                                                                          if command.libtest else [])])
    return TestRun(f'if [ -n "${{{FOLDER_ENV}:-}}" ]; then python3 -I "${FOLDER_ENV}/cargotest.py" {shlex.quote(spec)}; '
                   f"else {plain}; fi")


def build_command(test_command: str) -> str:
    """The command that builds every test target without running any (the target cache's build),
    through the same reader: the same cargo calls as a graded run, so that its units are reused."""
    command = parse_command(test_command)
    spec = json.dumps({"cargo": command.cargo, "options": command.options, "libtest": command.libtest,
                       "files": [], "names": None, "results": "", "build_only": True})
    return f'python3 -I "${FOLDER_ENV}/cargotest.py" {shlex.quote(spec)}'


def report_outcomes(results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
    """libtest writes no report of its own that the code under test could not write too: the records
    stand alone, checked by the canaries and the exit code."""
    return None


@dataclass(frozen=True)
class RustReporter:
    """The reader and the channel's module, laid read-only in the run's reporter folder (CODE_GYM_REPORTERS); the channel's
    descriptor and nonce in CODE_GYM_RECORDS."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        return dict(_READER_FILES), env | {FOLDER_ENV: inside, ENV: f"{fd} {nonce}"}
