"""Resolving dotted paths against the render context."""
from __future__ import annotations

from typing import Any, Mapping


def resolve(context: Mapping[str, Any], path: str) -> Any:
    """Look up ``a.b.c``; missing parts give None."""
    value: Any = context
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(part)
        else:
            value = getattr(value, part, None)
        if value is None:
            return None
    return value
