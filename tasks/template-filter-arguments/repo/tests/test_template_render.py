import pytest

from minitmpl import TemplateError, TemplateSyntaxError, render


class User:
    def __init__(self, name):
        self.name = name


def test_paths_and_filters():
    ctx = {"user": {"name": "ada lovelace"}, "owner": User("  grace ")}
    assert render("Hello {{ user.name | title }}!", ctx) == "Hello Ada Lovelace!"
    assert render("[{{ owner.name | strip | upper }}]", ctx) == "[GRACE]"
    assert render("{{ user.name | length }}", ctx) == "12"


def test_missing_values_render_empty():
    assert render("<{{ nobody.here }}>", {}) == "<>"


def test_errors():
    with pytest.raises(TemplateError):
        render("{{ x | shout }}", {"x": 1})
    with pytest.raises(TemplateSyntaxError):
        render("{{ x ", {})
