r"""GiGPO: Group-in-Group Policy Optimization (Feng et al. 2025, arXiv:2505.10978).

Episode advantage plus a step advantage over anchor states: steps of one task whose observations
are identical form an anchor group. For step t of trajectory i in anchor group s:

  A^S_{i,t} = G_{i,t} - mean_{(j,u) in s} G_{j,u}      (or / (std + eps), unbiased std)
  A_{i,t,k} = A^E_i + omega A^S_{i,t}                    for every token k of the step

A step in a group of one, or without an observation, gets A^S = 0.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from credit._common import episode, result, row_returns, step_table, tokens
from credit._util import option
from credit.episode import check_mode, episode_advantage
from credit.types import Anchor, Result


def gigpo(
    trajectories: Iterable[Any],
    *,
    mode: str = "mean_norm",
    eps: float = 1e-6,
    gamma: float = 0.95,
    omega: float = 1.0,
    singleton: str = "reward",
) -> Result:
    """GiGPO advantages (see the module docstring).

    Args:
      trajectories: credit.Trajectory objects or dicts; `Step.observation` is the anchor state.
      mode: "mean_norm" or "mean_std_norm", for A^E and A^S.
      eps: added to stds.
      gamma: discount of the step returns.
      omega: weight of A^S.
      singleton: rule for a task with a single trajectory (see `credit.didpo`). A^E counts each
        trajectory once; an anchor group counts step rows (GiGPO).

    Returns:
      credit.Result; result.steps.advantage holds omega * A^S, result.anchors the groups of two or
      more steps.
    """
    check_mode(mode)
    eps, gamma, omega = option("eps", eps, 0.0), option("gamma", gamma, 0.0, 1.0), option("omega", omega)
    table = step_table(trajectories)
    episode_adv = episode(table, mode, eps, "trajectories", singleton)
    returns = row_returns(table, gamma)

    keys: dict[tuple[int, str], int] = {}
    group = np.full(len(table.steps), -1, np.int64)
    for r, step in enumerate(table.steps):
        if step.observation is not None:
            group[r] = keys.setdefault((int(table.task[table.traj[r]]), step.observation), len(keys))
    step_adv = np.zeros(len(table.steps))
    has = np.flatnonzero(group >= 0)
    if has.size:
        step_adv[has] = episode_advantage(returns[has], group[has], mode=mode, eps=eps, singleton="zero")

    anchors = []
    size = np.bincount(group[has], minlength=len(keys))
    for (_, observation), g in keys.items():
        if size[g] < 2:
            continue
        rows = np.flatnonzero(group == g)
        traj = table.traj[rows]
        anchors.append(Anchor(
            task_id=table.trajectories[int(traj[0])].task_id, kind="observation", rows=rows,
            trajectories=traj, steps=table.index[rows], advantage=step_adv[rows], gs=float("nan"),
            mean_lines=float("nan"), size=int(size[g]), preview=observation[:240]))
    weighted = omega * step_adv
    token_values = tokens(table, episode_adv[table.traj] + weighted)
    stats = {"n_anchors": len(anchors), "coverage": {"steps": float(np.isin(group, np.flatnonzero(size >= 2)).mean())
                                                     if len(table.steps) else 0.0}}
    return result("gigpo", table, episode_adv, returns, weighted, token_values, stats, tuple(anchors))
