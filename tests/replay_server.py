"""A chat-completions endpoint on 127.0.0.1 that replays scripted replies, one per request, for the
judge and label-free reward tests."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(text: str, logprobs=None) -> dict:
    """A well-formed reply whose assistant message says `text`."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {"status": 200, "body": {"id": "x", "object": "chat.completion", "choices": [choice]}}


def status(code: int) -> dict:
    return {"status": code, "body": {"error": {"message": "scripted failure"}}}


def slow(seconds: float, then: dict) -> dict:
    """`then`, after `seconds` (longer than the client's timeout: the client gives up first)."""
    return {**then, "delay": seconds}


GARBAGE = {"status": 200, "raw": b"<html>not json</html>"}


class ChatServer:
    """A chat-completions endpoint on 127.0.0.1 (a real ThreadingHTTPServer); `respond(number, body)`
    gives the reply to the number-th request (1-based): {"status", "body" or "raw", "delay"}.
    Every request is kept in `requests` as (path, body)."""

    def __init__(self):
        self.requests, self.lock = [], threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append((self.path, body))
                    reply = server.respond(len(server.requests), body)
                time.sleep(reply.get("delay", 0))
                data = reply.get("raw") or json.dumps(reply["body"]).encode()
                try:
                    self.send_response(reply["status"])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def respond(self, number: int, body: dict) -> dict:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ReplayServer(ChatServer):
    """Replies with `script[n]` to the n-th request (the last entry once the script runs out)."""

    def __init__(self, script: list[dict]):
        super().__init__()
        self.script = list(script)

    def respond(self, number: int, body: dict) -> dict:
        return self.script[min(number, len(self.script)) - 1]
