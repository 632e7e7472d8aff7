"""Which sandbox backends the tests run on, and why one is skipped.

In CI (CI=true) bubblewrap and Docker are required: .ci/run installs both and starts dockerd, so a
missing one fails the run instead of silently skipping it.
"""
from __future__ import annotations

import os

import pytest

from code_gym.sandbox import available_isolation

IN_CI = os.environ.get("CI") == "true"


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
