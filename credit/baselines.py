r"""Outcome-only baselines: GRPO, Dr. GRPO and RLOO.

Every token of trajectory i gets the same advantage A_i; the functions take and return what
`credit.didpo` does, so a trainer switches estimator by name (`credit.get`).

  GRPO    (Shao et al. 2024, arXiv:2402.03300):       A_i = (r_i - mean_q r) / (std_q r + eps)
  Dr.GRPO (Liu et al. 2025, arXiv:2503.20783):        A_i = r_i - mean_q r
  RLOO    (Ahmadian et al. 2024, arXiv:2402.14740):   A_i = r_i - mean_{j in q, j != i} r_j

With count="steps" (the reference's convention) a trajectory weighs as many samples as it has
steps; RLOO then leaves out all of trajectory i's samples. A task with a single trajectory follows
the singleton rule of `credit.episode.episode_advantage`, which goes by samples: under
count="steps" GRPO and Dr.GRPO see a lone trajectory of several steps as several equal samples
(A = 0, as the reference's rows give), while RLOO, which leaves the whole trajectory out, finds
no other sample and applies the rule (A = r with singleton="reward").

`within_anchor_contrast` is the diff-level baseline of DiDPO's `baseline="within"` (ours): inside
one anchor, each exact variant's mean outcome against the anchor's other members.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from threadpoolctl import threadpool_limits

from credit._common import check_count, episode, result, row_returns, step_table, tokens
from credit._util import csr_pointers, option, pieces, segment_starts
from credit.episode import SINGLETON_RULES
from credit.types import Result


def grpo(trajectories: Iterable[Any], *, eps: float = 1e-6, gamma: float = 0.95, count: str = "trajectories",
         singleton: str = "reward") -> Result:
    """GRPO: A_i = (r_i - mean) / (std + eps) over the trajectories of one task (unbiased std)."""
    return _outcome_only("grpo", trajectories, "mean_std_norm", option("eps", eps, 0.0), gamma, count, singleton)


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
    gamma = option("gamma", gamma, 0.0, 1.0)
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
    gamma = option("gamma", gamma, 0.0, 1.0)
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


def anchor_effect_split(members: list[np.ndarray], unit_traj: np.ndarray, outcome: np.ndarray,
                        task: np.ndarray, base: np.ndarray, eps: float = 1e-6) -> tuple[list[np.ndarray], np.ndarray]:
    r"""DiDPO's `baseline="split"` (ours): each anchor's effect on the outcome with the task's other
    anchors held fixed, in units of its standard error, split between the trajectories that make
    it and those that leave it out.

    Per task q, x_{ja} = 1 when trajectory j makes anchor a (has an occurrence of it); anchors made by
    the same trajectories (an edit's deleted and added sides) are one choice, one column. Least squares
    (minimum-norm, for choices that depend on each other: `_effect_units`) of r_j = b_0 + \sum_a beta_a x_{ja}
    gives each anchor's effect beta_a and its standard error se_a (from the residual variance; from
    the outcome's variance when the fit has no residual degree of freedom), and

      u_a = clip(beta_a / se_a, -1, 1)      (+-1 for a clear effect, near 0 for noise)
      share_a  = u_a (1 - xbar_a) + e_j / std_q r           for the occurrences of a in trajectory j
      rest_j   = - \sum_{a not made by j} u_a xbar_a + e_j / std_q r     for trajectory j's other tokens

    so the choice to make an edit and the choice to leave it out each get their side of the
    anchor's effect (the tokens that left a region alone wrote no diff, but they are the rest of
    the trajectory), free of the other anchors' noise, and every anchor's choice gets the same
    scale whatever its weight in the outcome. What the fit does not explain, the residual e_j over
    the task's outcome std (GRPO's scale), goes to every token of trajectory j on top: a choice no
    anchor isolates (two regions merged into one near-duplicate anchor) still gets the outcome's
    credit, as under GRPO. A task without anchors keeps `base` (the episode advantage).

    Args:
      members: per anchor, the unit ids of its occurrences (every anchor lies in one task).
      unit_traj: (U,) trajectory of every unit.
      outcome, task: (N,) outcome and task code of every trajectory.
      base: (N,) what a trajectory of a task without anchors gets (A^E).
      eps: added to the outcome std that scales the residuals.

    Returns:
      (per anchor, the share of each occurrence; (N,) rest of every trajectory).
    """
    rest = np.asarray(base, np.float64).copy()
    if not members:
        return [], rest
    size = np.fromiter(map(len, members), np.int64, len(members))
    occ_traj = unit_traj[np.concatenate(members)]
    occ_anchor = np.repeat(np.arange(len(members)), size)
    anchor_task = task[occ_traj[segment_starts(size)]]
    share = np.zeros(len(members))
    unexplained = np.zeros(rest.shape[0])
    # one BLAS thread: OpenBLAS's threads for these small fits spin on after them and took the
    # CPU from the rest of the call (a 114 ms DiDPO call took 190 ms; docs/benchmarks.md)
    with threadpool_limits(limits=1, user_api="blas"):
        for q in np.unique(anchor_task).tolist():
            share_q, rest_q, residual, trajs, anchors = _task_split(q, task, anchor_task, occ_traj, occ_anchor,
                                                                    outcome, eps)
            rest[trajs], share[anchors] = rest_q + residual, share_q
            unexplained[trajs] = residual
    return pieces(share[occ_anchor] + unexplained[occ_traj], csr_pointers(size).tolist()), rest


def _task_split(q, task, anchor_task, occ_traj, occ_anchor, outcome, eps):
    """`anchor_effect_split` for task q: (shares of its anchors, rests and residuals of its
    trajectories, which trajectories, which anchors)."""
    trajs = np.flatnonzero(task == q)
    anchors = np.flatnonzero(anchor_task == q)
    at = np.flatnonzero(anchor_task[occ_anchor] == q)
    makes = np.zeros((trajs.shape[0], anchors.shape[0]))
    makes[np.searchsorted(trajs, occ_traj[at]), np.searchsorted(anchors, occ_anchor[at])] = 1.0
    # anchors made by the same trajectories (an edit's deleted and added sides, always) are one
    # choice: one column of the fit, counted once in what leaving it out costs
    choices, choice_of = np.unique(makes.T, axis=0, return_inverse=True)
    r = outcome[trajs]
    unit, residual = _effect_units(choices.T, r)
    mean = choices.mean(axis=1)
    rest = -((1.0 - choices.T) @ (unit * mean))
    scale = r.std() + eps  # 0 only for equal outcomes with eps = 0, where every residual is 0
    scaled = residual / scale if scale > 0 else np.zeros_like(residual)
    return (unit * (1.0 - mean))[choice_of.reshape(-1)], rest, scaled, trajs, anchors


def _effect_units(makes: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """clip(beta / se, -1, 1) of the least-squares effects of the columns of `makes` on `outcome`,
    and the fit's residuals.

    The fit is the minimum-norm one (a pseudo-inverse), so columns that depend on each other keep
    finite errors: two ways of writing one region that split the trajectories between them (x_b =
    1 - x_a) get opposite effects of half their contrast each, with the t of that contrast; a
    column every trajectory makes (or none does) has no contrast, and gets 0. An inverse with a
    small ridge instead gives such columns errors of ~1/ridge: every anchor of the task ~0."""
    n, p = makes.shape
    x = makes - makes.mean(axis=0)
    y = outcome - outcome.mean()
    gram = x.T @ x
    inverse = np.linalg.pinv(gram, hermitian=True)
    beta = inverse @ (x.T @ y)
    rank = np.linalg.matrix_rank(gram, hermitian=True) if p else 0
    dof = n - rank - 1
    residual = y - x @ beta
    variance = residual @ residual / dof if dof > 0 else y @ y / max(n - 1, 1)
    se = np.sqrt(np.maximum(np.diag(inverse) * variance, 0.0))
    varies = gram.diagonal() > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(varies & (beta != 0.0), beta / se, 0.0)
    return np.clip(np.nan_to_num(t, nan=0.0), -1.0, 1.0), residual
