"""Choose diff anchors: greedy by groupability score, non-overlapping inside each step's diff.

Following the reference (verl-code `didpo/core_didpo.py`): a cluster of similar units keeps one
occurrence per step (the one with the most compared lines), is scored GS = phi(L) * psi(n), and
clusters are taken in decreasing GS. An occurrence that shares a changed line with an occurrence
already taken in the same step is dropped; the cluster's score is recomputed on what is left and
it is kept while GS > 0 (two or more members). At most `max_anchors` anchors per task when given
(the reference's K = 64); by default there is no cap: an occurrence never shares a changed line
with another taken in its step, so the anchors' occurrences hold at most the batch's changed lines
and the work after selection is bounded by them anyway. The greedy
pass is a Python loop over clusters, but only clusters that share a line with an earlier one are
checked for such cuts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np

from credit._util import csr_pointers, lexsort_ints, pieces, ranges, segment_starts
from credit.groupability import groupability_score, score_one

COUNTS = ("steps", "trajectories")


@dataclass(frozen=True, eq=False)
class Selection:
    """The chosen anchors, in selection order.

    Attributes:
      flat, ptr: the unit indices of the anchors' occurrences (one per step row), anchor k's at
        flat[ptr[k]:ptr[k + 1]].
      gs: (A,) groupability scores after the overlap cut.
      mean_lines: (A,) mean compared lines per occurrence.
      size: (A,) group size n seen by psi.
      cluster: (A,) the cluster each anchor came from.
      n_candidates: clusters that had GS > 0 before selection.
    """

    flat: np.ndarray
    ptr: np.ndarray
    gs: np.ndarray
    mean_lines: np.ndarray
    size: np.ndarray
    cluster: np.ndarray
    n_candidates: int

    @functools.cached_property
    def members(self) -> list[np.ndarray]:
        """Per anchor, the (n,) unit indices of its occurrences (views of `flat`)."""
        return pieces(self.flat, self.ptr.tolist())

    @functools.cached_property
    def anchor_of(self) -> np.ndarray:
        """(len(flat),) the anchor of each occurrence."""
        return np.repeat(np.arange(self.ptr.shape[0] - 1), np.diff(self.ptr))


def _none(n_candidates: int) -> Selection:
    empty = np.zeros(0, np.int64)
    return Selection(empty, np.zeros(1, np.int64), np.zeros(0), np.zeros(0), empty, empty, n_candidates)


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
    max_anchors: Optional[int] = None,
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
      count, max_anchors (None: no cap), s0, g0, phi_form, psi_form: see above and `groupability_score`.

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
    if max_anchors is not None and max_anchors < 1:
        raise ValueError(f"max_anchors must be >= 1 or None (no cap), got {max_anchors}")
    score = dict(s0=s0, g0=g0, phi_form=phi_form, psi_form=psi_form)

    units = _one_per_row(cluster, row, compared)
    if units.shape[0] == 0:
        return _none(0)
    c = cluster[units]
    bounds = np.flatnonzero(np.diff(c, prepend=-1, append=-1))
    start, end = bounds[:-1], bounds[1:]
    lines = np.add.reduceat(compared[units].astype(np.float64), start) / (end - start)
    size = _sizes(units, start, end, trajectory) if count == "trajectories" else end - start
    gs = groupability_score(lines, size.astype(np.float64), **score)
    candidates = np.flatnonzero(gs > 0)
    candidates = candidates[np.lexsort((c[start[candidates]], -size[candidates], -lines[candidates], -gs[candidates]))]

    as_lists: list[list[int]] = []  # compared and trajectory as lists, made at the first cut

    def rescored(kept: list[int]) -> float:  # the mean of ints as numpy gives it: their exact sum / n
        if not as_lists:
            as_lists.extend((compared.tolist(), trajectory.tolist()))
        compared_of, trajectory_of = as_lists
        n = len({trajectory_of[u] for u in kept}) if count == "trajectories" else len(kept)
        return score_one(sum(compared_of[u] for u in kept) / len(kept), float(n), **score)

    cap = candidates.shape[0] if max_anchors is None else max_anchors
    taken, flat, n_members = _greedy(units[ranges(start[candidates], end[candidates])],
                                     end[candidates] - start[candidates], task, unit_ptr, unit_lines, cap, rescored)
    return _selection(flat, n_members, c[start[candidates[taken]]], compared, trajectory, count, score,
                      int(candidates.shape[0]))


def _selection(flat, n_members, cluster_of, compared, trajectory, count, score, n_candidates) -> Selection:
    """The Selection of the taken anchors (their members concatenated, n_members each), scored on
    the members each kept (one vectorised call)."""
    if not n_members.shape[0]:
        return _none(n_candidates)
    first = segment_starts(n_members)
    mean_lines = np.add.reduceat(compared[flat].astype(np.float64), first) / n_members
    n = _sizes(flat, first, first + n_members, trajectory) if count == "trajectories" else n_members
    gs = groupability_score(mean_lines, n.astype(np.float64), **score)
    return Selection(flat.astype(np.int64, copy=False), csr_pointers(n_members), gs, mean_lines, n.astype(np.int64),
                     cluster_of.astype(np.int64), n_candidates)


def _greedy(members, n_members, task, unit_ptr, unit_lines, max_anchors, rescored):
    """The greedy pass over candidates, given by their members (concatenated in candidate order).

    A candidate is skipped once its task has `max_anchors` anchors. Its members that share a changed
    line with a member taken before are cut; a cut candidate is kept while two or more members are
    left and `rescored(members)` > 0. Only candidates holding a line that an earlier candidate
    holds can be cut, so only those are checked; with no cap the others are taken up front (no
    later candidate's check reads their lines: a later one holding such a line is itself checked
    against it only if taken before, and nothing earlier holds them). The loop itself is plain
    Python over the line ids (a few numpy calls per candidate cost more than the whole check).

    Returns:
      (indices of the taken candidates, the members kept of each one after another, their count).
    """
    line_lo, line_hi = unit_ptr[members], unit_ptr[members + 1]
    lines = unit_lines[ranges(line_lo, line_hi)]
    owner = np.repeat(np.repeat(np.arange(n_members.shape[0]), n_members), line_hi - line_lo)
    contested = _held_before(lines, owner, n_members.shape[0])
    member_ptr = np.concatenate([[0], np.cumsum(n_members)])
    line_ptr = np.concatenate([[0], np.cumsum(line_hi - line_lo)])
    n = n_members.shape[0]
    free = np.flatnonzero(~contested)
    uncapped = max_anchors >= n
    # no cap binds: every uncontested candidate is taken whole, and only the others are visited
    order = np.flatnonzero(contested) if uncapped else np.arange(n)
    is_taken = np.zeros(n, bool)
    is_taken[free] = uncapped
    first_lines = lines[ranges(line_ptr[member_ptr[free]], line_ptr[member_ptr[free + 1]])] if uncapped else lines[:0]
    tasks = task[members[member_ptr[:-1]]]
    cut = _greedy_loop(lines.tolist(), line_ptr.tolist(), member_ptr.tolist(), members.tolist(), tasks.tolist(),
                       contested.tolist(), order.tolist(), max_anchors, set(first_lines.tolist()), is_taken, rescored)
    taken = np.flatnonzero(is_taken)
    # the taken candidates' members, less those a cut left out (a cut keeps some in order)
    keep = np.zeros(members.shape[0], bool)
    keep[ranges(member_ptr[taken], member_ptr[taken + 1])] = True
    n_kept = member_ptr[taken + 1] - member_ptr[taken]
    for k, kept in cut.items():
        keep[member_ptr[k]:member_ptr[k + 1]] = False
        keep[kept] = True
    if cut:
        n_kept[np.searchsorted(taken, list(cut))] = [len(kept) for kept in cut.values()]
    return taken, members[keep], n_kept


def _greedy_loop(lines, line_ptr, member_ptr, members, tasks, contested, order, max_anchors, taken_lines, is_taken,
                 rescored) -> dict[int, list[int]]:
    """The loop of `_greedy` over the candidates in `order`, on lists: sets `is_taken`, adds to `taken_lines`; returns the positions of the members each cut
    candidate keeps."""
    cut: dict[int, list[int]] = {}
    per_task: dict[int, int] = {}
    for k in order:
        t = tasks[k]
        if per_task.get(t, 0) >= max_anchors:
            continue
        lo, hi = member_ptr[k], member_ptr[k + 1]
        if contested[k] and not taken_lines.isdisjoint(lines[line_ptr[lo]:line_ptr[hi]]):
            kept = [i for i in range(lo, hi) if taken_lines.isdisjoint(lines[line_ptr[i]:line_ptr[i + 1]])]
            if len(kept) < 2 or rescored([members[i] for i in kept]) <= 0:
                continue
            cut[k] = kept
            for i in kept:
                taken_lines.update(lines[line_ptr[i]:line_ptr[i + 1]])
        else:
            taken_lines.update(lines[line_ptr[lo]:line_ptr[hi]])
        per_task[t] = per_task.get(t, 0) + 1
        is_taken[k] = True
    return cut


def _held_before(lines: np.ndarray, owner: np.ndarray, n_owners: int) -> np.ndarray:
    """(n_owners,) whether an owner holds a line that an owner of lower index also holds."""
    first = np.full(int(lines.max(initial=-1)) + 1, n_owners)
    np.minimum.at(first, lines, owner)
    held = np.zeros(n_owners, bool)
    held[owner[first[lines] < owner]] = True
    return held


def _one_per_row(cluster: np.ndarray, row: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Units sorted by cluster, keeping per (cluster, row) the unit with the most compared lines."""
    ok = np.flatnonzero((cluster >= 0) & (compared > 0))
    ok = ok[lexsort_ints((-compared[ok], row[ok], cluster[ok]))]  # (ok ascending: ties in its order)
    first = np.ones(ok.shape[0], bool)
    first[1:] = (cluster[ok][1:] != cluster[ok][:-1]) | (row[ok][1:] != row[ok][:-1])
    return ok[first]


def _sizes(units: np.ndarray, start: np.ndarray, end: np.ndarray, trajectory: np.ndarray) -> np.ndarray:
    """Distinct trajectories per cluster segment."""
    seg = np.repeat(np.arange(start.shape[0]), end - start)
    pairs = np.unique(seg * (int(trajectory.max(initial=0)) + 1) + trajectory[units])
    return np.bincount(pairs // (int(trajectory.max(initial=0)) + 1), minlength=start.shape[0])
