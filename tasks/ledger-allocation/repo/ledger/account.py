"""Accounts and the entries posted to them."""
from __future__ import annotations

from dataclasses import dataclass, field

from .money import Money


@dataclass(frozen=True)
class Entry:
    amount: Money  # positive = credit to this account, negative = debit
    memo: str = ""


@dataclass
class Account:
    name: str
    entries: list[Entry] = field(default_factory=list)

    def post(self, amount: Money, memo: str = "") -> None:
        self.entries.append(Entry(amount, memo))

    @property
    def balance(self) -> Money:
        total = Money(0)
        for entry in self.entries:
            total = total + entry.amount
        return total
