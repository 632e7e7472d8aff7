"""Quantities on hand per SKU."""
from __future__ import annotations

from .errors import InsufficientStock, UnknownSku
from .models import Item


def _check_quantity(qty: int) -> None:
    if not isinstance(qty, int) or isinstance(qty, bool) or qty <= 0:
        raise ValueError(f"quantity must be a positive integer, got {qty!r}")


class Inventory:
    def __init__(self) -> None:
        self._items: dict[str, Item] = {}
        self._on_hand: dict[str, int] = {}

    def register(self, item: Item) -> None:
        if item.sku in self._items:
            raise ValueError(f"SKU {item.sku!r} already registered")
        self._items[item.sku] = item
        self._on_hand[item.sku] = 0

    def item(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise UnknownSku(sku) from None

    def skus(self) -> list[str]:
        return sorted(self._items)

    def on_hand(self, sku: str) -> int:
        self.item(sku)
        return self._on_hand[sku]

    def receive(self, sku: str, qty: int) -> None:
        self.item(sku)
        _check_quantity(qty)
        self._on_hand[sku] += qty

    def ship(self, sku: str, qty: int) -> None:
        self.item(sku)
        _check_quantity(qty)
        available = self._on_hand[sku]
        if qty > available:
            raise InsufficientStock(sku, qty, available)
        self._on_hand[sku] -= qty
