"""What one CodeRepo-v0 episode sends from a vLLM rollout actor to the advantage computation.

OpenRLHF turns each executor response into an `Experience` and keeps only the keys it knows, so
the executor puts an `EpisodeRecord` under the response key `RECORD_KEY`; the estimator's patch of
`SamplesGenerator._process_response_into_experience` moves it into `experience.info[RECORD_KEY]`
(a list, one record per sample, which OpenRLHF's batching concatenates), and the advantage
computation takes it out again before the experiences go to the actors.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

import credit

RECORD_KEY = "code_gym"


def observation_key(observation: str) -> str:
    """A short stand-in for an observation: GiGPO only compares observations for equality, and
    the full text of every tool output need not travel through Ray."""
    return hashlib.sha1(observation.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StepRecord:
    """One step of an episode.

    Attributes:
      action: the response text the environment received (vLLM's decoded text of the action tokens).
      diff: the unified diff the step made to the repository ("" when none).
      provenance: ((path, line, start, end), ...): added line `line` of `path` was written by
        `action[start:end]` (code_gym's `info["provenance"]`).
      reward: the step's own reward, the graded outcome excluded (it is the episode's).
      observation: `observation_key` of what the policy saw before acting.
      token_span: [start, end) positions of the action in the response's `observation_tokens`
        (its entry in `action_ranges`); start == end for a step the executor made without tokens
        (the submit that ends an episode cut off by the length budget).
      token_offsets: (end - start, 2) int64 character span in `action` of each action token.
      calls, edits, line_calls: which tool call made each changed line and the spans of the calls
        and their edit arguments (code_gym's `info["calls"]`, `["edits"]`, `["line_calls"]`; the
        `credit.Step` fields of the same names), None when not given.
    """

    action: str
    diff: str
    provenance: tuple[tuple[str, int, int, int], ...]
    reward: float
    observation: str
    token_span: tuple[int, int]
    token_offsets: np.ndarray
    calls: tuple | None = None
    edits: tuple | None = None
    line_calls: tuple | None = None

    def to_step(self) -> credit.Step:
        return credit.Step(action=self.action, diff=self.diff, reward=self.reward, token_offsets=self.token_offsets,
                           provenance=self.provenance or None, observation=self.observation,
                           calls=self.calls or None, edits=self.edits or None, line_calls=self.line_calls or None)


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode: the task, the graded outcome and the steps in order.

    `excluded` says why the estimators leave the episode out (zero advantage, in no group
    baseline): "failed: <the error>" when a fault ended it (no steps then), "budget_submit" when
    the length budget ended it and `AgentConfig.budget_submit` is "mask"; "" when it is trained on.
    """

    task_id: str
    outcome: float
    resolved: bool
    steps: tuple[StepRecord, ...]
    excluded: str = ""

    def to_trajectory(self, group: str | int | None = None, outcome: float | None = None) -> credit.Trajectory:
        """The `credit.Trajectory` (e.g. for `credit.dump_jsonl`), grouped under `group` (default: the
        task id), with `outcome` in place of the graded reward when given."""
        return credit.Trajectory(task_id=self.task_id if group is None else group,
                                 steps=[s.to_step() for s in self.steps],
                                 reward=self.outcome if outcome is None else outcome)
