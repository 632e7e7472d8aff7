"""Token offsets: the full check, the cheap check of list offsets, and reading list offsets only
where character spans need them.

A batch of plain dicts carries its offsets as Python lists of pairs: 1.3M integers at the shared
harness's paper shape, which cost 25-70 ms to read into numpy however it is done (docs/benchmarks.md).
Most tokens need only their count (they get A^E alone), so list offsets are checked cheaply when
a batch arrives (`check_listed_offsets`: their first and last pairs) and read where a span of an
anchor occurrence falls (`token_windows`: a binary search per span in the list, then the tokens
between, checked in full).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import chain
from typing import Any, Optional, Sequence

import numpy as np

from credit._tensor import is_torch, to_numpy
from credit._util import lexsort_ints

# spans of one step closer than this (in characters) are read as one window: a binary search in
# a list costs about as much as reading 40 tokens
_JOIN_GAP = 128
_PAIR_TYPES = (tuple, list)  # a pair as Python and JSON give it
# zero-width or overlapping tokens walked past at a window's edge before the whole step is read
_MAX_WALK = 8


class OffsetsError(ValueError):
    """Bad token offsets of step `step` (an index into the steps given to `token_windows`)."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step


def checked_offsets(offsets: Any, action: str) -> Any:
    """`offsets` checked in full against `action` (see `credit.Step.token_offsets`): a numpy array
    or tensor is kept (numpy as int64), anything else becomes an (n, 2) int64 array."""
    if type(offsets) is np.ndarray and offsets.dtype == np.int64 and _plainly_ordered(offsets, len(action)):
        return offsets
    if isinstance(offsets, np.ndarray) or is_torch(offsets):
        kept = offsets
    else:
        try:
            kept = np.asarray(offsets if len(offsets) else np.zeros((0, 2)), dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"token_offsets must be (start, end) pairs of integers, one per token ({err})") from None
    arr = to_numpy(kept)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"token_offsets must have shape (n_tokens, 2) of (start, end) character spans, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"token_offsets must be integers, got dtype {arr.dtype}")
    starts, ends = arr[:, 0], arr[:, 1]
    if (starts < 0).any() or (ends < starts).any():
        k = int(np.flatnonzero((starts < 0) | (ends < starts))[0])
        raise ValueError(f"token_offsets[{k}] = {arr[k].tolist()} is not a (start, end) span with 0 <= start <= end")
    if arr.size and ends.max() > len(action):
        raise ValueError(
            f"token_offsets reach character {int(ends.max())} but the action has {len(action)} characters: "
            "offsets must index the action string of this step")
    real = np.flatnonzero(ends > starts)
    back = np.flatnonzero((np.diff(starts[real]) < 0) | (np.diff(ends[real]) < 0))
    if back.size:
        k = int(real[back[0] + 1])
        raise ValueError(
            f"token_offsets are not monotonic: token {k} {arr[k].tolist()} comes before the preceding token "
            f"{arr[real[back[0]]].tolist()}; pass the tokens' offset mapping in order (zero-width (0, 0) "
            "entries for special tokens are allowed anywhere)")
    if isinstance(kept, np.ndarray) and kept.dtype != np.int64:
        kept = kept.astype(np.int64)
    return kept


def _plainly_ordered(arr: np.ndarray, length: int) -> bool:
    """Whether an int64 array passes every rule of `checked_offsets` the usual way, checked in
    four numpy calls (the full checks take a dozen, ~28 us a step): shape (n, 2), n > 0, every
    token of positive width, starts and ends non-decreasing, the first start >= 0 and the last end
    <= length (so every token lies inside the action). False sends it to the full checks."""
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != 2:
        return False
    starts, ends = arr[:, 0], arr[:, 1]
    return bool(starts[0] >= 0 and ends[-1] <= length and (ends > starts).all()
                and (starts[1:] >= starts[:-1]).all() and (ends[1:] >= ends[:-1]).all())


