import pytest

from unitconv import IncompatibleUnits, UnknownUnit, convert, convert_text, parse_quantity


def test_length_and_mass():
    assert convert(5, "km", "m") == pytest.approx(5000)
    assert convert(1, "mi", "ft") == pytest.approx(5280)
    assert convert(2, "lb", "g") == pytest.approx(907.18474)


def test_errors():
    with pytest.raises(IncompatibleUnits):
        convert(1, "kg", "m")
    with pytest.raises(UnknownUnit):
        convert(1, "parsec", "m")


def test_parse_and_convert_text():
    assert parse_quantity(" 12.5kg ") == (12.5, "kg")
    assert convert_text("3 ft to cm") == "91.44 cm"
    assert convert_text("90 min to h") == "1.5 h"
