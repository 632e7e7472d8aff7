"""The step table and result assembly that every trajectory-level estimator shares."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import numpy as np

from credit._tensor import is_torch
from credit._util import csr_pointers, group_codes, pieces
from credit.anchors import COUNTS
from credit.episode import episode_advantage, step_returns
from credit.types import Anchor, Result, Step, StepCredit, Trajectory, as_trajectories


@dataclass(frozen=True, eq=False)
class StepTable:
    """Trajectories flattened to one row per step.

    trajectories (N,), task (N,) dense task codes, n_steps (N,), outcome (N,);
    rows: steps (S,), traj (S,), index (S,), reward (S,), first_row (N,) of each trajectory.
    """

    trajectories: list[Trajectory]
    task: np.ndarray
    n_tasks: int
    n_steps: np.ndarray
    outcome: np.ndarray
    steps: list[Step]
    traj: np.ndarray
    index: np.ndarray
    reward: np.ndarray
    first_row: np.ndarray


def step_table(trajectories: Iterable[Any]) -> StepTable:
    trajs = as_trajectories(trajectories)
    n_steps = np.fromiter((len(t.steps) for t in trajs), np.int64, len(trajs))
    steps = [s for t in trajs for s in t.steps]
    outcome = np.fromiter((t.reward for t in trajs), np.float64, len(trajs))
    reward = np.fromiter((s.reward for s in steps), np.float64, len(steps))
    task, n_tasks = group_codes([t.task_id for t in trajs])
    first_row = np.zeros(len(trajs), np.int64)
    np.cumsum(n_steps[:-1], out=first_row[1:])
    traj = np.repeat(np.arange(len(trajs)), n_steps)
    return StepTable(
        trajectories=trajs, task=task, n_tasks=n_tasks, n_steps=n_steps, outcome=outcome,
        steps=steps, traj=traj, index=np.arange(len(steps)) - first_row[traj], reward=reward, first_row=first_row,
    )


def check_count(count: str) -> None:
    if count not in COUNTS:
        raise ValueError(f"count must be one of {COUNTS}, got {count!r}")


def episode(table: StepTable, mode: str, eps: float, count: str, singleton: str) -> np.ndarray:
    """A^E per trajectory; count="steps" weighs each trajectory by its number of steps (reference)."""
    check_count(count)
    weights = np.maximum(table.n_steps, 1) if count == "steps" else None
    return episode_advantage(table.outcome, table.task, mode=mode, eps=eps, weights=weights, singleton=singleton)


def row_returns(table: StepTable, gamma: float) -> np.ndarray:
    """(S,) step returns G_t with the outcome reward counted at each trajectory's last step."""
    n = len(table.trajectories)
    width = int(table.n_steps.max(initial=0))
    rewards = np.zeros((n, max(width, 1)))
    rewards[table.traj, table.index] = table.reward
    has = table.n_steps > 0
    rewards[np.flatnonzero(has), table.n_steps[has] - 1] += table.outcome[has]
    return step_returns(rewards, gamma)[table.traj, table.index]


def tokens(table: StepTable, base: np.ndarray,
           extra: Optional[Callable[[np.ndarray, np.ndarray], None]] = None) -> list[list[Any]]:
    """Per-trajectory lists of per-step token arrays: base[row], plus values at some tokens.

    One flat array holds every token of the batch; each step gets its slice of it. `extra`, given
    the (S + 1,) start of each step's tokens in that array and the array (base values), adds its
    values in place.
    """
    steps = table.steps
    offsets = [s.token_offsets for s in steps]
    sizes = np.fromiter((0 if o is None else len(o) for o in offsets), np.int64, len(steps))
    flat = np.repeat(np.asarray(base, np.float64), sizes)
    starts = csr_pointers(sizes)
    if extra is not None:
        extra(starts, flat)
    views = pieces(flat, starts.tolist())
    first = table.first_row.tolist()
    ends = (table.first_row + table.n_steps).tolist()
    torch_given = any(map(is_torch, offsets)) if "torch" in sys.modules else False
    if not torch_given and all(o is not None for o in offsets):  # usual: each step a view of `flat`
        return [views[a:b] for a, b in zip(first, ends)]
    for r, o in enumerate(offsets):
        if o is None:
            views[r] = None
        elif torch_given and is_torch(o):
            import torch

            views[r] = torch.from_numpy(views[r].copy()).to(o.device)
    return [views[a:b] for a, b in zip(first, ends)]


def result(
    estimator: str,
    table: StepTable,
    episode_adv: np.ndarray,
    returns: np.ndarray,
    step_adv: np.ndarray,
    token_values: list[list[Any]],
    stats: dict[str, Any],
    anchors: tuple[Anchor, ...] = (),
    diff: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]] = None,
) -> Result:
    steps = StepCredit(trajectory=table.traj, index=table.index, returns=returns, advantage=step_adv)
    if diff is not None:
        steps = StepCredit(table.traj, table.index, returns, step_adv, *diff)
    base_stats = {"n_trajectories": len(table.trajectories), "n_tasks": table.n_tasks, "n_steps": len(table.steps)}
    return Result(estimator, episode_adv, steps, token_values, anchors, {**base_stats, **stats})
