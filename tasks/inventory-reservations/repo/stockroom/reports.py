"""Text reports over an Inventory."""
from __future__ import annotations

from decimal import Decimal

from .inventory import Inventory


def total_value(inv: Inventory) -> Decimal:
    return sum((inv.item(s).unit_price * inv.on_hand(s) for s in inv.skus()), Decimal("0.00"))


def stock_report(inv: Inventory) -> str:
    lines = [f"{'SKU':<10} {'NAME':<16} {'ON HAND':>7} {'VALUE':>10}"]
    for sku in inv.skus():
        item = inv.item(sku)
        qty = inv.on_hand(sku)
        lines.append(f"{sku:<10} {item.name:<16} {qty:>7} {item.unit_price * qty:>10.2f}")
    lines.append(f"{'TOTAL':<10} {'':<16} {'':>7} {total_value(inv):>10.2f}")
    return "\n".join(lines)
