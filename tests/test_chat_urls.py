"""A base URL that cannot name a server fails at once, saying what to pass (issue 31: `code-gym
rollout --base-url notaurl` retried four times first)."""
import httpx
import pytest

from code_gym.apps.client import ChatClient, ClientConfig
from code_gym.util.chat import ChatError, http_client, post_chat


@pytest.mark.parametrize("url", ["notaurl", "localhost:8000/v1", "ftp://host/v1", "http://", "http://[::1/v1"])
def test_a_url_that_cannot_name_a_server_is_refused_before_any_request(url):
    sent = []
    transport = httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(500))
    with pytest.raises(ValueError, match=r"e\.g\. http://127\.0\.0\.1:8000/v1"):
        ChatClient(ClientConfig(base_url=url, model="m", retries=3, backoff=0.0), transport=transport)
    assert sent == []


def test_a_server_url_is_accepted():
    http_client("http://127.0.0.1:8000/v1", 1.0).close()
    http_client("https://api.example.com/v1/", 1.0).close()


def test_a_request_that_no_retry_can_send_fails_at_once():
    http = httpx.Client(base_url="http://127.0.0.1:9/v1")
    http.base_url = httpx.URL("gopher://127.0.0.1:9/v1")  # past the check: a client made elsewhere
    retried = []
    with pytest.raises(ChatError, match="cannot be requested"):
        post_chat(http, {"model": "m", "messages": []}, retries=3, backoff=0.0, on_retry=lambda: retried.append(1))
    assert retried == []


def test_the_cli_says_what_to_pass(capsys):
    from code_gym.apps.cli import main

    assert main(["rollout", "--base-url", "notaurl", "--model", "m"]) == 2
    assert "not an http:// or https:// URL" in capsys.readouterr().err
