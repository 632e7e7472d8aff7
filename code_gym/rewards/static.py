"""Execution-free reward: do the changed Python files parse, compile, and stay free of new pyflakes
findings (undefined names, unused imports, redefinitions, ...)? A signal for episodes where no test
passes yet. It never runs the code.

Score per changed file: 0 when it does not parse or compile, else 1 / (1 + new findings), where a
finding is new when the starting version of the file did not already have it. The reward is the
mean over changed, non-test `.py` files (0 when there are none). Trivial clean edits also score 1:
keep its weight small next to the test rewards.
"""
from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from pyflakes.checker import Checker

from code_gym.grading.audit import MAX_SOURCE_BYTES
from code_gym.rewards.base import Submission
from code_gym.tasks.task import Task
from code_gym.languages.python import source as pysource
@dataclass
class FileCheck:
    path: str
    compiles: bool
    error: str = ""
    new_findings: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return 1.0 / (1 + len(self.new_findings)) if self.compiles else 0.0


def _findings(source: bytes, path: str) -> list[str]:
    """pyflakes messages (without positions) of a source that compiles; raises when it does not."""
    tree = pysource.parse(source, filename=path)
    compile(tree, path, "exec", dont_inherit=True)
    checker = Checker(tree, filename=path)
    return [f"{type(m).__name__}: {m.message % m.message_args}" for m in checker.messages]


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    if len(new) - len(old or b"") > MAX_SOURCE_BYTES:  # as the audit: not parsed (~0.4 GiB per MiB), scored 0
        return FileCheck(path, False, f"over {MAX_SOURCE_BYTES} bytes larger than before: too large to check")
    try:
        found = _findings(new, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return FileCheck(path, False, f"{type(exc).__name__}: {exc}")
    before: Counter = Counter()
    if old is not None:
        try:
            before = Counter(_findings(old, path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    fresh = []
    for message in found:
        if before[message] > 0:
            before[message] -= 1
        else:
            fresh.append(message)
    return FileCheck(path, True, new_findings=fresh)


def static_checks(changes: dict[str, bytes | None], task: Task) -> list[FileCheck]:
    """One check per changed, non-deleted `.py` file outside the tests and protected paths."""
    return [check_file(path, task.original_file(path), data) for path, data in sorted(changes.items())
            if data is not None and path.endswith(".py") and not task.is_protected(path)]


@dataclass(frozen=True)
class StaticScore:
    """Mean static score of the changed Python files (see the module docstring)."""

    def __call__(self, sub: Submission) -> float:
        checks = static_checks(sub.changes, sub.task)
        return sum(c.score for c in checks) / len(checks) if checks else 0.0
