import pytest

from semverlib import InvalidVersion, Version, bump


def test_parse_and_str():
    v = Version.parse("1.2.3-beta.1+exp.sha.5114f85")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert v.prerelease == ("beta", "1")
    assert str(v) == "1.2.3-beta.1+exp.sha.5114f85"


def test_invalid_versions():
    for bad in ["1.2", "01.2.3", "1.2.3-01", "1.2.3-", "a.b.c"]:
        with pytest.raises(InvalidVersion):
            Version.parse(bad)


def test_numeric_ordering_of_release_parts():
    assert Version.parse("1.10.0") > Version.parse("1.9.9")
    assert Version.parse("2.0.0") > Version.parse("1.99.99")


def test_bump():
    assert str(bump(Version.parse("1.2.3"), "minor")) == "1.3.0"
    assert str(bump(Version.parse("1.2.3-rc.1"), "patch")) == "1.2.3"
