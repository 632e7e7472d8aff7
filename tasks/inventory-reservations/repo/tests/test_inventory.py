from decimal import Decimal

import pytest

from stockroom import InsufficientStock, Inventory, Item, UnknownSku, stock_report


def make():
    inv = Inventory()
    inv.register(Item("TEA-01", "Green tea", Decimal("4.50")))
    inv.register(Item("CUP-02", "Mug", Decimal("7.00")))
    inv.receive("TEA-01", 20)
    inv.receive("CUP-02", 3)
    return inv


def test_receive_and_ship():
    inv = make()
    inv.ship("TEA-01", 5)
    assert inv.on_hand("TEA-01") == 15
    with pytest.raises(InsufficientStock):
        inv.ship("CUP-02", 4)
    assert inv.on_hand("CUP-02") == 3


def test_bad_input():
    inv = make()
    with pytest.raises(UnknownSku):
        inv.receive("NOPE", 1)
    with pytest.raises(ValueError):
        inv.ship("TEA-01", 0)


def test_report():
    assert stock_report(make()).splitlines() == [
        "SKU        NAME             ON HAND      VALUE",
        "CUP-02     Mug                    3      21.00",
        "TEA-01     Green tea             20      90.00",
        "TOTAL                                   111.00",
    ]
