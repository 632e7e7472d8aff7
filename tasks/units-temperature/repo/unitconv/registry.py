"""The table of known units."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownUnit


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    factor: float  # size of one unit expressed in the dimension's base unit

    def to_base(self, value: float) -> float:
        return value * self.factor

    def from_base(self, value: float) -> float:
        return value / self.factor


_UNITS = [
    Unit("m", "length", 1.0),
    Unit("km", "length", 1000.0),
    Unit("cm", "length", 0.01),
    Unit("mm", "length", 0.001),
    Unit("in", "length", 0.0254),
    Unit("ft", "length", 0.3048),
    Unit("mi", "length", 1609.344),
    Unit("kg", "mass", 1.0),
    Unit("g", "mass", 0.001),
    Unit("lb", "mass", 0.45359237),
    Unit("s", "time", 1.0),
    Unit("min", "time", 60.0),
    Unit("h", "time", 3600.0),
]
UNITS: dict[str, Unit] = {u.symbol: u for u in _UNITS}


def lookup(symbol: str) -> Unit:
    try:
        return UNITS[symbol]
    except KeyError:
        raise UnknownUnit(symbol) from None


def units_of(dimension: str) -> list[str]:
    return sorted(u.symbol for u in _UNITS if u.dimension == dimension)
