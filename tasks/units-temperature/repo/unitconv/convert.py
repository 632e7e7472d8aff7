"""Converting values between units."""
from __future__ import annotations

from .errors import IncompatibleUnits
from .registry import lookup


def convert(value: float, source: str, target: str) -> float:
    src, dst = lookup(source), lookup(target)
    if src.dimension != dst.dimension:
        raise IncompatibleUnits(source, target)
    if src is dst:
        return float(value)
    return value * src.factor / dst.factor
