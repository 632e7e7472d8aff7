"""Small array helpers shared by the estimator modules."""

from __future__ import annotations

from typing import Any, Sequence

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


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, e) for each pair, without a Python loop."""
    lengths = np.maximum(ends - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    seg = np.repeat(np.arange(len(lengths)), lengths)
    return np.arange(total) - np.repeat(segment_starts(lengths), lengths) + starts[seg]
