"""What an outcome reward sees (the task, the final changes, the grade, the policy's responses) and
what a component may return besides a bare number."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from code_gym.grading.grade import GradeResult
from code_gym.tasks.task import Task


@dataclass(frozen=True)
class Response:
    """One step's response as sampled: its text and, when the sampler returned them, its tokens'
    log-probs (`code_gym.rewards.labelfree.TokenLogprobs`)."""
    text: str
    logprobs: Any = None


@dataclass(frozen=True)
class Submission:
    task: Task
    changes: dict[str, bytes | None]  # path -> final content (None: deleted)
    result: GradeResult
    responses: tuple[Response, ...] = ()  # the episode's responses, in step order


@dataclass(frozen=True)
class Score:
    """A component's value with details for its breakdown entry (e.g. {"error": ...}, {"cached": True})."""
    value: float
    details: dict[str, Any] = field(default_factory=dict)
