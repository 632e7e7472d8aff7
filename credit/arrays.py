"""Array-level entry point for trainers: flat per-step arrays in, a [batch, seq] advantage tensor out.

Two layouts of the batch are supported:

  one row per step (verl-agent): step s owns the response tokens of row s, i.e. the positions
    where response_mask[s] is true, in order (leave `token_spans` None);
  one row per trajectory (OpenRLHF agent executor): step s owns positions
    token_spans[s, 0] .. token_spans[s, 1] - 1 of row rows[s] (its action range).

The k-th token of a step is the k-th entry of its `token_offsets`. Values are written with one
vectorized scatter and multiplied by the mask; nothing loops over tokens in Python.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from credit._tensor import is_torch, to_numpy
from credit._util import as_vector, group_codes, ranges
from credit.registry import get
from credit.types import Result, Step, Trajectory


def token_advantages(
    response_mask: Any,
    group_ids: Any,
    trajectory_ids: Any,
    step_ids: Any,
    rewards: Any,
    *,
    estimator: Union[str, Callable[..., Result]] = "didpo",
    step_rewards: Any = None,
    actions: Optional[Sequence[str]] = None,
    diffs: Optional[Sequence[str]] = None,
    token_offsets: Optional[Sequence[Any]] = None,
    provenance: Optional[Sequence[Any]] = None,
    observations: Optional[Sequence[Optional[str]]] = None,
    calls: Optional[Sequence[Any]] = None,
    edits: Optional[Sequence[Any]] = None,
    line_calls: Optional[Sequence[Any]] = None,
    token_ids: Optional[Sequence[Any]] = None,
    logprobs: Optional[Sequence[Any]] = None,
    rows: Any = None,
    token_spans: Any = None,
    return_result: bool = False,
    **options: Any,
) -> Any:
    """Per-token advantages for a trainer batch.

    Args:
      response_mask: [B, L] bool/int mask of the response tokens (numpy or torch).
      group_ids: (S,) task/prompt id of each step (any hashable values).
      trajectory_ids: (S,) trajectory id of each step.
      step_ids: (S,) index of each step inside its trajectory (distinct per trajectory).
      rewards: (S,) outcome reward of the step's trajectory (the same on all its steps).
      estimator: a name from `credit.ESTIMATORS` (DiDPO's presets among them: "didpo", the paper's
        rules; "didpo-split", the rule measured best) or an estimator function.
      step_rewards: optional (S,) per-step environment rewards (default 0).
      actions: optional (S,) response texts (needed by DiDPO's projection).
      diffs: optional (S,) unified diffs of the steps (default: no diff).
      token_offsets: optional (S,) arrays (n_s, 2) of token character offsets in the action; without
        them each step's tokens all get the step's value (A^E, plus GiGPO's step term).
      provenance: optional (S,) per-step provenance lists (see `credit.Step`).
      observations: optional (S,) observations (GiGPO's anchor states).
      calls, edits, line_calls: optional (S,) per-step tool-call spans, edit-argument spans and
        changed-line calls (see `credit.Step`; DiDPO's cover="call" / "edit").
      token_ids, logprobs: optional (S,) per-step sampled token ids and their sampling logprobs,
        one per response token of the step: checked against its tokens and handed to the
        estimator on its `credit.Step`s (an estimator function may use them; the built-in ones
        do not).
      rows: (S,) batch row of each step; default arange(S) (one row per step, S == B).
      token_spans: optional (S, 2) [start, end) token positions of each step in its row; default:
        the row's masked positions.
      return_result: also return the estimator's `credit.Result`.
      **options: passed to the estimator (e.g. mode, gamma, lambda_: they override a DiDPO
        preset's; for a config of your own, estimator=functools.partial(credit.didpo, config=...)).

    Returns:
      [B, L] advantages, zero outside the mask: float32 on the mask's device for a torch mask,
      float64 numpy otherwise; `(advantages, result)` with return_result=True.
    """
    mask = to_numpy(response_mask).astype(bool)
    if mask.ndim != 2:
        raise ValueError(f"response_mask must be [batch, seq], got shape {mask.shape}")
    per_step = {"actions": actions, "diffs": diffs, "token_offsets": token_offsets, "provenance": provenance,
                "observations": observations, "calls": calls, "edits": edits, "line_calls": line_calls,
                "token_ids": token_ids, "logprobs": logprobs}
    traj_codes, _ = group_codes(trajectory_ids)
    n = traj_codes.shape[0]
    for name, values in per_step.items():
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has length {len(values)}, expected one entry per step ({n})")
    groups = list(group_ids) if isinstance(group_ids, (list, tuple)) else to_numpy(group_ids).tolist()
    if len(groups) != n:
        raise ValueError(f"group_ids has length {len(groups)}, trajectory_ids has {n}")
    row = _rows(rows, n, mask.shape[0])
    positions, n_tokens = _positions(mask, row, token_spans, n)
    names = list(trajectory_ids) if isinstance(trajectory_ids, (list, tuple)) else to_numpy(trajectory_ids).tolist()
    trajectories, order = _trajectories(
        groups, traj_codes, names, as_vector(step_ids, "step_ids", n, np.int64), as_vector(rewards, "rewards", n),
        np.zeros(n) if step_rewards is None else as_vector(step_rewards, "step_rewards", n), per_step, n_tokens)
    res = (get(estimator) if isinstance(estimator, str) else estimator)(trajectories, **options)

    values = np.empty(int(n_tokens.sum()))
    starts = np.zeros(n, np.int64)
    np.cumsum(n_tokens[:-1], out=starts[1:])
    for result_row, (s, i, t) in enumerate(order):
        got = res.tokens[i][t]
        if got is None:
            got = res.episode[i] + res.steps.advantage[result_row]
        values[starts[s]:starts[s] + n_tokens[s]] = to_numpy(got, np.float64)
    out = np.zeros(mask.size)
    out[positions] = values
    out = out.reshape(mask.shape) * mask
    if is_torch(response_mask):
        import torch

        out = torch.as_tensor(out, dtype=torch.float32).to(response_mask.device)
    return (out, res) if return_result else out


def _rows(rows: Any, n: int, n_rows: int) -> np.ndarray:
    """The batch row of each step, checked."""
    if rows is None:
        if n != n_rows:
            raise ValueError(f"{n} steps but {n_rows} mask rows: pass `rows` (the batch row of each step)")
        return np.arange(n)
    row = as_vector(rows, "rows", n, np.int64)
    if ((row < 0) | (row >= n_rows)).any():
        raise ValueError(f"rows must index the {n_rows} rows of response_mask")
    return row


def _positions(mask: np.ndarray, row: np.ndarray, token_spans: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of every step's tokens (steps in input order) and the token count per step."""
    n_rows, seq = mask.shape
    if token_spans is None:
        if np.unique(row).shape[0] != n:
            raise ValueError("without token_spans each step needs its own row: pass token_spans for "
                             "rows that hold several steps")
        counts = mask.sum(axis=1)
        n_tokens = counts[row].astype(np.int64)
        flat = np.flatnonzero(mask)
        row_start = np.zeros(n_rows, np.int64)
        np.cumsum(counts[:-1], out=row_start[1:])
        return flat[ranges(row_start[row], row_start[row] + n_tokens)], n_tokens
    spans = to_numpy(token_spans, np.int64)
    if spans.shape != (n, 2):
        raise ValueError(f"token_spans must have shape ({n}, 2), got {spans.shape}")
    if (spans[:, 0] < 0).any() or (spans[:, 1] < spans[:, 0]).any() or (spans[:, 1] > seq).any():
        raise ValueError(f"token_spans must satisfy 0 <= start <= end <= seq ({seq})")
    n_tokens = spans[:, 1] - spans[:, 0]
    real = np.flatnonzero(n_tokens > 0)
    real = real[np.lexsort((spans[real, 0], row[real]))]
    clash = np.flatnonzero((row[real][1:] == row[real][:-1]) & (spans[real[1:], 0] < spans[real[:-1], 1]))
    if clash.shape[0]:  # two steps would write the same tokens: the later one's values would win silently
        a, b = int(real[clash[0]]), int(real[clash[0] + 1])
        raise ValueError(f"token_spans of steps {a} {spans[a].tolist()} and {b} {spans[b].tolist()} overlap in row "
                         f"{int(row[a])}: each token belongs to one step")
    return np.repeat(row * seq, n_tokens) + ranges(spans[:, 0], spans[:, 1]), n_tokens


def _trajectories(groups, traj_codes, names, step, outcome, step_reward, per_step, n_tokens):
    """credit.Trajectory objects from the flat arrays, and per result row its (step s, i, t);
    `names`: (S,) the caller's trajectory id of each step, for messages."""
    by_traj: dict[int, list[int]] = {}
    for s, code in enumerate(traj_codes.tolist()):
        by_traj.setdefault(code, []).append(s)
    trajectories, order = [], []
    for i, members in enumerate(by_traj.values()):
        members.sort(key=lambda s: step[s])
        ids = step[members]
        name = names[members[0]]
        if np.unique(ids).shape[0] != ids.shape[0]:
            raise ValueError(f"trajectory {name!r} has repeated step_ids {ids.tolist()}: give each of its steps "
                             "its own index")
        if np.ptp(outcome[members]) > 0 or len({groups[s] for s in members}) > 1:
            raise ValueError(f"trajectory {name!r}: rewards and group_ids must be the same on all its steps")
        steps = [_step(s, per_step, float(step_reward[s]), int(n_tokens[s])) for s in members]
        order.extend((s, i, t) for t, s in enumerate(members))
        trajectories.append(Trajectory(task_id=_task_id(groups[members[0]]), steps=tuple(steps),
                                       reward=float(outcome[members[0]])))
    return trajectories, order


def _step(s: int, per_step: dict[str, Any], reward: float, n_tokens: int) -> Step:
    def get_(name: str, default: Any = None) -> Any:
        values = per_step[name]
        return default if values is None else values[s]

    offsets = get_("token_offsets")
    for name in ("token_offsets", "token_ids", "logprobs"):
        values = get_(name)
        if values is not None and len(values) != n_tokens:
            raise ValueError(f"step {s}: {len(values)} {name} but {n_tokens} response tokens in its "
                             "row/span: they must be the same tokens")
    return Step(action=get_("actions", ""), diff=get_("diffs", ""), reward=reward, token_offsets=offsets,
                provenance=get_("provenance"), observation=get_("observations"), calls=get_("calls"),
                edits=get_("edits"), line_calls=get_("line_calls"), token_ids=get_("token_ids"),
                logprobs=get_("logprobs"))


def _task_id(gid: Any) -> Union[str, int]:
    return gid if isinstance(gid, (str, int)) and not isinstance(gid, bool) else str(gid)
