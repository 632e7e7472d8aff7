import pytest

from mdtable import Table, render


def test_basic_table():
    t = Table(["name", "qty"], [["apple", 3], ["kiwi", 12]])
    assert render(t) == (
        "| name  | qty |\n"
        "| ----- | --- |\n"
        "| apple | 3   |\n"
        "| kiwi  | 12  |\n"
    )


def test_escaping_and_none():
    t = Table(["a|b", "note"], [[None, "x\ny"]])
    assert render(t) == (
        "| a\\|b | note   |\n"
        "| ---- | ------ |\n"
        "|      | x<br>y |\n"
    )


def test_row_length_checked():
    with pytest.raises(ValueError):
        Table(["a", "b"], [[1]])
