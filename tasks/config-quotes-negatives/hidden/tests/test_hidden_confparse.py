from confparse import loads
from confparse.values import coerce


def test_hash_inside_quotes_is_kept():
    cfg = loads('[db]\npassword = "p#ss"   # secret\n')
    assert cfg.get("db.password") == "p#ss"


def test_semicolon_inside_quotes_is_kept():
    cfg = loads('motd = "hello; # world" ; greeting\nurl = "http://x/a#frag"\n')
    assert cfg.get("motd") == "hello; # world"
    assert cfg.get("url") == "http://x/a#frag"


def test_escaped_quote_before_comment_char():
    cfg = loads(r'quote = "a \" # b"  # trailing' + "\n")
    assert cfg.get("quote") == 'a " # b'


def test_unquoted_inline_comment_still_stripped():
    cfg = loads("[a]\nport = 8080 # admin\nname = x ; note\n")
    assert cfg.get("a.port") == 8080
    assert cfg.get("a.name") == "x"


def test_signed_integers_are_ints():
    for raw, expected in [("-3", -3), ("+7", 7), ("-0", 0), ("-12345678901234567890", -12345678901234567890)]:
        value = coerce(raw)
        assert type(value) is int and value == expected, raw


def test_signed_values_in_file():
    cfg = loads("[tune]\nlevel = -3\nratio = -0.25\n")
    assert type(cfg.get("tune.level")) is int and cfg.get("tune.level") == -3
    assert cfg.get("tune.ratio") == -0.25
