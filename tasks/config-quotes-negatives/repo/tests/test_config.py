import pytest

from confparse import ConfigError, loads

TEXT = """
# sample
name = demo
[server]
host = "0.0.0.0"
port = 8080   # admin port
debug = Off
ratio = 0.5
"""


def test_typed_values():
    cfg = loads(TEXT)
    assert cfg.get("name") == "demo"
    assert cfg.get("server.host") == "0.0.0.0"
    assert cfg.get("server.port") == 8080
    assert cfg.get("server.debug") is False
    assert cfg.get("server.ratio") == 0.5


def test_defaults_and_errors():
    cfg = loads(TEXT)
    assert cfg.get("server.nope", 3) == 3
    with pytest.raises(ConfigError):
        cfg.get("server.nope")
    with pytest.raises(ConfigError) as info:
        loads("[a]\nx = 1\nx = 2\n")
    assert info.value.lineno == 3


def test_semicolon_comment():
    assert loads("[a]\nmode = fast ; quick\n").get("a.mode") == "fast"
