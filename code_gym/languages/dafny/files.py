"""The files a Dafny task's grader owns: none. The verifier reads no configuration file from the
repository (its options are the task's test_command), and the program files are the agent's; the
specification check is a test file (protected by the task), and what a program may not do to
itself is the audit's (audit.py)."""
from __future__ import annotations


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    return None


def guarded(path: str) -> bool:
    return False
