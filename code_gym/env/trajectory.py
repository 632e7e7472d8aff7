"""Record episodes as `credit.Trajectory`: the data contract between the env and credit."""
from __future__ import annotations

from typing import Any

import gymnasium as gym

from code_gym.actions.parse import action_repr
from code_gym.rewards import sampled_response
from credit import Step, Trajectory


class RecordTrajectory(gym.Wrapper):
    """Records each step (observation seen, action text, step diff, step reward, and which call and
    characters made each changed line: provenance, calls, edits, line_calls).

    The action text is the response text, or for tool-call dicts their canonical text
    (`code_gym.actions.parse.canonical_text`), which the spans index.

    When the episode ends, `info["trajectory"]` holds the `credit.Trajectory` (also kept as
    `self.trajectory`). The outcome reward (the grade) is the trajectory's `reward`; a step's own
    reward excludes it, so credit counts the outcome once, at the last step.

    A sampled-response action `{"text", "logprobs"}` is recorded as its text; its log-probs
    (`code_gym.rewards.TokenLogprobs`, None for a step without them) go to `self.logprobs`, one
    entry per step, and to `info["step_logprobs"]` at the end (`credit.Step` has no field for them).
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.trajectory: Trajectory | None = None
        self._steps: list[Step] = []
        self.logprobs: list = []
        self._observation: str | None = None
        self._task_id: str | None = None

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._steps, self._observation, self._task_id, self.trajectory = [], obs, info.get("task_id"), None
        self.logprobs = []
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        outcome = info.get("outcome_reward", 0.0)
        played, response, _ = sampled_response(action)
        self.logprobs.append(response.logprobs if response is not None else None)
        text = info.get("action_text")
        if text is None:  # not parsed into calls over a text: nothing to attribute
            text, spans = (played if isinstance(played, str) else action_repr(played)), {}
        else:
            spans = {key: info.get(key) or None for key in ("provenance", "calls", "edits", "line_calls")}
        self._steps.append(Step(action=text, diff=info.get("diff", ""), reward=reward - outcome,
                                observation=self._observation, **spans))
        self._observation = obs
        if terminated or truncated:
            self.trajectory = Trajectory(task_id=self._task_id or info.get("task_id", ""), steps=self._steps,
                                         reward=outcome)
            info = {**info, "trajectory": self.trajectory, "step_logprobs": list(self.logprobs)}
        return obs, reward, terminated, truncated, info
