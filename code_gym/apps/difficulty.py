"""Difficulty filter (CodeMidas's repeated rollouts): run a policy k times on each task through
CodeRepo-v0 and keep the tasks whose pass rate lies in a band.

A task every rollout solves, or none does, gives a group-relative estimator (GRPO, DiDPO) no
signal: all advantages in its group are zero. The filter keeps the tasks where the policy is
sometimes right."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import gymnasium as gym
from tqdm import tqdm

from code_gym.env.episode import Policy, run_episode
from code_gym.tasks.task import Task


@dataclass(frozen=True)
class TaskDifficulty:
    task: Task
    rewards: tuple[float, ...]  # the final reward of each rollout
    resolved: tuple[bool, ...]  # whether each rollout passed every test

    @property
    def pass_rate(self) -> float:
        return sum(self.resolved) / len(self.resolved)

    @property
    def mean_reward(self) -> float:
        return sum(self.rewards) / len(self.rewards)


def rollout(env: gym.Env, policy: Policy, task: Task, seed: int | None = None) -> tuple[float, bool]:
    """One episode of `policy` on `task`: (final reward, resolved)."""
    result = run_episode(env, policy, task, seed)
    return result.last_reward, result.resolved


def measure(tasks: Iterable[Task], policy: Policy, k: int = 8, seed: int = 0, progress: bool = False,
            **env_options) -> list[TaskDifficulty]:
    """k rollouts of `policy` on each task, in one CodeRepo-v0 env made with `env_options`
    (max_steps, isolation, ...). Rollout i of every task is reset with seed `seed + i`."""
    if k < 1:
        raise ValueError(f"k must be >= 1 rollouts per task, got {k}")
    tasks = list(tasks)
    env = gym.make("CodeRepo-v0", tasks=tasks, **env_options)
    results = []
    try:
        for task in tqdm(tasks, desc="difficulty", unit="task", disable=not progress):
            outcomes = [rollout(env, policy, task, seed + i) for i in range(k)]
            results.append(TaskDifficulty(task, tuple(r for r, _ in outcomes), tuple(ok for _, ok in outcomes)))
    finally:
        env.close()
    return results


def filter_by_pass_rate(tasks: Iterable[Task], policy: Policy, k: int = 8, band: tuple[float, float] = (0.05, 0.95),
                        **measure_options) -> tuple[list[Task], list[TaskDifficulty]]:
    """The tasks whose pass rate over k rollouts lies in the closed interval `band`, and every
    task's measurement. The default band drops tasks that are always or never solved (for k <= 20)."""
    low, high = band
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"band must be (low, high) with 0 <= low <= high <= 1, got {band}")
    measured = measure(tasks, policy, k, **measure_options)
    return [m.task for m in measured if low <= m.pass_rate <= high], measured
