"""Building hashable cache keys from call arguments."""
from __future__ import annotations

from typing import Any, Hashable


class _KwMark:
    """Separates positional from keyword arguments inside a key."""

    def __repr__(self) -> str:
        return "<kwargs>"


KW_MARK = _KwMark()


def make_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
    """Return a hashable key identifying one call."""
    key: tuple[Any, ...] = tuple(args)
    if len(key) == 1 and type(key[0]) in (int, str):
        return key[0]
    return key
