"""The writing end of a graded run's results channel, for a reader that runs the tests inside the
sandbox and streams their records (the format `code_gym.grading.records` reads: one JSON line per
record with the run's nonce and a sequence number). Standard library only: a language's reporter
lays this file (`NAME`, its text `source()`) beside its reader, which imports it as `channel` there
and as `code_gym.grading.channel` from the package (its tests).

CODE_GYM_RECORDS ("FD NONCE") names the channel. `Channel()` removes the variable, makes the
process non-dumpable (a child of the same uid cannot open its descriptors through /proc/PID/fd or
ptrace it), reopens the descriptor close-on-exec through /proc and closes FD, so no child inherits
the channel, and writes the "start" record; each record is one write of one whole line. Without
the variable nothing is written.
"""
from __future__ import annotations

import ctypes
import json
import os

ENV = "CODE_GYM_RECORDS"
NAME = "channel.py"  # the file's name beside a reader
PR_SET_DUMPABLE = 4


def source() -> str:
    """This module's text, laid beside a reader."""
    with open(os.path.abspath(__file__), encoding="utf-8") as handle:
        return handle.read()


def prctl(option: int, value: int) -> None:
    """prctl(option, value) through libc; nothing where it cannot be called."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def undumpable() -> None:
    """Not dumpable: a process of the same uid cannot read /proc/<this>/fd or ptrace it (execve
    resets the flag, so the children the reader starts are dumpable again)."""
    prctl(PR_SET_DUMPABLE, 0)


class Channel:
    """The results channel named by CODE_GYM_RECORDS, opened as the module says."""

    def __init__(self) -> None:
        settings = os.environ.pop(ENV, "").split(" ")
        self.fd = None
        self.nonce = settings[1] if len(settings) == 2 else ""
        if len(settings) == 2:
            undumpable()
            self.fd = os.open(f"/proc/self/fd/{settings[0]}", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            os.close(int(settings[0]))
        self.seq = 0
        self.write("start")

    def write(self, kind: str, **fields) -> None:
        """One record of `kind` ("start", "report", "collect", "end") with `fields`."""
        if self.fd is None:
            return
        line = (json.dumps({"nonce": self.nonce, "seq": self.seq, "kind": kind, **fields}) + "\n").encode()
        self.seq += 1
        done = 0
        while done < len(line):
            done += os.write(self.fd, line[done:])
