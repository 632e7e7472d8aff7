from decimal import Decimal

import pytest

from stockroom import InsufficientStock, Inventory, Item, UnknownSku, stock_report


def make():
    inv = Inventory()
    inv.register(Item("TEA-01", "Green tea", Decimal("4.50")))
    inv.register(Item("CUP-02", "Mug", Decimal("7.00")))
    inv.receive("TEA-01", 10)
    inv.receive("CUP-02", 3)
    return inv


def test_reserve_reduces_available_only():
    inv = make()
    inv.reserve("order-1", "TEA-01", 4)
    assert inv.on_hand("TEA-01") == 10
    assert inv.reserved("TEA-01") == 4
    assert inv.available("TEA-01") == 6
    assert inv.available("CUP-02") == 3


def test_cannot_reserve_more_than_available():
    inv = make()
    inv.reserve("order-1", "TEA-01", 8)
    with pytest.raises(InsufficientStock):
        inv.reserve("order-2", "TEA-01", 3)
    assert inv.available("TEA-01") == 2
    with pytest.raises(UnknownSku):
        inv.reserve("order-3", "NOPE", 1)
    with pytest.raises(ValueError):
        inv.reserve("order-1", "CUP-02", 1)  # order ids are unique


def test_ship_cannot_take_reserved_units():
    inv = make()
    inv.reserve("order-1", "TEA-01", 8)
    with pytest.raises(InsufficientStock):
        inv.ship("TEA-01", 3)
    inv.ship("TEA-01", 2)
    assert inv.on_hand("TEA-01") == 8
    assert inv.available("TEA-01") == 0


def test_fulfill_and_release():
    inv = make()
    inv.reserve("order-1", "TEA-01", 4)
    inv.reserve("order-2", "TEA-01", 5)
    inv.fulfill("order-1")
    assert (inv.on_hand("TEA-01"), inv.reserved("TEA-01"), inv.available("TEA-01")) == (6, 5, 1)
    inv.release("order-2")
    assert (inv.on_hand("TEA-01"), inv.reserved("TEA-01"), inv.available("TEA-01")) == (6, 0, 6)
    with pytest.raises(KeyError):
        inv.release("order-2")
    with pytest.raises(KeyError):
        inv.fulfill("order-1")


def test_report_shows_reserved_column():
    inv = make()
    inv.reserve("order-1", "CUP-02", 2)
    assert stock_report(inv).splitlines() == [
        "SKU        NAME             ON HAND RESERVED      VALUE",
        "CUP-02     Mug                    3        2      21.00",
        "TEA-01     Green tea             10        0      45.00",
        "TOTAL" + " " * 45 + "66.00",
    ]


def test_report_without_reservations_keeps_old_layout():
    inv = make()
    inv.reserve("order-1", "CUP-02", 2)
    inv.release("order-1")
    assert stock_report(inv).splitlines()[0] == "SKU        NAME             ON HAND      VALUE"


def test_plain_shipping_unchanged():
    inv = make()
    inv.ship("CUP-02", 3)
    assert inv.on_hand("CUP-02") == 0
