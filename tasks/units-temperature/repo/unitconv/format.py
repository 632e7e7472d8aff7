"""Formatting and the one-line ``convert_text`` helper."""
from __future__ import annotations

from .convert import convert
from .errors import UnitError
from .parse import parse_quantity


def format_quantity(value: float, symbol: str, digits: int = 2) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return f"{text} {symbol}"


def convert_text(query: str, digits: int = 2) -> str:
    """``"3 ft to cm"`` -> ``"91.44 cm"``."""
    left, sep, target = query.rpartition(" to ")
    if not sep:
        raise UnitError("expected '<quantity> to <unit>'")
    value, source = parse_quantity(left)
    target = target.strip()
    return format_quantity(convert(value, source, target), target, digits)
