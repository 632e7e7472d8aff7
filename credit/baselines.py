r"""Outcome-only baselines: GRPO, Dr. GRPO and RLOO.

Every token of trajectory i gets the same advantage A_i; the functions take and return what
`credit.didpo` does, so a trainer switches estimator by name (`credit.get`).

  GRPO    (Shao et al. 2024, arXiv:2402.03300):       A_i = (r_i - mean_q r) / (std_q r + eps)
  Dr.GRPO (Liu et al. 2025, arXiv:2503.20783):        A_i = r_i - mean_q r
  RLOO    (Ahmadian et al. 2024, arXiv:2402.14740):   A_i = r_i - mean_{j in q, j != i} r_j

With count="steps" (the reference's convention) a trajectory weighs as many samples as it has
steps; RLOO then leaves out all of trajectory i's samples. A task with a single trajectory follows
the singleton rule of `credit.episode.episode_advantage`.

`within_anchor_contrast` is the diff-level baseline of DiDPO's `baseline="within"` (ours): inside
one anchor, each exact variant's mean outcome against the anchor's other members.
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


def within_anchor_contrast(members: list[np.ndarray], unit_traj: np.ndarray, unit_variant: np.ndarray,
                           outcome: np.ndarray, task: np.ndarray, eps: float = 1e-6,
                           use_std: bool = False) -> list[np.ndarray]:
    r"""Per anchor, the value of each occurrence: its exact variant's effect inside the anchor.

      W(o) = mean_{j in a makes v(o)} r_j - mean_{j in a, j does not make v(o)} r_j

    v(o) is the exact-duplicate class of occurrence o's unit (`credit.grouping.Clusters.exact`).
    When every trajectory of the anchor makes v(o) (one variant only), W falls back to the anchor's
    effect against the rest of the task (the contrast baseline's Delta, 0 when nobody else is
    there), so a right edit and its near-duplicate wrong variant, merged into one anchor, are
    separated, and an anchor of one variant keeps the between-edit contrast.

    Args:
      members: per anchor, the unit ids of its occurrences.
      unit_traj, unit_variant: (U,) trajectory and exact class of every unit.
      outcome, task: (N,) outcome and task code of every trajectory.
      use_std: divide by the task's outcome std (population) + eps.
    """
    out = []
    for m in members:
        trajs, variants = unit_traj[m], unit_variant[m]
        in_anchor = np.unique(trajs)
        in_task = task == task[in_anchor[0]]
        value = np.zeros(m.shape[0])
        for v in np.unique(variants):
            makers = np.unique(trajs[variants == v])
            others = np.setdiff1d(in_anchor, makers)
            if others.size == 0:  # one variant: contrast against the task's trajectories outside the anchor
                outside = np.flatnonzero(in_task)
                others = np.setdiff1d(outside, in_anchor)
            if others.size:
                value[variants == v] = outcome[makers].mean() - outcome[others].mean()
        if use_std:  # eps = 0 with equal outcomes: every value is 0 and stays 0, without a warning
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.where(value == 0.0, 0.0, value / (outcome[in_task].std() + eps))
        out.append(value)
    return out
