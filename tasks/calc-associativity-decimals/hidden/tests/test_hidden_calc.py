from fractions import Fraction

import pytest

from calc import LexError, evaluate, tokenize


def test_subtraction_is_left_associative():
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("1 - 2 + 3") == 2


def test_division_is_left_associative():
    assert evaluate("100 / 10 / 2") == 5
    assert evaluate("8 / 4 * 2") == 4


def test_mixed_chain():
    assert evaluate("2 * 3 - 4 / 2 - 1 + 6 / 3 / 2") == 4


def test_decimal_numbers():
    assert evaluate("2.5 * 4") == 10
    assert evaluate("0.1 + 0.2") == Fraction(3, 10)
    assert tokenize("3.25")[0].value == Fraction(13, 4)


def test_malformed_decimals():
    for bad in ["1.2.3", "4.", "1 + .5"]:
        with pytest.raises(LexError):
            evaluate(bad)


def test_unary_minus_and_power_unchanged():
    assert evaluate("-(2 + 3) * 4") == -20
    assert evaluate("2 ^ -1") == Fraction(1, 2)
