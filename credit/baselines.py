r"""Outcome-only baselines: GRPO, Dr. GRPO and RLOO.

Every token of trajectory i gets the same advantage A_i; the functions take and return what
`credit.didpo` does, so a trainer switches estimator by name (`credit.get`).

  GRPO    (Shao et al. 2024, arXiv:2402.03300):       A_i = (r_i - mean_q r) / (std_q r + eps)
  Dr.GRPO (Liu et al. 2025, arXiv:2503.20783):        A_i = r_i - mean_q r
  RLOO    (Ahmadian et al. 2024, arXiv:2402.14740):   A_i = r_i - mean_{j in q, j != i} r_j

With count="steps" (the reference's convention) a trajectory weighs as many samples as it has
steps; RLOO then leaves out all of trajectory i's samples. A task with a single trajectory follows
the singleton rule of `credit.episode.episode_advantage`.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from credit._common import check_count, episode, result, row_returns, step_table, tokens
from credit.episode import SINGLETON_RULES
from credit.types import Result


def grpo(trajectories: Iterable[Any], *, eps: float = 1e-6, gamma: float = 0.95, count: str = "trajectories",
         singleton: str = "reward") -> Result:
    """GRPO: A_i = (r_i - mean) / (std + eps) over the trajectories of one task (unbiased std)."""
    return _outcome_only("grpo", trajectories, "mean_std_norm", eps, gamma, count, singleton)


def dr_grpo(trajectories: Iterable[Any], *, gamma: float = 0.95, count: str = "trajectories",
            singleton: str = "reward") -> Result:
    """Dr. GRPO: A_i = r_i - mean over the trajectories of one task (no std division)."""
    return _outcome_only("dr_grpo", trajectories, "mean_norm", 0.0, gamma, count, singleton)


def rloo(trajectories: Iterable[Any], *, gamma: float = 0.95, count: str = "trajectories",
         singleton: str = "reward") -> Result:
    r"""RLOO: A_i = r_i - (\sum_{j in q} w_j r_j - w_i r_i) / (\sum_{j in q} w_j - w_i).

    w_j = steps of trajectory j (count="steps") or 1 (count="trajectories").
    """
    check_count(count)
    if singleton not in SINGLETON_RULES:
        raise ValueError(f"singleton must be one of {SINGLETON_RULES}, got {singleton!r}")
    table = step_table(trajectories)
    r = table.outcome
    w = np.maximum(table.n_steps, 1).astype(np.float64) if count == "steps" else np.ones_like(r)
    total = np.bincount(table.task, w, table.n_tasks)[table.task]
    weighted = np.bincount(table.task, w * r, table.n_tasks)[table.task]
    others = total - w
    alone = others <= 0
    adv = r - (weighted - w * r) / np.where(alone, 1.0, others)
    adv[alone] = r[alone] if singleton == "reward" else 0.0
    returns = row_returns(table, gamma)
    return result("rloo", table, adv, returns, np.zeros(len(table.steps)), tokens(table, adv[table.traj]), {})


def _outcome_only(name: str, trajectories: Iterable[Any], mode: str, eps: float, gamma: float,
                  count: str, singleton: str) -> Result:
    table = step_table(trajectories)
    adv = episode(table, mode, eps, count, singleton)
    returns = row_returns(table, gamma)
    return result(name, table, adv, returns, np.zeros(len(table.steps)), tokens(table, adv[table.traj]), {})
