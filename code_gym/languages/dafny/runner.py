"""Dafny verification runs: the command that verifies the selected files through the grader's
reader (reader/verify.py, laid with source.py in the run's reporter folder), and the reporter that
lays them.

task.toml's `test_command` is `dafny` and its options (`/timeLimit:N`, `/rlimit:N`, `/arith:N`
...; default `dafny /compile:0 /timeLimit:20`); the reader appends `/compile:0 /trace
/verifyAllModules /errorLimit:50` and the files. The selected test files are verified in one
verifier process, with the files they include (each record is filed under the file that declares
its member); none selected (run_tests without paths) means every .dfy file of the repository.
Without CODE_GYM_REPORTERS (a run without records) the command runs the verifier alone.
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
DEFAULT_COMMAND = "dafny /compile:0 /timeLimit:20"
HERE = Path(__file__).resolve().parent
_READER_FILES = {"verify.py": (HERE / "reader" / "verify.py").read_text(), "source.py": (HERE / "source.py").read_text(),
                 channel.NAME: channel.source()}


def command_words(test_command: str) -> list[str]:
    """The words of a test command that runs the verifier; ValueError when it names another program."""
    try:
        words = shlex.split(test_command)
    except ValueError as error:
        raise ValueError(f"test_command {test_command!r} does not parse as a shell command ({error})") from None
    if not words or posixpath.basename(words[0]) != "dafny" or not all(w.startswith("/") for w in words[1:]):
        raise ValueError(f"test_command {test_command!r} is not a Dafny verifier call: use 'dafny' followed by "
                         "its /options, e.g. 'dafny /compile:0 /timeLimit:20'; the grader appends the files")
    return words


def test_run(test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
             canaries: bool = False) -> TestRun:
    """The command that verifies the files of `selected` (files or ids: whole files are verified)
    with the reader streaming records; `results` (inside the sandbox) holds the probes' manifest
    and outcomes when a graded run carries probes."""
    words = command_words(test_command)
    files = list(dict.fromkeys(t.split("::", 1)[0] for t in selected))
    spec = json.dumps({"command": words, "files": files, "results": results})
    listed = " ".join(shlex.quote(f) for f in files) if files else "$(find . -name '*.dfy' -not -path '*/.*')"
    plain = f"{' '.join(shlex.quote(w) for w in words)} /compile:0 {listed}"
    return TestRun(f'if [ -n "${{{FOLDER_ENV}:-}}" ]; then python3 -I "${FOLDER_ENV}/verify.py" {shlex.quote(spec)}; '
                   f"else {plain}; fi")


def report_outcomes(results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
    """The verifier writes no report of its own: the records stand alone, checked by the canaries
    (a lemma that must fail, one that must verify) and the exit code."""
    return None


@dataclass(frozen=True)
class DafnyReporter:
    """The reader, its parser and the channel's module, laid read-only in the run's reporter folder (CODE_GYM_REPORTERS);
    the channel's descriptor and nonce in CODE_GYM_RECORDS."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        return dict(_READER_FILES), env | {FOLDER_ENV: inside, ENV: f"{fd} {nonce}"}
