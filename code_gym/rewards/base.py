"""What an outcome reward sees: the task, the final changes and the grade."""
from __future__ import annotations

from dataclasses import dataclass

from code_gym.grading import GradeResult
from code_gym.task import Task


@dataclass(frozen=True)
class Submission:
    task: Task
    changes: dict[str, bytes | None]  # path -> final content (None: deleted)
    result: GradeResult
