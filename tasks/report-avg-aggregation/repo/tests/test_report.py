import pytest

from reportgen import SpecError, build_report, parse_spec

DATA = """region,product,price,units
north,apple,1.20,10
north,pear,0.80,
south,apple,1.10,4
"""


def test_sum_and_max():
    assert build_report(DATA, "region; units:sum, price:max") == (
        "region | sum(units) | max(price)\n"
        "-------+------------+-----------\n"
        "north  | 10         | 1.20\n"
        "south  | 4          | 1.10\n"
    )


def test_count_skips_blanks():
    out = build_report(DATA, "; units:count, price:min")
    assert out.splitlines()[-1] == "2            | 0.80"


def test_spec_parsing():
    spec = parse_spec("region, product ; price:MAX")
    assert spec.group_by == ("region", "product")
    assert spec.metrics[0].function == "max"
    assert spec.metrics[0].label == "max(price)"
    with pytest.raises(SpecError):
        parse_spec("region; price:median")
