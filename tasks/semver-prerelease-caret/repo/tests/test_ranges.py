from semverlib import Version, max_satisfying, satisfies


def test_comparator_sets():
    assert satisfies("1.5.0", ">=1.0.0 <2.0.0")
    assert not satisfies("2.0.0", ">=1.0.0 <2.0.0")
    assert satisfies("3.1.0", "<1.0.0 || >=3.0.0")


def test_tilde():
    assert satisfies("1.2.9", "~1.2.3")
    assert not satisfies("1.3.0", "~1.2.3")


def test_caret_on_stable_versions():
    assert satisfies("1.9.0", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
    assert max_satisfying(["1.2.0", "1.4.1", "2.0.1"], "^1.0.0") == Version.parse("1.4.1")
