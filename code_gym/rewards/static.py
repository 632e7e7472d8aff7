"""Execution-free reward: do the changed source files parse, compile, and stay free of new findings
of the language's static checker (Python: pyflakes' undefined names, unused imports,
redefinitions, ...)? A signal for episodes where no test passes yet. It never runs the code.

Score per changed file: 0 when it does not parse or compile, else 1 / (1 + new findings), where a
finding is new when the starting version of the file did not already have it
(`Language.static_check`). The reward is the mean over changed, non-test source files (0 when
there are none). Trivial clean edits also score 1: keep its weight small next to the test rewards.
"""
from __future__ import annotations

from dataclasses import dataclass

from code_gym import languages
from code_gym.languages.base import FileCheck
from code_gym.rewards.base import Submission
from code_gym.tasks.task import Task

__all__ = ["FileCheck", "StaticScore", "static_checks"]


def static_checks(changes: dict[str, bytes | None], task: Task) -> list[FileCheck]:
    """One check per changed, non-deleted source file of the task's language outside the tests and
    protected paths."""
    language = languages.of(task)
    return [language.static_check(path, task.original_file(path), data) for path, data in sorted(changes.items())
            if data is not None and path.endswith(language.source_suffixes) and not task.is_protected(path)]


@dataclass(frozen=True)
class StaticScore:
    """Mean static score of the changed source files (see the module docstring)."""

    def __call__(self, sub: Submission) -> float:
        checks = static_checks(sub.changes, sub.task)
        return sum(c.score for c in checks) / len(checks) if checks else 0.0
