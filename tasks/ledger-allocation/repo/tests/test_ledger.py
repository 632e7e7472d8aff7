from ledger import Ledger, Money, allocate


def test_transfer_moves_money():
    book = Ledger()
    book.open("cash", Money("100.00"))
    book.open("rent")
    book.transfer("cash", "rent", Money("40.00"), memo="May")
    assert book.balance("cash") == Money("60.00")
    assert book.balance("rent") == Money("40.00")
    assert book.total() == Money("100.00")


def test_allocate_by_ratio():
    shares = allocate(Money("100.00"), [1, 1, 1])
    assert shares == [Money("33.34"), Money("33.33"), Money("33.33")]
    assert allocate(Money("10.00"), [3, 1]) == [Money("7.50"), Money("2.50")]
