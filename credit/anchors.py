"""Choose diff anchors: greedy by groupability score, non-overlapping inside each step's diff.

Following the reference (verl-code `didpo/core_didpo.py`): a cluster of similar units keeps one
occurrence per step (the one with the most compared lines), is scored GS = phi(L) * psi(n), and
clusters are taken in decreasing GS. An occurrence that shares a changed line with an occurrence
already taken in the same step is dropped; the cluster's score is recomputed on what is left and
it is kept while GS > 0 (two or more members). At most `max_anchors` anchors per task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from credit._util import ranges
from credit.groupability import groupability_score

COUNTS = ("steps", "trajectories")


@dataclass(frozen=True, eq=False)
class Selection:
    """The chosen anchors, in selection order.

    Attributes:
      members: per anchor, the (n,) unit indices of its occurrences (one per step row).
      gs: (A,) groupability scores after the overlap cut.
      mean_lines: (A,) mean compared lines per occurrence.
      size: (A,) group size n seen by psi.
      cluster: (A,) the cluster each anchor came from.
      n_candidates: clusters that had GS > 0 before selection.
    """

    members: list[np.ndarray]
    gs: np.ndarray
    mean_lines: np.ndarray
    size: np.ndarray
    cluster: np.ndarray
    n_candidates: int


def select_anchors(
    cluster: np.ndarray,
    row: np.ndarray,
    trajectory: np.ndarray,
    task: np.ndarray,
    compared: np.ndarray,
    unit_ptr: np.ndarray,
    unit_lines: np.ndarray,
    *,
    count: str = "steps",
    max_anchors: int = 64,
    s0: float = 8.0,
    g0: float = 8.0,
    phi_form: str = "saturating",
    psi_form: str = "saturating",
) -> Selection:
    r"""Greedy anchor selection.

    GS_c = phi(mean_{u \in c} L_u) * psi(n_c), n_c = |rows of c| (count="steps", the reference)
    or |distinct trajectories of c| (count="trajectories").

    Args:
      cluster: (U,) cluster label of each unit (-1: not a candidate).
      row: (U,) step row of each unit.
      trajectory: (U,) trajectory of each unit.
      task: (U,) task code of each unit (the cap applies per task).
      compared: (U,) compared (non-blank, non-comment) lines L of each unit.
      unit_ptr, unit_lines: (U + 1,) / (M,) CSR of each unit's changed lines as ids that are unique
        per step (overlap is checked on them).
      count, max_anchors, s0, g0, phi_form, psi_form: see above and `groupability_score`.

    Returns:
      Selection.
    """
    n_units = cluster.shape[0]
    for name, arr in (("row", row), ("trajectory", trajectory), ("task", task), ("compared", compared)):
        if arr.shape != (n_units,):
            raise ValueError(f"{name} must have shape ({n_units},), got {arr.shape}")
    if unit_ptr.shape != (n_units + 1,):
        raise ValueError(f"unit_ptr must have shape ({n_units + 1},), got {unit_ptr.shape}")
    if count not in COUNTS:
        raise ValueError(f"count must be one of {COUNTS}, got {count!r}")
    if max_anchors < 1:
        raise ValueError(f"max_anchors must be >= 1, got {max_anchors}")
    score = dict(s0=s0, g0=g0, phi_form=phi_form, psi_form=psi_form)

    units = _one_per_row(cluster, row, compared)
    if units.shape[0] == 0:
        return Selection([], np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    c = cluster[units]
    bounds = np.flatnonzero(np.diff(c, prepend=-1, append=-1))
    start, end = bounds[:-1], bounds[1:]
    lines = np.add.reduceat(compared[units].astype(np.float64), start) / (end - start)
    size = _sizes(units, start, end, trajectory) if count == "trajectories" else end - start
    gs = groupability_score(lines, size.astype(np.float64), **score)
    candidates = np.flatnonzero(gs > 0)
    candidates = candidates[np.lexsort((c[start[candidates]], -size[candidates], -lines[candidates], -gs[candidates]))]

    taken = np.zeros(int(unit_lines.max(initial=-1)) + 1, bool)
    per_task: dict[int, int] = {}
    out_members, out_gs, out_lines, out_size, out_cluster = [], [], [], [], []
    for k in candidates.tolist():
        members = units[start[k]:end[k]]
        t = int(task[members[0]])
        if per_task.get(t, 0) >= max_anchors:
            continue
        lo, hi = unit_ptr[members], unit_ptr[members + 1]
        hits = taken[unit_lines[ranges(lo, hi)]]
        clash = np.add.reduceat(hits.astype(np.int64), np.cumsum(hi - lo) - (hi - lo)) > 0
        members = members[~clash]
        if members.shape[0] < 2:
            continue
        n = len(set(trajectory[members].tolist())) if count == "trajectories" else members.shape[0]
        mean_lines = float(compared[members].mean())
        g = float(groupability_score(np.array([mean_lines]), np.array([float(n)]), **score)[0])
        if g <= 0:
            continue
        taken[unit_lines[ranges(unit_ptr[members], unit_ptr[members + 1])]] = True
        per_task[t] = per_task.get(t, 0) + 1
        out_members.append(members)
        out_gs.append(g)
        out_lines.append(mean_lines)
        out_size.append(n)
        out_cluster.append(int(c[start[k]]))
    return Selection(out_members, np.asarray(out_gs), np.asarray(out_lines),
                     np.asarray(out_size, np.int64), np.asarray(out_cluster, np.int64), int(candidates.shape[0]))


def _one_per_row(cluster: np.ndarray, row: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Units sorted by cluster, keeping per (cluster, row) the unit with the most compared lines."""
    ok = np.flatnonzero((cluster >= 0) & (compared > 0))
    ok = ok[np.lexsort((ok, -compared[ok], row[ok], cluster[ok]))]
    first = np.ones(ok.shape[0], bool)
    first[1:] = (cluster[ok][1:] != cluster[ok][:-1]) | (row[ok][1:] != row[ok][:-1])
    return ok[first]


def _sizes(units: np.ndarray, start: np.ndarray, end: np.ndarray, trajectory: np.ndarray) -> np.ndarray:
    """Distinct trajectories per cluster segment."""
    seg = np.repeat(np.arange(start.shape[0]), end - start)
    pairs = np.unique(seg * (int(trajectory.max(initial=0)) + 1) + trajectory[units])
    return np.bincount(pairs // (int(trajectory.max(initial=0)) + 1), minlength=start.shape[0])
