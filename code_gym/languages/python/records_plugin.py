"""The grader's pytest plugin: streams each test's outcome out of the test process as it is made.

This file runs inside the sandbox (stdlib only; any pytest from 7 on) and is never imported by the
host: the warm runner executes its source before it imports anything of a repository and hands a
`RecordStream` to each run; a cold run gets it as a module under a name drawn per run, loaded
through PYTEST_PLUGINS before any conftest or test module. Its settings arrive in the environment
variable CODE_GYM_RECORDS ("FD NONCE"), which it removes at import.

Each record is one JSON line written with a single write(2) to a pipe (or stream) whose read end
only the trusted parent holds: once written, the process cannot take it back. The write end is
moved to a descriptor number drawn at random and marked close-on-exec (subprocesses of the tests
do not inherit it), and closed after the end record, so an exit handler has nothing of its own to
write to. Code under test can still find the descriptor (/proc/self/fd) or replace this object's
methods before a report is made: docs/security.md says what catches that.
"""
import fcntl
import json
import os
import random
import resource


class RecordStream:
    """pytest hooks that write "start", one "report" per test phase, "collect" for a file that
    failed to collect, and "end" with the session's exit status."""

    def __init__(self, fd, nonce):
        ceiling = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 4096)
        self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, random.SystemRandom().randrange(64, max(ceiling - 64, 65)))
        os.close(fd)
        self.nonce = nonce
        self.seq = 0
        self.write("start")

    def write(self, kind, **fields):
        line = (json.dumps({"nonce": self.nonce, "seq": self.seq, "kind": kind, **fields}) + "\n").encode()
        self.seq += 1
        while line:
            line = line[os.write(self.fd, line):]

    def pytest_runtest_logreport(self, report):
        fields = {"id": report.nodeid, "when": report.when, "outcome": report.outcome}
        if getattr(getattr(report, "context", None), "kwargs", None) is not None:
            fields["sub"] = 1  # a subtest's report (pytest 9's subtests, unittest subTest, pytest-subtests)
        self.write("report", **fields)

    def pytest_collectreport(self, report):
        if report.failed:
            self.write("collect", id=report.nodeid, outcome="failed")

    def pytest_sessionfinish(self, session, exitstatus):
        self.write("end", exitstatus=int(exitstatus))
        os.close(self.fd)


_SETTINGS = os.environ.pop("CODE_GYM_RECORDS", "").split()
if len(_SETTINGS) == 2:  # loaded as a plugin module by a cold run
    _STREAM = RecordStream(int(_SETTINGS[0]), _SETTINGS[1])

    def pytest_configure(config):
        config.pluginmanager.register(_STREAM, "code-gym-records")
