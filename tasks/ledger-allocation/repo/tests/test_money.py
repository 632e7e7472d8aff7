from decimal import Decimal

import pytest

from ledger import Money


def test_arithmetic_keeps_cents():
    assert Money("1.10") + Money("2.20") == Money("3.30")
    assert Money("5.00") - Money("7.25") == Money("-2.25")
    assert Money("19.99") * 3 == Money("59.97")


def test_cents_round_trip():
    assert Money("12.34").cents == 1234
    assert Money.from_cents(-5) == Money("-0.05")


def test_rejects_floats_and_garbage():
    with pytest.raises(TypeError):
        Money(0.1)
    with pytest.raises(ValueError):
        Money("ten")


def test_rounds_to_cent():
    assert Money("2.999").amount == Decimal("3.00")
