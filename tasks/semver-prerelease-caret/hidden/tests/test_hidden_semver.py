from semverlib import Version, max_satisfying, satisfies

V = Version.parse


def test_prerelease_sorts_before_release():
    assert V("1.0.0-alpha") < V("1.0.0")
    assert V("1.0.0") > V("1.0.0-rc.1")
    assert V("0.9.9") < V("1.0.0-alpha")


def test_numeric_identifiers_compare_numerically():
    assert V("1.0.0-alpha.2") < V("1.0.0-alpha.10")
    assert V("1.0.0-1") < V("1.0.0-alpha")
    assert V("1.0.0-alpha") < V("1.0.0-alpha.1")


def test_spec_example_order():
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
               "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]
    shuffled = [ordered[i] for i in (7, 3, 0, 5, 1, 6, 4, 2)]
    assert [str(v) for v in sorted(V(s) for s in shuffled)] == ordered


def test_build_metadata_ignored():
    assert V("1.0.0+build.1") == V("1.0.0+build.2")
    assert not (V("1.0.0+a") < V("1.0.0+b"))


def test_caret_zero_major():
    assert satisfies("0.2.3", "^0.2.3")
    assert satisfies("0.2.9", "^0.2.3")
    assert not satisfies("0.3.0", "^0.2.3")
    assert not satisfies("1.0.0", "^0.2.3")


def test_caret_zero_minor():
    assert satisfies("0.0.3", "^0.0.3")
    assert not satisfies("0.0.4", "^0.0.3")
    assert max_satisfying(["0.0.3", "0.0.4", "0.1.0"], "^0.0.3") == V("0.0.3")


def test_caret_stable_unchanged():
    assert satisfies("1.2.3", "^1.2.3")
    assert satisfies("1.99.0", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
