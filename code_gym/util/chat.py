"""One POST to an OpenAI-compatible chat-completions endpoint, with timeouts, retries and back-off.

Shared by the model client (`code_gym.apps.client`) and the LLM judge (`code_gym.rewards.judge`).
Timeouts, connection errors, HTTP 408, 409, 429 and 5xx are retried up to `retries` times, waiting
`backoff` seconds before the first retry and twice as long before each next one; any other HTTP
error fails at once, and a base URL that cannot name a server is refused before any request. httpx is imported here, not by `import code_gym`.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import httpx

RETRY_STATUS = {408, 409, 429}


class ChatError(RuntimeError):
    """A request that failed for good (retries spent, or an error a retry cannot fix)."""


def http_client(base_url: str, timeout: float, api_key: str | None = None,
                transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An httpx client for `base_url` (the path before /chat/completions); thread-safe. A URL that
    cannot name a server raises ValueError here, before any request."""
    check_base_url(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=httpx.Timeout(timeout),
                        transport=transport)


def check_base_url(base_url: str) -> None:
    """Refuse a base URL no request could reach: not http(s), no host, or not a URL at all."""
    example = "pass the server's URL up to /v1, e.g. http://127.0.0.1:8000/v1"
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"base URL {base_url!r} is not a URL ({exc}): {example}") from None
    if url.scheme not in ("http", "https") or not url.host:
        what = "has no host" if url.scheme in ("http", "https") else "is not an http:// or https:// URL"
        raise ValueError(f"base URL {base_url!r} {what}: {example}")


def post_chat(http: httpx.Client, body: dict[str, Any], retries: int, backoff: float,
              on_retry: Callable[[], None] | None = None) -> dict:
    """The first choice of the chat completion for `body` (a dict with "message", "logprobs" when
    the request asked for them, "usage" when the server counts tokens). Raises ChatError when the
    request fails for good."""
    where = f"{str(http.base_url).rstrip('/')}/chat/completions"
    delay = backoff
    for attempt in range(retries + 1):
        try:
            response = http.post("/chat/completions", json=body)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:  # no retry reaches such a URL
            raise ChatError(f"{where} cannot be requested ({type(exc).__name__}: {exc}): pass the server's "
                            "URL up to /v1, e.g. http://127.0.0.1:8000/v1") from None
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code == 200:
                return _first_choice(response)
            failure = f"HTTP {response.status_code}: {response.text[:300]}"
            if response.status_code < 500 and response.status_code not in RETRY_STATUS:
                raise ChatError(f"{where} refused the request ({failure})")
        if attempt == retries:
            break
        if on_retry is not None:
            on_retry()
        time.sleep(delay)
        delay *= 2
    raise ChatError(f"{where} failed {retries + 1} time{'s' if retries else ''}; last: {failure}. "
                    f"Is the server up and serving model {body.get('model')!r}?")


def _first_choice(response: httpx.Response) -> dict:
    """The reply's first choice; the reply's `usage` (token counts, when the server gives them) is
    copied into it under "usage"."""
    try:
        reply = response.json()
        choice = reply["choices"][0]
        if isinstance(choice["message"], dict):
            usage = reply.get("usage")
            return {**choice, "usage": usage} if isinstance(usage, dict) else choice
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    raise ChatError(f"the server's reply is not a chat completion: {response.text[:300]}")
