"""Record episodes as `credit.Trajectory`: the data contract between the env and credit."""
from __future__ import annotations

from typing import Any

import gymnasium as gym

from credit import Step, Trajectory


class RecordTrajectory(gym.Wrapper):
    """Records each step (observation seen, action text, step diff, step reward, and which call and
    characters made each changed line: provenance, calls, edits, line_calls).

    The action text is the response text, or for tool-call dicts their canonical text
    (`code_gym.actions.canonical_text`), which the spans index.

    When the episode ends, `info["trajectory"]` holds the `credit.Trajectory` (also kept as
    `self.trajectory`). The outcome reward (the grade) is the trajectory's `reward`; a step's own
    reward excludes it, so credit counts the outcome once, at the last step.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.trajectory: Trajectory | None = None
        self._steps: list[Step] = []
        self._observation: str | None = None
        self._task_id: str | None = None

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._steps, self._observation, self._task_id, self.trajectory = [], obs, info.get("task_id"), None
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        outcome = info.get("outcome_reward", 0.0)
        text = info.get("action_text")
        if text is None:  # not parsed into calls over a text: nothing to attribute
            text, spans = (action if isinstance(action, str) else repr(action)), {}
        else:
            spans = {key: info.get(key) or None for key in ("provenance", "calls", "edits", "line_calls")}
        self._steps.append(Step(action=text, diff=info.get("diff", ""), reward=reward - outcome,
                                observation=self._observation, **spans))
        self._observation = obs
        if terminated or truncated:
            self.trajectory = Trajectory(task_id=self._task_id or info.get("task_id", ""), steps=self._steps,
                                         reward=outcome)
            info = {**info, "trajectory": self.trajectory}
        return obs, reward, terminated, truncated, info
