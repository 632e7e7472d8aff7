from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    unit_price: Decimal

    def __post_init__(self) -> None:
        if not self.sku or self.sku != self.sku.strip():
            raise ValueError("SKU must be a non-empty string without surrounding spaces")
        if self.unit_price < 0:
            raise ValueError("unit price cannot be negative")
