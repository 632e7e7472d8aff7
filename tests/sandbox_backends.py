"""Which sandbox backends the tests run on, and why one is skipped.

In CI (CI=true) bubblewrap and Docker are required: .ci/run installs both and starts dockerd, so a
missing one fails the run instead of silently skipping it.
"""
from __future__ import annotations

import os

import pytest

from code_gym.languages.python.runtime import python_runtime
from code_gym.sandbox import available_isolation

IN_CI = os.environ.get("CI") == "true"
# what a Python task without an environment runs with (`task_runtime`): the records reporter and
# the warm pytest server, with the backend's own interpreter
PYTHON = python_runtime()


def docker_reason() -> str | None:
    from code_gym.sandbox.docker import docker_unavailable

    return docker_unavailable()


def require(kind: str) -> None:
    """Skip (fail in CI) when `kind` cannot run here."""
    if kind in ("docker", "docker-fresh"):
        reason = docker_reason()
    elif kind not in available_isolation():
        reason = f"{kind} is not available here (apt-get install bubblewrap)"
    else:
        reason = None
    if reason:
        if IN_CI:
            pytest.fail(f"CI must run the {kind} sandbox tests: {reason}")
        pytest.skip(f"{kind} sandbox: {reason}")


def hold_runner_window(monkeypatch) -> None:
    """A runner exits a moment after the run that ended it (it could not empty /tmp), so whether the
    next run still finds it there is a race; this holds the window open: a runner that went away
    still looks alive when the next run takes it."""
    from code_gym.sandbox import runner

    monkeypatch.setattr(runner.Zygote, "alive", lambda self: True)


def runner_fallback_as_before(monkeypatch) -> None:
    """Warm runners as they were before issue 14, window held open: a runner that did not take a
    run sent the run cold. Attack tests use it to show what the attack gained."""
    from code_gym.sandbox import runner

    run = runner.run

    def fallback(*args, **kwargs):
        try:
            return run(*args, **kwargs)
        except runner.RunnerGone:
            return None

    hold_runner_window(monkeypatch)
    monkeypatch.setattr(runner, "run", fallback)


# Module source that leaves a warm runner a /tmp it cannot empty: a tree deeper than its walk, behind
# enough files that emptying them takes a while (the runner exits after the run).
UNEMPTIABLE_TMP = """
import os as _o


def _unemptiable():
    _o.makedirs("/tmp/cache", exist_ok=True)
    for i in range(20000):
        open(f"/tmp/cache/{i}", "w").close()
    here = _o.getcwd()
    _o.makedirs("/tmp/deep", exist_ok=True)
    _o.chdir("/tmp/deep")
    for _ in range(1200):
        _o.mkdir("d")
        _o.chdir("d")
    _o.chdir(here)


_unemptiable()
"""
