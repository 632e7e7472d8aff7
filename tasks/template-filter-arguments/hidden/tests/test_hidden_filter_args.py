import pytest

from minitmpl import TemplateError, TemplateSyntaxError, render


def test_default_replaces_missing_and_empty():
    tpl = 'Hi {{ user.name | default:"anonymous" }}'
    assert render(tpl, {}) == "Hi anonymous"
    assert render(tpl, {"user": {"name": ""}}) == "Hi anonymous"
    assert render(tpl, {"user": {"name": "Bo"}}) == "Hi Bo"
    assert render("{{ n | default:7 }}", {"n": 0}) == "0"


def test_string_arguments_may_contain_separators():
    assert render('{{ x | default:"n/a, sorry | none: here" }}', {}) == "n/a, sorry | none: here"


def test_truncate():
    ctx = {"t": "Hello world"}
    assert render("{{ t | truncate:5 }}", ctx) == "Hello..."
    assert render('{{ t | truncate:5,"!" }}', ctx) == "Hello!"
    assert render('{{ t | truncate: 5 , "" }}', ctx) == "Hello"
    assert render("{{ t | truncate:11 }}", ctx) == "Hello world"


def test_round():
    assert render("{{ pi | round:2 }}", {"pi": 3.14159}) == "3.14"
    assert render("{{ n | round:1 }}", {"n": 2}) == "2.0"


def test_arguments_in_chains():
    assert render('{{ name | default:"anon" | upper }}', {}) == "ANON"
    assert render('{{ t | upper | truncate:3,"" | lower }}', {"t": "abcdef"}) == "abc"


def test_malformed_arguments():
    for tpl in ["{{ t | truncate:five }}", '{{ t | default:"open }}', "{{ t | truncate:5, }}", "{{ t | truncate: }}"]:
        with pytest.raises(TemplateSyntaxError):
            render(tpl, {"t": "x"})


def test_wrong_argument_count_and_unknown_filter():
    with pytest.raises(TemplateError):
        render("{{ t | upper:1 }}", {"t": "x"})
    with pytest.raises(TemplateError):
        render('{{ t | shout:"x" }}', {"t": "x"})
