"""Small array helpers shared by the estimator modules."""

from __future__ import annotations

import contextlib
import gc
import math
import numbers
from typing import Any, Iterator, Sequence

import numpy as np

from credit._tensor import to_numpy


def group_codes(ids: Any) -> tuple[np.ndarray, int]:
    """Dense int codes 0..G-1 for arbitrary hashable ids, numbered in order of first appearance."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "iub":
        uniq, first, codes = np.unique(ids, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        return rank[codes.reshape(-1)], len(uniq)
    seen: dict[Any, int] = {}
    codes = np.fromiter((seen.setdefault(i, len(seen)) for i in _items(ids)), np.int64)
    return codes, len(seen)


def _items(ids: Any) -> Sequence[Any]:
    arr = to_numpy(ids) if not isinstance(ids, (list, tuple)) else ids
    return arr.tolist() if isinstance(arr, np.ndarray) else arr


def option(name: str, value: Any, low: float | None = None, high: float | None = None, *,
           above: bool = False, integer: bool = False) -> Any:
    """A numeric option checked: a real number (an integer when `integer`; never a bool), finite,
    >= `low` (> `low` when `above`) and <= `high`; else a ValueError (TypeError for a wrong type)
    that names the option and what it takes. Returns it as float (int when `integer`)."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a number"
        raise TypeError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")
    value = int(value) if integer else float(value)
    bound = ("" if low is None else f" {'>' if above else '>='} {low:g}") + (
        "" if high is None else f"{' and' if low is not None else ''} <= {high:g}")
    if not math.isfinite(value) or (low is not None and (value <= low if above else value < low)) or (
            high is not None and value > high):
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return value


def as_vector(x: Any, name: str, n: int | None = None, dtype: Any = np.float64) -> np.ndarray:
    """`x` as a 1-D numpy array (of length `n` when given), or a clear error."""
    arr = to_numpy(x, dtype)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
    return arr


def segment_starts(lengths: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive segments with the given lengths."""
    starts = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def csr_pointers(sizes: np.ndarray) -> np.ndarray:
    """CSR pointers (len + 1,) of consecutive segments with the given sizes: 0, then the running sums."""
    ptr = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return ptr


def pieces(x: np.ndarray, bounds: list[int]) -> list[np.ndarray]:
    """Views x[bounds[k]:bounds[k + 1]] (np.split costs ten times more per piece)."""
    return [x[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def lexsort_ints(keys: Sequence[np.ndarray]) -> np.ndarray:
    """np.lexsort(keys) for integer keys (the last one primary, ties in index order), by one sort
    of int64 codes where the keys' ranges and the index fit in 63 bits: each code is the keys' and
    the index's bits side by side, so the codes are distinct and the sort needs no stability
    (numpy sorts int64 with its SIMD sort, ten times and more faster than lexsort's merges);
    else np.lexsort."""
    n = keys[0].shape[0] if len(keys) else 0
    if n < 2:
        return np.arange(n)
    bits = (n - 1).bit_length()
    shift, ranged = bits, []
    for k in keys:
        if k.dtype.kind not in "iub" or k.dtype.itemsize > 8 or k.dtype == np.uint64:
            return np.lexsort(keys)
        lo, hi = int(k.min()), int(k.max())
        width = (hi - lo).bit_length()
        ranged.append((k, lo, shift))
        shift += width
        if shift > 63:
            return np.lexsort(keys)
    code = np.arange(n, dtype=np.int64)
    for k, lo, at in ranged:
        part = k.astype(np.int64) - lo if lo else k.astype(np.int64, copy=False)
        code |= part << at if at else part
    code.sort()
    code &= (1 << bits) - 1
    return code


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, e) for each pair, without a Python loop."""
    lengths = np.maximum(ends - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    return np.arange(total) + np.repeat(starts - segment_starts(lengths), lengths)


def sorted_keys(keys: np.ndarray, bound: int) -> np.ndarray:
    """np.sort of non-negative int keys below `bound`; as uint32 (twice as fast to sort and to
    divide) when they fit, else int64."""
    out = keys.astype(np.uint32 if bound < 1 << 32 else np.int64)
    out.sort()
    return out


def unique_ints(keys: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True, return_counts=True) for non-negative ints below `bound`.

    Counts through a table of `bound` entries when that is not much larger than the input (no sort).
    """
    if bound > 4 * keys.shape[0] + (1 << 16):
        return np.unique(keys, return_inverse=True, return_counts=True)
    count = np.bincount(keys, minlength=bound)
    uniq = np.flatnonzero(count)
    code = np.zeros(bound, np.int64)
    code[uniq] = np.arange(uniq.shape[0])
    return uniq, code[keys], count[uniq]


def count_at_most(sorted_values: np.ndarray, queries: np.ndarray, bound: int) -> np.ndarray:
    """np.searchsorted(sorted_values, queries, side="right") for non-negative ints below `bound`.

    Reads a cumulative count table of `bound` entries when that is not much larger than the input
    (binary searches with scattered queries miss the cache).
    """
    if bound > 4 * (queries.shape[0] + sorted_values.shape[0]) + (1 << 16):
        return np.searchsorted(sorted_values, queries, side="right")
    return np.cumsum(np.bincount(sorted_values, minlength=bound))[queries]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, then back as it was.

    An estimator creates many short-lived lists (`tolist()` of its arrays) and no reference
    cycles; a collection during a call walks every young list item by item, and a full one walks
    the caller's whole batch (the 1.3M offset integers of the harness's paper batch: ~100 ms,
    measured). Reference counting still frees everything the call drops.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