def check_listed_offsets(offsets: Sequence[Any], action: str) -> None:
    """The checks of list offsets that need no pass over them: the first and the last entry are
    (start, end) integer pairs inside `action`, in order. The entries between are checked where
    `token_windows` reads them; a wrong one elsewhere is only counted."""
    if not offsets:
        return
    first, last = offsets[0], offsets[-1]
    if type(first) in _PAIR_TYPES and type(last) in _PAIR_TYPES and len(first) == 2 == len(last):  # the usual case
        (s0, e0), (s1, e1) = first, last
        if (type(s0) is int is type(e0) is type(s1) is type(e1) and 0 <= s0 <= e0 and 0 <= s1 <= e1
                and e1 <= len(action) and e0 <= len(action) and not (e0 > s0 and e1 > s1 and (s1 < s0 or e1 < e0))):
            return
    for k, pair in ((0, first), (len(offsets) - 1, last)):
        plain = type(pair) in (list, tuple) and len(pair) == 2 and type(pair[0]) is int and type(pair[1]) is int
        if not plain and not _is_pair(pair):
            raise ValueError(f"token_offsets[{k}] = {pair!r}: token_offsets must be (start, end) pairs of "
                             "integers, one per token, shape (n_tokens, 2)")
        start, end = pair
        if not 0 <= start <= end:
            raise ValueError(f"token_offsets[{k}] = {list(pair)} is not a (start, end) span with 0 <= start <= end")
        if end > len(action):
            raise ValueError(f"token_offsets reach character {end} but the action has {len(action)} characters: "
                             "offsets must index the action string of this step")
    (s0, e0), (s1, e1) = first, last
    if e0 > s0 and e1 > s1 and (s1 < s0 or e1 < e0):
        raise ValueError(f"token_offsets are not monotonic: the last token {list(last)} comes before the first "
                         f"{list(first)}; pass the tokens' offset mapping in order")


def _is_pair(pair: Any) -> bool:
    """A (start, end) pair of integers that is not plain ints in a list or tuple (numpy ints)."""
    return (isinstance(pair, (list, tuple, np.ndarray)) and len(pair) == 2
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in pair))


def token_windows(offsets: Sequence[Any], actions: Sequence[str], spans: np.ndarray,
                  span_step: np.ndarray) -> list[tuple[Optional[np.ndarray], np.ndarray]]:
    """Per step, the tokens that its spans can overlap: (index, pairs), `pairs` (m, 2) int64 the
    offsets of the tokens numbered `index` (m,), in order; index None: all the step's tokens.

    Steps whose offsets are arrays are given whole. List offsets are read in windows: per span
    [a, b) (spans of a step closer than a few characters joined), the tokens from the last real
    token ending at or before a to the first starting at or after b, found by binary search in
    the list and checked where found (zero-width tokens, allowed anywhere, can mislead a search);
    the windows' tokens are then read at once and checked in full (`checked_offsets`' rules). A
    step whose windows fail a check is read and checked whole, which raises `OffsetsError` for
    bad offsets.

    Args:
      offsets: (S,) per step its token offsets: an int64 array (checked) or a list of pairs
        (`check_listed_offsets` passed).
      actions: (S,) the steps' action texts.
      spans: (m, 2) character spans, each in its own step's coordinates.
      span_step: (m,) step of each span.
    """
    out: list[Any] = [None] * len(offsets)
    listed = []
    for s, step_offsets in enumerate(offsets):
        if isinstance(step_offsets, (list, tuple)):
            listed.append(s)
        else:
            out[s] = (None, to_numpy(step_offsets, np.int64).reshape(-1, 2))
    if not listed:
        return out
    windows: dict[int, list[tuple[int, int]]] = {}
    for s, joined in zip(listed, _joined(spans, span_step, listed)):
        found = _windows(offsets[s], joined)
        if found is None:
            out[s] = (None, _read_whole(offsets[s], actions[s], s))
        else:
            windows[s] = found
    _read_windows(offsets, actions, windows, out)
    return out


def flat_token_windows(offsets: Sequence[Any], actions: Sequence[str], spans: np.ndarray,
                       span_step: np.ndarray) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """`token_windows`' tokens one step after another: (pairs (T, 2) int64, n_read (S,) the count of
    each step's, index (T,) each token's number in its step; None: every step read whole)."""
    windows = token_windows(offsets, actions, spans, span_step)
    n_read = np.fromiter((w[1].shape[0] for w in windows), np.int64, len(windows))
    pairs = np.concatenate([w[1] for w in windows]).reshape(-1, 2) if windows else np.zeros((0, 2), np.int64)
    if not any(w[0] is not None for w in windows):
        return pairs, n_read, None
    index = np.concatenate([np.arange(n) if w[0] is None else w[0] for w, n in zip(windows, n_read.tolist())])
    return pairs, n_read, index


def _joined(spans: np.ndarray, span_step: np.ndarray, steps: Sequence[int]) -> list[list[tuple[int, int]]]:
    """Per step of `steps`, its spans sorted and joined where they overlap or nearly touch."""
    out: dict[int, list[tuple[int, int]]] = {s: [] for s in steps}
    for s, a, b in zip(*(x.tolist() for x in _joined_spans(spans, span_step))):
        if s in out:
            out[s].append((a, b))
    return [out[s] for s in steps]


