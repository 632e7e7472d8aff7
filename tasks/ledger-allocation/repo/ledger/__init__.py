"""Small bookkeeping helpers built on Decimal."""
from .money import Money
from .allocate import allocate, split
from .account import Account
from .ledger import Ledger, LedgerError

__all__ = ["Money", "allocate", "split", "Account", "Ledger", "LedgerError"]
