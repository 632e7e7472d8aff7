"""Parsing quantities such as ``"12.5 kg"``."""
from __future__ import annotations

import re

from .errors import UnitError
from .registry import lookup

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)\s*$")


def parse_quantity(text: str) -> tuple[float, str]:
    m = _QUANTITY.match(text)
    if not m:
        raise UnitError(f"cannot parse quantity {text!r}")
    value, symbol = float(m.group(1)), m.group(2)
    lookup(symbol)  # raises UnknownUnit
    return value, symbol
