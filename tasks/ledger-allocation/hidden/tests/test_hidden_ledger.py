from decimal import Decimal

from ledger import Ledger, Money, split


def test_split_shares_add_up_to_total():
    shares = split(Money("10.00"), 3)
    assert shares == [Money("3.34"), Money("3.33"), Money("3.33")]
    assert sum((s for s in shares), Money(0)) == Money("10.00")


def test_split_tiny_amount():
    assert split(Money("0.02"), 3) == [Money("0.01"), Money("0.01"), Money("0")]


def test_split_even_amount():
    assert split(Money("9.00"), 3) == [Money("3.00")] * 3


def test_half_cent_rounds_up():
    assert Money("0.125").amount == Decimal("0.13")
    assert Money("2.665").amount == Decimal("2.67")
    assert Money("-0.125").amount == Decimal("-0.13")


def test_multiplication_rounds_half_up():
    assert Money("0.25") * Decimal("0.5") == Money("0.13")


def test_share_cost_balances():
    book = Ledger()
    for name in ("ann", "bob", "cy"):
        book.open(name)
    book.share_cost("ann", ["ann", "bob", "cy"], Money("100.00"), memo="dinner")
    assert book.balance("bob") == Money("-33.33")
    assert book.balance("cy") == Money("-33.33")
    assert book.balance("ann") == Money("66.66")
    assert book.total() == Money("0")
