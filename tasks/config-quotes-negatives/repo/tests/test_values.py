from confparse.values import coerce


def test_booleans_any_case():
    assert coerce("YES") is True
    assert coerce("no") is False


def test_escaped_quote():
    assert coerce(r'"say \"hi\""') == 'say "hi"'


def test_plain_strings_and_floats():
    assert coerce("hello world") == "hello world"
    assert coerce("1.5e3") == 1500.0