def _joined_spans(spans: np.ndarray, span_step: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spans sorted by (step, start) and joined where they overlap or nearly touch: (step,
    start, end) of each joined span."""
    if not span_step.shape[0]:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = lexsort_ints((spans[:, 0], span_step))
    step, starts = span_step[order], spans[order, 0]
    ends = spans[order, 1]
    new = np.ones(step.shape[0], bool)
    new[1:] = step[1:] != step[:-1]
    # running max of the ends within each step: ends offset by the step so that no step's reach
    # passes into the next
    shift = (int(ends.max(initial=0)) + 1) * step
    reach = np.maximum.accumulate(ends + shift) - shift
    new[1:] |= starts[1:] > reach[:-1] + _JOIN_GAP
    first = np.flatnonzero(new)
    last = np.append(first[1:], step.shape[0]) - 1
    return step[first], starts[first], reach[last]


def _windows(offsets: Sequence[Any], spans: list[tuple[int, int]]) -> Optional[list[tuple[int, int]]]:
    """Token ranges [i, j) of the list `offsets` that hold every real token overlapping each span,
    merged; None when a search cannot be confirmed where it lands (read the step whole)."""
    n = len(offsets)
    if n == 0:
        return []
    probe = type(offsets[0])
    if probe not in (list, tuple):
        return None
    out: list[tuple[int, int]] = []
    try:
        for a, b in spans:
            i = bisect_left(offsets, probe((a,)))  # first token starting at or after a, if sorted
            walked = 0
            while i > 0:  # back past tokens that end after a, to a real one that does not
                start, end = offsets[i - 1]
                if end > start and end <= a:
                    break
                i, walked = i - 1, walked + 1
                if walked > _MAX_WALK:
                    return None
            j = bisect_left(offsets, probe((b,)), i)  # first token starting at or after b, if sorted
            walked = 0
            while j < n:  # on past zero-width tokens, to a real one
                start, end = offsets[j]
                if end > start:
                    if start < b:
                        return None
                    break
                j, walked = j + 1, walked + 1
                if walked > _MAX_WALK:
                    return None
            if out and i < out[-1][0]:  # out of order: the list is not sorted where searched
                return None
            if out and i <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], j))
            else:
                out.append((i, j))
    except (TypeError, ValueError):  # an entry that is no pair, or an uncomparable one
        return None
    return out


def _read_windows(offsets, actions, windows: dict[int, list[tuple[int, int]]], out: list) -> None:
    """Read every window of every step in one pass and check them all at once (each step whose
    tokens fail is read whole instead). Where some window holds what is not a pair of ints, every
    step is read whole, in order: so a step reports bad offsets outside its windows."""
    if not windows:
        return
    steps = list(windows)
    lo = np.array([w[0] for s in steps for w in windows[s]], np.int64)
    hi = np.array([w[1] for s in steps for w in windows[s]], np.int64)
    n_windows = np.fromiter((len(windows[s]) for s in steps), np.int64, len(steps))
    pieces = (offsets[s][i:j] for s in steps for i, j in windows[s])
    try:
        flat = np.fromiter(chain.from_iterable(chain.from_iterable(pieces)), np.int64)
    except (TypeError, ValueError, OverflowError):
        flat = None
    size = hi - lo
    n_read = np.bincount(np.repeat(np.arange(len(steps)), n_windows), weights=size,
                         minlength=len(steps)).astype(np.int64)
    if flat is None or flat.shape[0] != 2 * size.sum():
        for s in sorted(steps):
            out[s] = (None, _read_whole(offsets[s], actions[s], s))
        return
    pairs = flat.reshape(-1, 2)
    index = np.arange(pairs.shape[0]) + np.repeat(lo - (np.cumsum(size) - size), size)
    bounds = np.concatenate([[0], np.cumsum(n_read)])
    bad = _bad_steps(pairs, bounds, np.fromiter((len(actions[s]) for s in steps), np.int64, len(steps)))
    for k, s in enumerate(steps):
        a, b = int(bounds[k]), int(bounds[k + 1])
        out[s] = (None, _read_whole(offsets[s], actions[s], s)) if bad[k] else (index[a:b], pairs[a:b])


def _bad_steps(pairs: np.ndarray, bounds: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per step (its tokens pairs[bounds[k]:bounds[k + 1]]), whether they break a rule of
    `checked_offsets`, for all steps at once."""
    step = np.repeat(np.arange(length.shape[0]), np.diff(bounds))
    starts, ends = pairs[:, 0], pairs[:, 1]
    wrong = (starts < 0) | (ends < starts) | (ends > length[step])
    at = np.flatnonzero(ends > starts)
    s, e, k = starts[at], ends[at], step[at]
    wrong[at[1:]] |= ((s[1:] < s[:-1]) | (e[1:] < e[:-1])) & (k[1:] == k[:-1])
    return np.bincount(step[wrong], minlength=length.shape[0]) > 0


def _read_whole(offsets: Sequence[Any], action: str, step: int) -> np.ndarray:
    try:
        return checked_offsets(offsets, action)
    except ValueError as err:
        raise OffsetsError(step, str(err)) from None
