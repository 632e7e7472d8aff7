"""A ledger of named accounts with transfers between them."""
from __future__ import annotations

from .account import Account
from .allocate import split
from .money import Money


class LedgerError(Exception):
    pass


class Ledger:
    def __init__(self) -> None:
        self._accounts: dict[str, Account] = {}

    def open(self, name: str, opening: Money | None = None) -> Account:
        if name in self._accounts:
            raise LedgerError(f"account {name!r} already exists")
        account = Account(name)
        if opening:
            account.post(opening, "opening balance")
        self._accounts[name] = account
        return account

    def account(self, name: str) -> Account:
        try:
            return self._accounts[name]
        except KeyError:
            raise LedgerError(f"no account {name!r}") from None

    def balance(self, name: str) -> Money:
        return self.account(name).balance

    def transfer(self, source: str, target: str, amount: Money, memo: str = "") -> None:
        if amount.amount <= 0:
            raise LedgerError("transfer amount must be positive")
        src, dst = self.account(source), self.account(target)
        src.post(-amount, memo)
        dst.post(amount, memo)

    def share_cost(self, payer: str, members: list[str], amount: Money, memo: str = "") -> None:
        """``payer`` pays ``amount``; every member owes an equal share of it."""
        for member, share in zip(members, split(amount, len(members))):
            if member != payer and share:
                self.transfer(member, payer, share, memo)

    def total(self) -> Money:
        result = Money(0)
        for account in self._accounts.values():
            result = result + account.balance
        return result
