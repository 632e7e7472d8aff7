"""Episode-level quantities: group-relative episode advantages and discounted step returns.

These are the parts every estimator in the package shares: GRPO-style advantages over the
trajectories of one task (Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300) and the step
return-to-go of GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization", arXiv:2505.10978).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from credit._tensor import like, to_numpy
from credit._util import as_vector, group_codes, option

MODES = ("mean_norm", "mean_std_norm")
SINGLETON_RULES = ("reward", "zero")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def episode_advantage(
    rewards: Any,
    group_ids: Any,
    *,
    mode: str = "mean_norm",
    eps: float = 1e-6,
    weights: Optional[Any] = None,
    singleton: str = "reward",
) -> Any:
    r"""Group-relative episode advantage A^E.

    For trajectory i in group g (the trajectories of one task), with weights w (default 1):

      m_g = \sum_{j \in g} w_j r_j / \sum_{j \in g} w_j
      s_g = \sqrt{ \sum_{j \in g} w_j (r_j - m_g)^2 / (\sum_{j \in g} w_j - 1) }     (unbiased)
      mean_norm:      A^E_i = r_i - m_g
      mean_std_norm:  A^E_i = (r_i - m_g) / (s_g + eps)     (0 where r_i = m_g)

    Integer weights count trajectory i as w_i samples: w_i = number of steps reproduces the
    reference implementation (verl-agent/GiGPO, DiDPO), which puts one row per step in the group.

    Singleton rule: a group whose total weight is 1 (one trajectory with one row) has no baseline.
    `singleton="reward"` uses mean 0 and scale 1, so A^E = r (verl's GRPO, the reference);
    `singleton="zero"` gives A^E = 0.

    Args:
      rewards: (N,) outcome reward of each trajectory (numpy or torch).
      group_ids: (N,) group (task) id of each trajectory, any hashable values.
      mode: "mean_norm" or "mean_std_norm".
      eps: added to the std in "mean_std_norm".
      weights: optional (N,) positive sample counts.
      singleton: "reward" or "zero", see above.

    Returns:
      (N,) A^E, numpy (float64) or, for torch rewards, a tensor like `rewards`.
    """
    check_mode(mode)
    if singleton not in SINGLETON_RULES:
        raise ValueError(f"singleton must be one of {SINGLETON_RULES}, got {singleton!r}")
    eps = option("eps", eps, 0.0)
    r = as_vector(rewards, "rewards")
    n = r.shape[0]
    g, n_groups = group_codes(group_ids)
    if g.shape[0] != n:
        raise ValueError(f"group_ids has length {g.shape[0]}, rewards has {n}")
    w = np.ones(n) if weights is None else as_vector(weights, "weights", n)
    if (w <= 0).any():
        raise ValueError("weights must be positive sample counts")

    total = np.bincount(g, w, n_groups)
    mean = np.bincount(g, w * r, n_groups) / total
    dev = r - mean[g]
    var = np.bincount(g, w * dev**2, n_groups) / np.maximum(total - 1.0, 1e-12)
    if mode == "mean_std_norm":
        with np.errstate(divide="ignore", invalid="ignore"):
            adv = np.where(dev == 0.0, 0.0, dev / (np.sqrt(var)[g] + eps))
    else:
        adv = dev
    alone = total[g] <= 1.0
    adv[alone] = r[alone] if singleton == "reward" else 0.0
    return like(adv, rewards)


def step_returns(rewards: Any, gamma: float = 0.95) -> Any:
    r"""Discounted step returns G_t = r_t + \gamma G_{t+1}, G_T = r_T.

    Pad shorter trajectories with trailing zeros: padding never changes earlier returns.
    Put the episode's outcome reward into r at its last step (DiDPO and GiGPO do).

    Args:
      rewards: (..., T) step rewards, time on the last axis (numpy or torch).
      gamma: discount factor in [0, 1].

    Returns:
      (..., T) returns, numpy (float64) or a tensor like `rewards`.
    """
    r = to_numpy(rewards, np.float64)
    if r.ndim < 1:
        raise ValueError(f"rewards must have a time axis (shape (..., T)), got shape {r.shape}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    out = np.empty_like(r)
    acc = np.zeros(r.shape[:-1])
    for t in range(r.shape[-1] - 1, -1, -1):
        acc = r[..., t] + gamma * acc
        out[..., t] = acc
    return like(out, rewards)
