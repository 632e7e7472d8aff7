"""Dividing an amount of money into shares."""
from __future__ import annotations

from typing import Sequence

from .money import Money


def allocate(total: Money, ratios: Sequence[int]) -> list[Money]:
    """Divide ``total`` proportionally to integer ``ratios``.

    The shares always add up to ``total``: every share is first rounded down
    to the cent, then the leftover cents are handed out one at a time to the
    first shares.
    """
    if not ratios or any(r < 0 for r in ratios) or sum(ratios) == 0:
        raise ValueError("ratios must be non-negative and not all zero")
    weight = sum(ratios)
    cents = total.cents
    shares = [cents * r // weight for r in ratios]
    leftover = cents - sum(shares)
    for i in range(leftover):
        shares[i % len(shares)] += 1
    return [Money.from_cents(c) for c in shares]


def split(total: Money, parts: int) -> list[Money]:
    """Divide ``total`` into ``parts`` equal shares."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    share = Money(total.amount / parts)
    return [share for _ in range(parts)]
