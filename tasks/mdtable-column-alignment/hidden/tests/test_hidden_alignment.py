import pytest

from mdtable import Table, render


def test_three_alignments():
    t = Table(["item", "price", "tag"], [["tea", 4, "hot"], ["lemonade", 12, "cold"]],
              align=["left", "right", "center"])
    assert render(t) == (
        "| item     | price | tag  |\n"
        "| :------- | ----: | :--: |\n"
        "| tea      |     4 | hot  |\n"
        "| lemonade |    12 | cold |\n"
    )


def test_center_puts_odd_space_on_the_right():
    t = Table(["heading"], [["ab"], ["abc"]], align=["center"])
    lines = render(t).splitlines()
    assert lines[1] == "| :-----: |"
    assert lines[2] == "|   ab    |"
    assert lines[3] == "|   abc   |"


def test_none_means_no_marker():
    t = Table(["a", "b"], [["x", "y"]], align=[None, "right"])
    assert render(t) == (
        "| a   |   b |\n"
        "| --- | --: |\n"
        "| x   |   y |\n"
    )


def test_default_alignment_unchanged():
    t = Table(["a", "b"], [["x", "y"]])
    assert render(t).splitlines()[1] == "| --- | --- |"


def test_narrow_columns_keep_minimum_width():
    t = Table(["n"], [[1]], align=["center"])
    assert render(t) == "|  n  |\n| :-: |\n|  1  |\n"


def test_invalid_alignment_rejected():
    with pytest.raises(ValueError):
        Table(["a", "b"], [], align=["left"])
    with pytest.raises(ValueError):
        Table(["a"], [], align=["middle"])
