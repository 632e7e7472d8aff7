"""A text space that accepts real code: any Python str up to a maximum length.

Gymnasium's `spaces.Text` defaults to 62 alphanumeric characters and rejects spaces, newlines and
non-ASCII, so it cannot hold a prompt or a tool call."""
from __future__ import annotations

from typing import Any

from gymnasium import spaces

_SAMPLE_CHARSET = "abcdefghijklmnopqrstuvwxyz0123456789 _\n(){}[]:=.,'\"#"


class AnyText(spaces.Text):
    def __init__(self, max_length: int = 1_000_000, seed: int | None = None):
        super().__init__(max_length=max_length, min_length=0, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length
