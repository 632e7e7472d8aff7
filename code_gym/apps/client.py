"""Roll out a real LLM in CodeRepo-v0 through an OpenAI-compatible chat-completions server
(vLLM's `vllm serve`, SGLang, llama.cpp's server, a hosted API) and record every episode as a
`credit.Trajectory`, one JSON line each (`credit.load_jsonl` reads the file back).

Each request carries the tool schemas (`code_gym.TOOL_SCHEMAS`) in `tools`; the environment's
prompt then leaves them out. A reply's tool calls (`message.tool_calls`, or Hermes `<tool_call>`
text in `content` from a server without a tool parser) become the step's action as the Hermes text
a Qwen/Hermes chat template renders, so the environment's provenance maps diff lines to
characters of that text. Tool results go back as `tool` messages.

Requests time out after `timeout` seconds and are retried (timeouts, connection errors, HTTP 408,
409, 429 and 5xx) up to `retries` times with exponential back-off; an episode whose request still
fails is reported and left out of the file. Episodes run `concurrency` at a time, each in its own
environment.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

import credit
from code_gym import episode
from code_gym.chat import ChatError, http_client, post_chat
from code_gym.env import CodeRepoEnv
from code_gym.task import Task
from code_gym.tools import TOOL_SCHEMAS

ClientError = ChatError  # a request that failed for good (retries spent, or an error a retry cannot fix)


@dataclass(frozen=True)
class ClientConfig:
    base_url: str  # e.g. http://127.0.0.1:8000/v1 (the path before /chat/completions)
    model: str
    api_key: str | None = None
    temperature: float = 1.0
    max_tokens: int = 4096
    timeout: float = 300.0  # seconds per request
    retries: int = 3  # further attempts after a failed one
    backoff: float = 1.0  # seconds before the first retry, doubled after each
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged into every request body


class ChatClient:
    """POSTs chat-completion requests with the tool schemas; thread-safe (one httpx.Client)."""

    def __init__(self, config: ClientConfig, transport: httpx.BaseTransport | None = None):
        self.config = config
        self.http = http_client(config.base_url, config.timeout, config.api_key, transport)
        self.retried = 0  # requests sent again after a failure, over the client's life
        self._lock = threading.Lock()

    def complete(self, messages: list[dict]) -> dict:
        """The assistant message of the first choice; the choice's "logprobs" (when the request
        asked for them, e.g. `extra_body={"logprobs": True, "top_logprobs": 5}`) under "logprobs"."""
        body = {"model": self.config.model, "messages": messages, "tools": TOOL_SCHEMAS, "tool_choice": "auto",
                "temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
                **self.config.extra_body}
        choice = post_chat(self.http, body, self.config.retries, self.config.backoff, self._count_retry)
        message = dict(choice["message"])
        if choice.get("logprobs"):
            message["logprobs"] = choice["logprobs"]
        return message

    def _count_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def close(self) -> None:
        self.http.close()


def response_text(message: dict) -> str:
    """The reply as the text the model wrote: its content, then each tool call as a Hermes
    `<tool_call>` block (arguments decoded from their JSON string when they parse)."""
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        body = json.dumps({"name": function.get("name"), "arguments": arguments})
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(p for p in parts if p)


def _replies(message: dict, info: dict, observation: str) -> list[dict]:
    """The messages that carry a step's results back: one `tool` message per tool call when the
    calls and results line up, else the whole observation as a user message."""
    calls = message.get("tool_calls") or []
    results = [r for r in info.get("tool_results", []) if r.get("tool") is not None]
    aligned = calls and len(results) == len(calls) and all(
        (c.get("function") or {}).get("name") == r["tool"] for c, r in zip(calls, results))
    if aligned:
        return [{"role": "tool", "tool_call_id": c.get("id", ""), "content": r["output"]} for c, r in zip(calls, results)]
    tool_replies = [{"role": "tool", "tool_call_id": c.get("id", ""), "content": "(results in the next message)"}
                    for c in calls]
    return tool_replies + [{"role": "user", "content": observation}]


@dataclass(frozen=True)
class EpisodeOutcome:
    task_id: str
    trajectory: credit.Trajectory | None  # None when the episode failed
    resolved: bool = False
    steps: int = 0
    error: str | None = None


class ChatPolicy:
    """The served model as a `code_gym.episode.Policy`: the conversation so far goes to the server
    with each observation; a step's tool results come back as `tool` messages (`observe`)."""

    def __init__(self, client: ChatClient):
        self.client = client
        self.messages: list[dict] = []
        self._last: dict = {}

    def reset(self) -> None:
        self.messages, self._last = [], {}

    def __call__(self, observation: str) -> str | dict:
        if not self.messages:
            self.messages.append({"role": "user", "content": observation})
        self._last = self.client.complete(self.messages)
        text = response_text(self._last)
        logprobs = self._last.get("logprobs")  # a sampled response: the env keeps them for `certainty`
        return {"text": text, "logprobs": logprobs} if logprobs else text

    def observe(self, observation: str, info: dict) -> None:
        message = self._last
        assistant = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        self.messages += [assistant] + _replies(message, info, observation)


def run_episode(client: ChatClient, task: Task, max_steps: int = 30, isolation: str = "auto") -> EpisodeOutcome:
    """One episode of the served model on `task`."""
    env = CodeRepoEnv(tasks=[task], max_steps=max_steps, isolation=isolation, tool_schemas=False)
    try:
        result = episode.run_episode(env, ChatPolicy(client), task)
        return EpisodeOutcome(task.id, result.trajectory, result.resolved, result.steps)
    except ClientError as exc:
        return EpisodeOutcome(task.id, None, error=str(exc))
    finally:
        env.close()


def rollout(tasks: Sequence[Task], client: ChatClient, out: Path, episodes_per_task: int = 1, concurrency: int = 4,
            max_steps: int = 30, isolation: str = "auto", progress: bool = False) -> list[EpisodeOutcome]:
    """`episodes_per_task` episodes of the served model on each task, `concurrency` at a time; each
    finished trajectory is appended to `out` (JSON lines) as it completes."""
    if episodes_per_task < 1 or concurrency < 1:
        raise ValueError("episodes_per_task and concurrency must be >= 1")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    outcomes = []
    with out.open("w", encoding="utf-8") as fh, ThreadPoolExecutor(concurrency) as pool:
        futures = [pool.submit(run_episode, client, task, max_steps, isolation)
                   for task in tasks for _ in range(episodes_per_task)]
        for future in tqdm(as_completed(futures), total=len(futures), desc="rollouts", unit="episode",
                           disable=not progress):
            outcome = future.result()
            if outcome.trajectory is not None:
                fh.write(json.dumps(outcome.trajectory.to_dict(), ensure_ascii=False) + "\n")
                fh.flush()
            outcomes.append(outcome)
    return outcomes
