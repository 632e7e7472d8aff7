"""Money values with a fixed precision of one cent."""
from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

CENT = Decimal("0.01")


def to_cents(value: Decimal) -> Decimal:
    """Round a Decimal to a whole number of cents."""
    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)


class Money:
    """An amount of money, always rounded to the cent."""

    __slots__ = ("amount",)

    def __init__(self, amount: "str | int | Decimal | Money" = 0):
        if isinstance(amount, Money):
            amount = amount.amount
        if isinstance(amount, float):
            raise TypeError("Money does not accept floats; use a str or Decimal")
        try:
            value = Decimal(amount)
        except (InvalidOperation, TypeError, ValueError):
            raise ValueError(f"not a money amount: {amount!r}") from None
        if not value.is_finite():
            raise ValueError(f"not a money amount: {amount!r}")
        self.amount = to_cents(value)

    @classmethod
    def from_cents(cls, cents: int) -> "Money":
        return cls(Decimal(cents).scaleb(-2))

    @property
    def cents(self) -> int:
        return int(self.amount.scaleb(2))

    def __add__(self, other: "Money") -> "Money":
        if not isinstance(other, Money):
            return NotImplemented
        return Money(self.amount + other.amount)

    def __sub__(self, other: "Money") -> "Money":
        if not isinstance(other, Money):
            return NotImplemented
        return Money(self.amount - other.amount)

    def __neg__(self) -> "Money":
        return Money(-self.amount)

    def __mul__(self, factor: "int | Decimal") -> "Money":
        if isinstance(factor, (Money, float)) or not isinstance(factor, (int, Decimal)):
            return NotImplemented
        return Money(self.amount * factor)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        return self.amount == other.amount

    def __lt__(self, other: "Money") -> bool:
        return self.amount < other.amount

    def __le__(self, other: "Money") -> bool:
        return self.amount <= other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __bool__(self) -> bool:
        return bool(self.amount)

    def __repr__(self) -> str:
        return f"Money('{self.amount}')"

    def __str__(self) -> str:
        return f"{self.amount}"
