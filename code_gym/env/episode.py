"""The episode loop: a policy plays one CodeRepo-v0 episode, recorded as a `credit.Trajectory`.

Every caller plays episodes through this module: the self-check (`code-gym check`), the model
client, the difficulty filter, training and the demo (`run_episode`), and the OpenRLHF executor,
whose actions come from an async engine, steps the same `EpisodeRun` itself.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym

from code_gym.actions.replay import hermes
from code_gym.env.trajectory import RecordTrajectory
from credit import Trajectory

SUBMIT = hermes([{"name": "submit", "arguments": {}}])  # the submit call as Hermes text


class Policy(Protocol):
    """Observation text -> action (the policy's response text, or a tool-call dict).

    Optional methods, called when present: `reset()` before each episode (a chat policy clears its
    history there) and `observe(observation, info)` after each step with what the step returned
    (tool results and diff in `info`), before the next call."""

    def __call__(self, observation: str) -> str | dict: ...


@dataclass(frozen=True)
class EpisodeResult:
    trajectory: Trajectory  # the outcome reward is `trajectory.reward`
    resolved: bool
    steps: int
    last_reward: float  # the last step's reward as the env returned it (outcome and that step's shaping)
    info: dict[str, Any]  # the last step's info (tests, integrity findings, timings, ...)

    @property
    def reward(self) -> float:
        return self.trajectory.reward


class EpisodeRun:
    """One episode, stepped by the caller: `start` resets the env, `step(action)` plays an action
    until `done`, then `result()`."""

    def __init__(self, env: gym.Env, observation: str, info: dict[str, Any]):
        self.env = env
        self.observation = observation
        self.info = info
        self.done = False
        self.last_reward = 0.0

    @classmethod
    def start(cls, env: gym.Env, task: Any = None, seed: int | None = None,
              options: dict[str, Any] | None = None) -> "EpisodeRun":
        """Reset `env` (wrapped in `RecordTrajectory` unless it is already) on `task` (an id, folder
        or Task; None: the env's own choice)."""
        recorder = env if _records(env) else RecordTrajectory(env)
        options = dict(options or {})
        if task is not None:
            options["task"] = task
        observation, info = recorder.reset(seed=seed, options=options)
        return cls(recorder, observation, info)

    def step(self, action: str | dict) -> tuple[str, float, dict[str, Any]]:
        """Play `action`: (observation, reward, info); `done` tells whether the episode ended."""
        if self.done:
            raise RuntimeError("the episode has ended; start another")
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.observation, self.info, self.done = observation, info, bool(terminated or truncated)
        self.last_reward = float(reward)
        return observation, float(reward), info

    def result(self) -> EpisodeResult:
        if not self.done:
            raise RuntimeError("the episode is still running")
        info = self.info
        return EpisodeResult(info["trajectory"], bool(info.get("resolved", False)), int(info.get("steps", 0)),
                             self.last_reward, info)


def run_episode(env: gym.Env, policy: Policy, task: Any = None, seed: int | None = None,
                options: dict[str, Any] | None = None) -> EpisodeResult:
    """One episode of `policy` in `env` on `task`, until the env terminates or truncates it."""
    if callable(getattr(policy, "reset", None)):
        policy.reset()
    observe = getattr(policy, "observe", None)
    run = EpisodeRun.start(env, task, seed, options)
    while not run.done:
        observation, _, info = run.step(policy(run.observation))
        if callable(observe):
            observe(observation, info)
    return run.result()


class Scripted:
    """A policy that plays fixed actions in order, then submits (the self-check replays a reference
    patch this way; training plays the built-in policy's chosen edits)."""

    def __init__(self, actions: Iterable[str | dict]):
        self.actions = list(actions)
        self._next: Iterator[str | dict] = iter(())

    def reset(self) -> None:
        self._next = iter(self.actions)

    def __call__(self, observation: str) -> str | dict:
        return next(self._next, SUBMIT)


def _records(env: gym.Env) -> bool:
    while True:
        if isinstance(env, RecordTrajectory):
            return True
        if not isinstance(env, gym.Wrapper):
            return False
        env = env.env
