from fractions import Fraction

import pytest

from calc import CalcError, LexError, ParseError, evaluate


def test_precedence():
    assert evaluate("1 + 2 * 3") == 7
    assert evaluate("(1 + 2) * 3") == 9
    assert evaluate("-2 ^ 2") == -4


def test_exact_division():
    assert evaluate("(1 + 2) / 4") == Fraction(3, 4)


def test_power_is_right_associative():
    assert evaluate("2 ^ 3 ^ 2") == 512


def test_errors():
    with pytest.raises(CalcError):
        evaluate("1 / (2 - 2)")
    with pytest.raises(ParseError):
        evaluate("(1 + 2")
    with pytest.raises(LexError):
        evaluate("2 $ 3")
