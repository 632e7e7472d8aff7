"""Roll out a real LLM in CodeRepo-v0 through an OpenAI-compatible chat-completions server
(vLLM's `vllm serve`, SGLang, llama.cpp's server, a hosted API) and record every episode as a
`credit.Trajectory`, one JSON line each (`credit.load_jsonl` reads the file back).

Each request carries the tool schemas (`code_gym.TOOL_SCHEMAS`) in `tools`; the environment's
prompt then leaves them out. A reply's tool calls (`message.tool_calls`, or Hermes `<tool_call>`
text in `content` from a server without a tool parser) become the step's action as the Hermes text
a Qwen/Hermes chat template renders, so the environment's provenance maps diff lines to
characters of that text. Tool results go back as `tool` messages.

Tokens (`ClientConfig.tokens`, on by default): each request asks for `logprobs` and vLLM's
`return_token_ids`; a reply's `logprobs.content` (each token's text as `bytes`, its sampling
logprob) and `token_ids` give the response's tokens, and their text joined is what the model wrote,
which becomes the step's action when it parses into the same tool calls (a server's tool parser
moves them out of `content`; the tokens still hold them). Each step's `token_offsets` are then
exact, so `credit.didpo(credit.load_jsonl(out))` gives per-token advantages; the token ids and
logprobs are the step's `token_ids` and `logprobs`, in the same JSON line. Without logprobs in the
reply, a local tokenizer (`ClientConfig.tokenizer`, a `tokenizer.json` path or a folder holding
one) tokenizes the rendered text instead (ids, no logprobs).

Requests time out after `timeout` seconds and are retried (timeouts, connection errors, HTTP 408,
409, 429 and 5xx) up to `retries` times with exponential back-off; an episode whose request still
fails is reported and left out of the file. Episodes run `concurrency` at a time, each in its own
environment.
"""
from __future__ import annotations

import codecs
import json
import re
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
from code_gym.actions import parse_action, render_call
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
    tokens: bool = True  # ask for logprobs and token ids (vLLM's return_token_ids) to record tokens
    tokenizer: str | None = None  # a tokenizer.json (or its folder) for replies without logprobs


class ChatClient:
    """POSTs chat-completion requests with the tool schemas; thread-safe (one httpx.Client)."""

    def __init__(self, config: ClientConfig, transport: httpx.BaseTransport | None = None):
        self.config = config
        self.http = http_client(config.base_url, config.timeout, config.api_key, transport)
        self.retried = 0  # requests sent again after a failure, over the client's life
        self._lock = threading.Lock()

    def complete(self, messages: list[dict]) -> dict:
        """The assistant message of the first choice; the choice's "logprobs" (when the server
        gives them) under "logprobs"."""
        choice = self.complete_choice(messages)
        message = dict(choice["message"])
        if choice.get("logprobs"):
            message["logprobs"] = choice["logprobs"]
        return message

    def complete_choice(self, messages: list[dict]) -> dict:
        """The first choice of the reply (message, logprobs, token_ids when the server gives them)."""
        body = {"model": self.config.model, "messages": messages, "tools": TOOL_SCHEMAS, "tool_choice": "auto",
                "temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
                **({"logprobs": True, "return_token_ids": True} if self.config.tokens else {}),
                **self.config.extra_body}
        return post_chat(self.http, body, self.config.retries, self.config.backoff, self._count_retry)

    def _count_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def close(self) -> None:
        self.http.close()


@dataclass(frozen=True)
class StepTokens:
    """A response's tokens: ids (None when the server gave none), (start, end) character offsets in
    the step's action, and sampling logprobs (None without them)."""
    token_ids: list[int] | None
    offsets: list[tuple[int, int]]
    logprobs: list[float] | None


_SPECIAL = re.compile(r"<\|[^|<>]*\|>|</s>|<eos>|<end_of_turn>")
_TOKEN_ID = re.compile(r"token_id:(\d+)")


