"""A text space that accepts real code: any Python str up to a maximum length.

Gymnasium's `spaces.Text` defaults to 62 alphanumeric characters and rejects spaces, newlines and
non-ASCII, so it cannot hold a prompt or a tool call. Gymnasium also flattens a Text into indices
of its charset, which is how `AsyncVectorEnv` (shared memory, its default) and the flatten
wrappers carry it: for `AnyText` a flat value is the string's code points instead, padded with -1,
so any str survives the trip.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector.utils.shared_memory import read_from_shared_memory

_SAMPLE_CHARSET = "abcdefghijklmnopqrstuvwxyz0123456789 _\n(){}[]:=.,'\"#"
_PAD = -1
_CODEC = "utf-32-le"


class AnyText(spaces.Text):
    def __init__(self, max_length: int = 1_000_000, seed: int | None = None):
        super().__init__(max_length=max_length, min_length=0, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length


def code_points(space: AnyText, text: str) -> np.ndarray:
    """(max_length,) int32: the code points of `text`, then -1 (lone surrogates kept)."""
    if len(text) > space.max_length:
        raise ValueError(f"a text of {len(text)} characters does not fit {space!r}")
    out = np.full(space.max_length, _PAD, np.int32)
    out[:len(text)] = np.frombuffer(text.encode(_CODEC, "surrogatepass"), np.uint32)
    return out


def from_code_points(values: np.ndarray) -> str:
    """The inverse of `code_points`: the text before the first -1."""
    values = np.asarray(values, np.int32)
    pads = np.flatnonzero(values < 0)
    body = values[: pads[0]] if pads.size else values
    return body.astype(np.uint32).tobytes().decode(_CODEC, "surrogatepass")


@flatten.register(AnyText)
def _flatten_any_text(space: AnyText, x: str) -> np.ndarray:
    return code_points(space, x)


@unflatten.register(AnyText)
def _unflatten_any_text(space: AnyText, x: np.ndarray) -> str:
    return from_code_points(x)


@flatten_space.register(AnyText)
def _flatten_space_any_text(space: AnyText) -> spaces.Box:
    return spaces.Box(low=_PAD, high=0x10FFFF, shape=(space.max_length,), dtype=np.int32)


class SharedTexts(Sequence):
    """The texts of a vector env's shared observation buffer, decoded when read.

    `AsyncVectorEnv` reads its shared memory once, at construction, and relies on the result being
    a view that the workers' writes show through (true of numpy arrays). Gymnasium's own Text
    reader returns decoded strings instead, so a Text observation would never change; this view
    decodes the current contents at each access, and a deep copy (what the vector env returns
    with its default `copy=True`) is a plain tuple of str."""

    def __init__(self, data: np.ndarray):
        self._data = data  # (n, max_length) int32 over the shared buffer

    def __len__(self) -> int:
        return self._data.shape[0]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        return from_code_points(self._data[index])

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (tuple, SharedTexts)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(AnyText)
def _read_any_text_from_shared_memory(space: AnyText, shared_memory: Any, n: int = 1) -> SharedTexts:
    # gymnasium writes a Text with `flatten` (registered above), so reading is its inverse
    return SharedTexts(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length)))
