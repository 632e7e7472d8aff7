import pytest

from unitconv import IncompatibleUnits, UnknownUnit, convert, convert_text, parse_quantity, units_of


def test_celsius_fahrenheit():
    assert convert(100, "degC", "degF") == pytest.approx(212)
    assert convert(32, "degF", "degC") == pytest.approx(0, abs=1e-9)
    assert convert(-40, "degF", "degC") == pytest.approx(-40)


def test_kelvin():
    assert convert(0, "K", "degC") == pytest.approx(-273.15)
    assert convert(0, "degF", "K") == pytest.approx(255.3722222)
    assert convert(300, "K", "K") == 300


def test_temperature_dimension():
    assert units_of("temperature") == ["K", "degC", "degF"]
    with pytest.raises(IncompatibleUnits):
        convert(20, "degC", "m")


def test_text_interface():
    assert parse_quantity("25 degC") == (25.0, "degC")
    assert convert_text("25 degC to K") == "298.15 K"
    assert convert_text("98.6 degF to degC") == "37 degC"


def test_other_units_unaffected():
    assert convert(3, "h", "s") == pytest.approx(10800)
    with pytest.raises(UnknownUnit):
        convert(1, "degX", "K")