def sampled_tokens(choice: dict) -> tuple[str, StepTokens] | None:
    """(the text the model wrote, its tokens) from a choice's `logprobs.content` (vLLM and OpenAI
    format: each entry's `bytes`, or its `token` text; `token_id:N` tokens from vLLM's
    return_tokens_as_token_ids name the id) and vLLM's `token_ids`; None without logprobs. Special
    tokens at the end (the end-of-turn token) get zero-width offsets and leave the text."""
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text, offsets, ids, logprobs = [], [], [], []
    pos = 0
    for entry in content:
        raw = entry.get("bytes")
        token = entry.get("token") or ""
        named = _TOKEN_ID.fullmatch(token)
        piece = decoder.decode(bytes(raw)) if raw is not None else ("" if named else token)
        ids.append(int(named.group(1)) if named else None)
        text.append(piece)
        offsets.append((pos, pos + len(piece)))
        pos += len(piece)
        logprobs.append(float(entry.get("logprob", -9999.0)))
    joined = "".join(text)
    end = len(joined)
    for k in range(len(text) - 1, -1, -1):  # trailing special tokens: zero-width, not in the text
        if text[k] and _SPECIAL.fullmatch(text[k]) and offsets[k][1] == end:
            end = offsets[k][0]
        elif text[k]:
            break
    offsets = [(min(a, end), min(b, end)) for a, b in offsets]
    token_ids = choice.get("token_ids")
    if not (isinstance(token_ids, list) and len(token_ids) == len(content)):
        token_ids = ids if all(i is not None for i in ids) else None
    return joined[:end], StepTokens(token_ids, offsets, logprobs)


def _same_calls(a: str, b: str) -> bool:
    pa, pb = parse_action(a), parse_action(b)
    return [(c.name, c.arguments) for c in pa.calls] == [(c.name, c.arguments) for c in pb.calls]


class LocalTokenizer:
    """A `tokenizers` tokenizer from a tokenizer.json (or a folder holding one)."""

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        path = Path(path)
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))

    def __call__(self, text: str) -> StepTokens:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        return StepTokens(list(encoding.ids), [tuple(o) for o in encoding.offsets], None)


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
        parts.append(render_call(function.get("name"), arguments))
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

    def __init__(self, client: ChatClient, tokenizer: Any = None):
        self.client = client
        self.tokenizer = tokenizer  # text -> StepTokens, for replies without logprobs
        self.messages: list[dict] = []
        self.tokens: list[StepTokens | None] = []  # per action, in order
        self._last: dict = {}

    def reset(self) -> None:
        self.messages, self.tokens, self._last = [], [], {}

    def __call__(self, observation: str) -> str | dict:
        if not self.messages:
            self.messages.append({"role": "user", "content": observation})
        choice = self.client.complete_choice(self.messages)
        self._last = choice["message"]
        rendered = response_text(self._last)
        sampled = sampled_tokens(choice)
        if sampled is not None and (sampled[0] == rendered or _same_calls(sampled[0], rendered)):
            self.tokens.append(sampled[1])
            text = sampled[0]  # what the model wrote, token for token
        else:
            self.tokens.append(self.tokenizer(rendered) if self.tokenizer is not None else None)
            text = rendered
        logprobs = choice.get("logprobs")  # a sampled response: the env keeps them for the `certainty` reward
        return {"text": text, "logprobs": logprobs} if logprobs else text

    def observe(self, observation: str, info: dict) -> None:
        message = self._last
        assistant = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        self.messages += [assistant] + _replies(message, info, observation)


def with_tokens(trajectory: credit.Trajectory, tokens: list[StepTokens | None]) -> credit.Trajectory:
    """The trajectory with each step's token offsets, ids and logprobs (steps without tokens keep none)."""
    steps = [credit.Step.from_dict(step.to_dict(), token_offsets=t.offsets, token_ids=t.token_ids,
                                   logprobs=t.logprobs) if t is not None else step
             for step, t in zip(trajectory.steps, list(tokens) + [None] * len(trajectory.steps))]
    return credit.Trajectory(task_id=trajectory.task_id, steps=steps, reward=trajectory.reward)


def run_episode(client: ChatClient, task: Task, max_steps: int = 30, isolation: str = "auto",
                tokenizer: Any = None) -> EpisodeOutcome:
    """One episode of the served model on `task`."""
    env = CodeRepoEnv(tasks=[task], max_steps=max_steps, isolation=isolation, tool_schemas=False)
    policy = ChatPolicy(client, tokenizer)
    try:
        result = episode.run_episode(env, policy, task)
        tokens = policy.tokens[:len(result.trajectory.steps)]
        return EpisodeOutcome(task.id, with_tokens(result.trajectory, tokens), result.resolved, result.steps)
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
    tokenizer = LocalTokenizer(client.config.tokenizer) if client.config.tokenizer else None
    with out.open("w", encoding="utf-8") as fh, ThreadPoolExecutor(concurrency) as pool:
        futures = [pool.submit(run_episode, client, task, max_steps, isolation, tokenizer)
                   for task in tasks for _ in range(episodes_per_task)]
        for future in tqdm(as_completed(futures), total=len(futures), desc="rollouts", unit="episode",
                           disable=not progress):
            outcome = future.result()
            if outcome.trajectory is not None:
                fh.write(json.dumps(outcome.trajectory.to_dict(), ensure_ascii=False) + "\n")
                fh.flush()
            outcomes.append(outcome)
    return outcomes

