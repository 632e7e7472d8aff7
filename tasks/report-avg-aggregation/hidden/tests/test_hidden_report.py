import pytest

from reportgen import SpecError, build_report, parse_spec

DATA = """team,player,score,minutes
red,ann,10,30
red,bob,20,
red,cy,25,12
blue,dee,1,
blue,eve,2,
"""


def test_parse_spec_accepts_avg():
    spec = parse_spec("team; score:avg, score:sum")
    assert [m.function for m in spec.metrics] == ["avg", "sum"]
    assert spec.metrics[0].label == "avg(score)"


def test_avg_report():
    assert build_report(DATA, "team; score:avg") == (
        "team | avg(score)\n"
        "-----+-----------\n"
        "red  | 18.33\n"
        "blue | 1.50\n"
    )


def test_avg_skips_blank_cells_and_handles_empty_groups():
    out = build_report(DATA, "team; minutes:avg, minutes:count").splitlines()
    assert out[2] == "red  | 21.00        | 2"
    assert out[3] == "blue |              | 0"


def test_avg_rounds_half_up():
    data = "k,v\na,0.125\na,0.125\nb,1\nb,2\nb,2\n"
    out = build_report(data, "k; v:avg").splitlines()
    assert out[2] == "a | 0.13"
    assert out[3] == "b | 1.67"


def test_avg_over_whole_table():
    assert build_report(DATA, "; score:avg").splitlines()[-1] == "11.60"


def test_unknown_function_still_rejected():
    with pytest.raises(SpecError):
        parse_spec("team; score:median")
