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
logprobs are the step's `token_ids` and `logprobs`, in the same JSON line. A token without a
numeric logprob makes the step's `logprobs` None: a trainer must not weigh tokens by a made-up
sampling probability. Without logprobs in the reply, or with tool calls in a format other than
Hermes text (the sampled text then does not parse into the calls), a local tokenizer
(`ClientConfig.tokenizer`, a `tokenizer.json` path or a folder holding one) tokenizes the rendered
text instead (ids, no logprobs); without one such steps have no tokens, and `rollout` warns once
with their count.

Requests time out after `timeout` seconds and are retried (timeouts, connection errors, HTTP 408,
409, 429 and 5xx) up to `retries` times with exponential back-off; an episode whose request still
fails, or whose reply is malformed, is reported and left out of the file. Episodes run
`concurrency` at a time, each in its own environment; `Interrupt` is how Ctrl-C stops a rollout
without losing the finished episodes.

The model's context (`ClientConfig.context_limit`, in tokens; None: the server's own limit only).
Before each request the client estimates the prompt's tokens (`ChatClient.prompt_tokens`: the
messages and tool schemas, counted by `tokenizer` when given, else one token per 3 characters,
plus 8 tokens a message for the chat template; scaled up when the server's `usage` shows the
estimate ran low) and keeps it within the limit less the reply's `max_tokens`:
  - strategy "truncate" (the default): the contents of the oldest tool results (never the task's
    prompt, the latest results or the model's own turns) are replaced by a line saying how much was
    elided, oldest first, until the prompt fits; the episode goes on. When eliding every older
    result is not enough, the client submits as below.
  - strategy "submit": the client submits for the agent, as the OpenRLHF executor ends an episode
    that ran out of length budget; the episode is graded as it stands.
A request the server still refuses as too long (vLLM's HTTP 400) ends the episode the same way.
Nothing is cut silently: each such `records.ContextEvent` is in `EpisodeOutcome.context_events`
(and the episode records `code-gym eval` writes), and its note (`ContextEvent.note`, opening with
`records.CONTEXT_NOTE`) is added to the observation of its step in the trajectory; after a
truncation the model reads the same note at the end of the latest message. A submit the client
made has no tokens (the model wrote nothing).
"""
from __future__ import annotations

import codecs
import json
import math
import re
import signal
import sys
import threading
import time
import warnings
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

import credit
from code_gym.env import episode
from code_gym.actions.parse import parse_action, render_call
from code_gym.apps.records import (REFUSED, SUBMITTED, TRUNCATED, ContextEvent, EpisodeRecord, RolloutWriter,
                                   finished)
from code_gym.util.chat import ChatError, http_client, post_chat
from code_gym.env.environment import CodeRepoEnv
from code_gym.tasks.task import Task
from code_gym.actions.tools import TOOL_SCHEMAS

ClientError = ChatError  # a request that failed for good (retries spent, or an error a retry cannot fix)


class ContextLimit(ClientError):
    """The server refused a request because the conversation no longer fits the model's context."""


class Abandoned(Exception):
    """The rollout was interrupted twice: the episode stops before its next request."""


# what vLLM ("This model's maximum context length is ..."), OpenAI (context_length_exceeded),
# SGLang ("longer than the model's context length") and llama.cpp (exceed_context_size_error)
# answer with HTTP 400, as `post_chat` quotes the reply (its first 300 characters) in its error
_CONTEXT_LIMIT = re.compile(r"\(HTTP 400: .*context[ _](length|size)", re.S | re.I)


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
    tokenizer: str | None = None  # a tokenizer.json (or its folder) for replies whose tokens cannot be placed
    context_limit: int | None = None  # the model's context in tokens, prompt and reply (None: the server's only)
    context_strategy: str = "truncate"  # what outgrowing it does: CONTEXT_STRATEGIES (module docstring)


CONTEXT_STRATEGIES = ("truncate", "submit")
CHARS_PER_TOKEN = 3  # without a tokenizer: BPE vocabularies spend about 3.5-4.5 characters a token on code and prose
MESSAGE_TOKENS = 8  # what a chat template adds around one message (role markers, separators), at most


class ChatClient:
    """POSTs chat-completion requests with the tool schemas; thread-safe (one httpx.Client).
    Loads `config.tokenizer` here, so a wrong path fails before the first request (ValueError)."""

    def __init__(self, config: ClientConfig, transport: httpx.BaseTransport | None = None):
        _check_context(config)
        self.config = config
        self.tokenizer = LocalTokenizer(config.tokenizer) if config.tokenizer else None
        self.http = http_client(config.base_url, config.timeout, config.api_key, transport)
        self.retried = 0  # requests sent again after a failure, over the client's life
        self._lock = threading.Lock()
        self._scale = 1.0  # the server's prompt count over the estimate, at its highest (never below 1)
        self._schema_tokens = self.text_tokens(json.dumps(TOOL_SCHEMAS))

    @property
    def prompt_budget(self) -> int | None:
        """The prompt tokens a request may hold: the context limit less the reply's max_tokens."""
        limit = self.config.context_limit
        return None if limit is None else limit - self.config.max_tokens

    def text_tokens(self, text: str) -> int:
        """Tokens of `text`: the tokenizer's count, else one per CHARS_PER_TOKEN characters."""
        if self.tokenizer is not None:
            return self.tokenizer.count(text)
        return -(-len(text) // CHARS_PER_TOKEN)

    def message_tokens(self, message: dict) -> int:
        """Unscaled tokens of one message: its content, its tool calls' JSON, the template's share."""
        calls = message.get("tool_calls")
        text = (message.get("content") or "") + (json.dumps(calls) if calls else "")
        return self.text_tokens(text) + MESSAGE_TOKENS

    def prompt_tokens(self, messages: list[dict], raw: int | None = None) -> int:
        """The estimated prompt tokens of `messages` with the tool schemas (`raw`: their unscaled sum
        of `message_tokens`, when the caller keeps it)."""
        if raw is None:
            raw = sum(map(self.message_tokens, messages))
        return math.ceil((raw + self._schema_tokens) * self._scale)

    def calibrate(self, messages: list[dict], usage: Any) -> None:
        """Scale later estimates up when the server counted more prompt tokens for `messages` than
        the estimate did (its `usage.prompt_tokens`)."""
        counted = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if not isinstance(counted, int) or counted <= 0:
            return
        estimate = sum(map(self.message_tokens, messages)) + self._schema_tokens
        with self._lock:
            self._scale = max(self._scale, counted / estimate)

    def complete(self, messages: list[dict]) -> dict:
        """The assistant message of the first choice; the choice's "logprobs" (when the server
        gives them) under "logprobs"."""
        choice = self.complete_choice(messages)
        message = dict(choice["message"])
        if choice.get("logprobs"):
            message["logprobs"] = choice["logprobs"]
        return message

    def complete_choice(self, messages: list[dict]) -> dict:
        """The first choice of the reply (message, logprobs, token_ids when the server gives them).
        Raises ContextLimit when the server refuses the conversation as too long for the model."""
        body = {"model": self.config.model, "messages": messages, "tools": TOOL_SCHEMAS, "tool_choice": "auto",
                "temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
                **({"logprobs": True, "return_token_ids": True} if self.config.tokens else {}),
                **self.config.extra_body}
        try:
            return post_chat(self.http, body, self.config.retries, self.config.backoff, self._count_retry)
        except ClientError as exc:
            if _CONTEXT_LIMIT.search(str(exc)):
                raise ContextLimit(str(exc)) from None
            raise

    def _count_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def close(self) -> None:
        self.http.close()


def _check_context(config: ClientConfig) -> None:
    """Refuse a context strategy or limit no episode could run under (ValueError saying why)."""
    if config.context_strategy not in CONTEXT_STRATEGIES:
        raise ValueError(f"context strategy {config.context_strategy!r} is not one of {', '.join(CONTEXT_STRATEGIES)}")
    if config.context_limit is not None and config.context_limit <= config.max_tokens:
        raise ValueError(f"the context limit ({config.context_limit} tokens) must exceed max_tokens "
                         f"({config.max_tokens}), which it keeps free for the reply: raise the limit to the model's "
                         "context length or lower --max-tokens")


@dataclass(frozen=True)
class StepTokens:
    """A response's tokens: ids (None when the server gave none), (start, end) character offsets in
    the step's action, and sampling logprobs (None without them, or when any token lacks one)."""
    token_ids: list[int] | None
    offsets: list[tuple[int, int]]
    logprobs: list[float] | None


_SPECIAL = re.compile(r"<\|[^|<>]*\|>|</s>|<eos>|<end_of_turn>")
_TOKEN_ID = re.compile(r"token_id:(\d+)")


def _malformed(where: str, value: Any, expected: str) -> ClientError:
    shown = json.dumps(value, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ClientError(f"the server's reply is malformed: {where} is {shown}, not {expected}; the episode is left "
                       "out (is the base URL an OpenAI-compatible chat-completions server such as vLLM?)")


def _is_logprob(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_byte_list(value: Any) -> bool:
    return isinstance(value, list) and all(type(b) is int and 0 <= b < 256 for b in value)


def sampled_tokens(choice: dict) -> tuple[str, StepTokens] | None:
    """(the text the model wrote, its tokens) from a choice's `logprobs.content` (vLLM and OpenAI
    format: each entry's `bytes`, or its `token` text; `token_id:N` tokens from vLLM's
    return_tokens_as_token_ids name the id) and vLLM's `token_ids`; None without logprobs. Special
    tokens at the end (the end-of-turn token) get zero-width offsets and leave the text. An entry
    without a finite numeric `logprob` makes the logprobs None. Raises ClientError when the
    logprobs or token ids are not of these shapes."""
    logprobs_object = choice.get("logprobs")
    if logprobs_object is not None and not isinstance(logprobs_object, dict):
        raise _malformed("logprobs", logprobs_object, "an object with a 'content' list")
    content = (logprobs_object or {}).get("content")
    if not content:
        return None
    if not isinstance(content, list):
        raise _malformed("logprobs.content", content, "a list (one entry per token)")
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text, offsets, ids, logprobs = [], [], [], []
    pos = 0
    for k, entry in enumerate(content):
        if not isinstance(entry, dict):
            raise _malformed(f"logprobs.content[{k}]", entry, "an object (token, logprob, bytes)")
        raw, token = entry.get("bytes"), entry.get("token")
        if raw is not None and not _is_byte_list(raw):
            raise _malformed(f"logprobs.content[{k}].bytes", raw, "a list of byte values")
        if token is not None and not isinstance(token, str):
            raise _malformed(f"logprobs.content[{k}].token", token, "a string")
        named = _TOKEN_ID.fullmatch(token or "")
        piece = decoder.decode(bytes(raw)) if raw is not None else ("" if named else token or "")
        ids.append(int(named.group(1)) if named else None)
        text.append(piece)
        offsets.append((pos, pos + len(piece)))
        pos += len(piece)
        logprobs.append(float(entry["logprob"]) if _is_logprob(entry.get("logprob")) else None)
    joined = "".join(text)
    end = len(joined)
    for k in range(len(text) - 1, -1, -1):  # trailing special tokens: zero-width, not in the text
        if text[k] and _SPECIAL.fullmatch(text[k]) and offsets[k][1] == end:
            end = offsets[k][0]
        elif text[k]:
            break
    offsets = [(min(a, end), min(b, end)) for a, b in offsets]
    token_ids = choice.get("token_ids")
    if token_ids is not None and not (isinstance(token_ids, list) and all(type(i) is int for i in token_ids)):
        raise _malformed("token_ids", token_ids, "a list of integers")
    if not (token_ids is not None and len(token_ids) == len(content)):
        token_ids = ids if all(i is not None for i in ids) else None
    return joined[:end], StepTokens(token_ids, offsets, None if None in logprobs else logprobs)


def _checked_message(choice: dict) -> dict:
    """The choice's message, after checking the fields the client reads (ClientError otherwise)."""
    message = choice["message"]
    if message.get("content") is not None and not isinstance(message["content"], str):
        raise _malformed("message.content", message["content"], "a string or null")
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise _malformed("message.tool_calls", calls, "a list")
    for k, call in enumerate(calls or []):
        if not (isinstance(call, dict) and isinstance(call.get("function"), dict)):
            raise _malformed(f"message.tool_calls[{k}]", call, "an object with a 'function' object")
    return message


def _same_calls(a: str, b: str) -> bool:
    pa, pb = parse_action(a), parse_action(b)
    return [(c.name, c.arguments) for c in pa.calls] == [(c.name, c.arguments) for c in pb.calls]


class LocalTokenizer:
    """A `tokenizers` tokenizer from a tokenizer.json (or a folder holding one)."""

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        given = Path(path)
        file = given / "tokenizer.json" if given.is_dir() else given
        if not file.is_file():
            problem = "the folder holds no tokenizer.json" if given.is_dir() else "no such file"
            raise ValueError(f"tokenizer {str(path)!r}: {problem}; give the served model's tokenizer.json or the "
                             f"folder holding it")
        try:
            self.tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # tokenizers raises a bare Exception for a file it cannot read
            raise ValueError(f"tokenizer {str(path)!r} is not a Hugging Face tokenizer.json ({exc}); give the "
                             f"served model's tokenizer.json or the folder holding it") from None

    def __call__(self, text: str) -> StepTokens:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        return StepTokens(list(encoding.ids), [tuple(o) for o in encoding.offsets], None)

    def count(self, text: str) -> int:
        """How many tokens `text` is."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


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
    calls and results line up, else (a format error among them, too: it belongs to no call) the
    whole observation as a user message."""
    calls = message.get("tool_calls") or []
    every = info.get("tool_results", [])
    results = [r for r in every if r.get("tool") is not None]
    aligned = calls and len(results) == len(every) == len(calls) and all(
        (c.get("function") or {}).get("name") == r["tool"] for c, r in zip(calls, results))
    if aligned:
        return [{"role": "tool", "tool_call_id": c.get("id", ""), "content": r["output"]} for c, r in zip(calls, results)]
    tool_replies = [{"role": "tool", "tool_call_id": c.get("id", ""), "content": "(results in the next message)"}
                    for c in calls]
    return tool_replies + [{"role": "user", "content": observation}]


@dataclass(frozen=True)
class EpisodeOutcome:
    task_id: str
    trajectory: credit.Trajectory | None  # None when the episode failed or was abandoned
    resolved: bool = False
    steps: int = 0
    error: str | None = None
    abandoned: bool = False  # a second Ctrl-C stopped it before it ended (`error` says so)
    token_gaps: tuple[str, ...] = ()  # NO_LOGPROBS, UNPLACED or PARTIAL: one per step short of tokens
    sample: int = 0  # which of the task's episodes (0-based)
    context_events: tuple[ContextEvent, ...] = ()  # what outgrowing the model's context made the client do
    seconds: float = 0.0
    prompt_tokens: int | None = None  # the server's counts (`usage`), summed; None when a reply lacked them
    completion_tokens: int | None = None

    @property
    def context_cut(self) -> bool:
        """Whether the model's context ended it (the client submitted for the agent)."""
        return any(e.ended for e in self.context_events)

    def record(self, model: str) -> EpisodeRecord:
        """What the records file keeps of it (a finished episode only)."""
        return EpisodeRecord(self.task_id, self.sample, self.resolved, self.trajectory.reward, self.steps,
                             round(self.seconds, 3), self.prompt_tokens, self.completion_tokens,
                             self.context_events, model)


# why a step lacks tokens (the first two) or its sampling logprobs (PARTIAL)
NO_LOGPROBS, UNPLACED, PARTIAL = "no logprobs", "calls not placed", "logprobs incomplete"


class Interrupt:
    """Ctrl-C for a rollout, in two steps. The first `press` stops starting episodes; the running
    ones finish and are written. The second abandons the running ones at their next request (their
    environments are closed; nothing of them is written). Installed as the SIGINT handler
    (`on_sigint`) it only counts presses, so a signal never lands in the middle of writing a line;
    the episode threads and the rollout loop read the count."""

    def __init__(self):
        self.presses = 0
        self._said = 0

    def press(self, *_signal: Any) -> None:
        self.presses += 1

    def abandon(self) -> None:
        self.presses = max(self.presses, 2)

    @property
    def stopping(self) -> bool:
        return self.presses >= 1

    @property
    def abandoning(self) -> bool:
        return self.presses >= 2

    @contextmanager
    def on_sigint(self) -> Iterator["Interrupt"]:
        """`press` as the SIGINT handler inside the block (signals reach only the main thread;
        elsewhere nothing is installed)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self.press)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def tell(self, running: int) -> None:
        """Say on stderr, once per press that changes anything, what it does to the `running` episodes."""
        level = min(self.presses, 2)
        if not running or level <= self._said:
            return
        episodes = f"{running} running episode{'s' * (running != 1)}"
        if self.abandoning:
            tqdm.write(f"interrupted again: abandoning the {episodes} at their next request (a request in flight "
                       "finishes first)", file=sys.stderr)
        else:
            tqdm.write(f"interrupted: starting no more episodes; the {episodes} finish and are written (Ctrl-C "
                       "again to abandon them)", file=sys.stderr)
        self._said = level


class ChatPolicy:
    """The served model as a `code_gym.env.episode.Policy`: the conversation so far goes to the server
    with each observation; a step's tool results come back as `tool` messages (`observe`).

    Before each request the conversation is kept within the model's context as the module
    docstring says (`ClientConfig.context_limit`, `context_strategy`); each thing done about it is a
    `ContextEvent` in `context_events`, and its note, per step, in `notes`. When the client submits
    for the agent (the strategy, or the server refusing the conversation as too long), the step has
    no tokens, as the OpenRLHF executor's submit when the length budget runs out. A first prompt
    that does not fit is an error: the task cannot be played. Once `interrupt` abandons running
    episodes, the next call raises Abandoned."""

    def __init__(self, client: ChatClient, interrupt: Interrupt | None = None):
        self.client = client
        self.interrupt = interrupt
        self.reset()

    def reset(self) -> None:
        self.messages: list[dict] = []
        self.tokens: list[StepTokens | None] = []  # per action, in order
        self.gaps: list[str] = []  # NO_LOGPROBS, UNPLACED or PARTIAL, per action short of tokens
        self.context_events: list[ContextEvent] = []
        self.notes: dict[int, str] = {}  # step -> the context notes recorded in its observation
        self.usage: list[dict | None] = []  # each reply's `usage` (None: the server gave none)
        self._elided: set[int] = set()  # messages whose content was elided
        self._last: dict = {}

    def __call__(self, observation: str) -> str | dict:
        if self.interrupt is not None and self.interrupt.abandoning:
            raise Abandoned("abandoned: the rollout was interrupted twice (Ctrl-C)")
        if not self.messages:
            self.messages.append({"role": "user", "content": observation})
        submit = self._fit_context()
        if submit is not None:
            return submit
        try:
            choice = self.client.complete_choice(self.messages)
        except ContextLimit as exc:
            if not self.tokens:
                raise ClientError(f"{exc}. The task's first prompt does not fit the model's context: serve it with "
                                  "a longer one (vllm serve --max-model-len) or lower --max-tokens") from None
            return self._submit_for_agent(ContextEvent(REFUSED, len(self.tokens)))
        self.usage.append(choice.get("usage"))
        self.client.calibrate(self.messages, choice.get("usage"))
        self._last = _checked_message(choice)
        rendered = response_text(self._last)
        sampled = sampled_tokens(choice)
        if sampled is not None and (sampled[0] == rendered or _same_calls(sampled[0], rendered)):
            self._record(sampled[1], PARTIAL if sampled[1].logprobs is None else None)
            text = sampled[0]  # what the model wrote, token for token
        else:
            tokenizer = self.client.tokenizer
            tokens = tokenizer(rendered) if tokenizer is not None else None
            wanted = tokens is None and self.client.config.tokens  # a gap only where tokens were asked for
            self._record(tokens, (NO_LOGPROBS if sampled is None else UNPLACED) if wanted else None)
            text = rendered
        logprobs = choice.get("logprobs")  # a sampled response: the env keeps them for the `certainty` reward
        return {"text": text, "logprobs": logprobs} if logprobs else text

    def _fit_context(self) -> str | None:
        """Keep the next request within the prompt budget: elide older tool results (strategy
        "truncate"), else submit for the agent (returned: the action to play). None: it fits."""
        budget = self.client.prompt_budget
        if budget is None:
            return None
        counts = [self.client.message_tokens(m) for m in self.messages]
        tokens = self.client.prompt_tokens(self.messages, sum(counts))
        if tokens <= budget:
            return None
        step = len(self.tokens)
        if self.client.config.context_strategy == "truncate":
            elided, kept = self._elide(counts, budget)
            if kept <= budget:
                self._log(ContextEvent(TRUNCATED, step, tokens, budget, elided, kept))
                self.messages[-1]["content"] += "\n\n" + self.notes[step]
                return None
        if not self.tokens:
            raise ClientError(f"the task's first prompt is about {tokens:,} tokens, over the {budget:,} the context "
                              f"limit ({self.client.config.context_limit:,}) leaves beside --max-tokens "
                              f"({self.client.config.max_tokens:,}): raise --context-limit to the model's context "
                              "length (vllm serve --max-model-len) or lower --max-tokens")
        return self._submit_for_agent(ContextEvent(SUBMITTED, step, tokens, budget))

    def _elide(self, counts: list[int], budget: int) -> tuple[int, int]:
        """Replace the contents of the oldest tool results (past the task's prompt, before the latest
        reply's results) until the prompt fits `budget`: (messages elided, the estimate after)."""
        latest = max((i for i, m in enumerate(self.messages) if m["role"] == "assistant"), default=0)
        raw, elided = sum(counts), 0
        for i in range(1, latest):
            message = self.messages[i]
            if self.client.prompt_tokens(self.messages, raw) <= budget:
                break
            if message["role"] == "assistant" or i in self._elided:
                continue
            message["content"] = (f"[elided to fit the model's context: {len(message['content']):,} characters of "
                                  "tool output]")
            self._elided.add(i)
            new = self.client.message_tokens(message)
            raw, counts[i], elided = raw - counts[i] + new, new, elided + 1
        return elided, self.client.prompt_tokens(self.messages, raw)

    def _log(self, event: ContextEvent) -> None:
        self.context_events.append(event)
        note = self.notes.get(event.step)
        self.notes[event.step] = event.note() if note is None else f"{note}\n{event.note()}"

    def _record(self, tokens: StepTokens | None, gap: str | None) -> None:
        self.tokens.append(tokens)
        if gap is not None:
            self.gaps.append(gap)

    def _submit_for_agent(self, event: ContextEvent) -> str:
        self._log(event)
        self._last = {}
        self._record(StepTokens([], [], []), None)  # the model wrote nothing: zero tokens, not unknown ones
        return episode.SUBMIT

    def token_counts(self) -> tuple[int | None, int | None]:
        """(prompt, completion) tokens over the episode's replies, from the server's `usage`; None
        where a reply came without that count."""
        def total(key: str) -> int | None:
            counts = [u.get(key) if isinstance(u, dict) else None for u in self.usage]
            return sum(counts) if all(isinstance(c, int) for c in counts) else None

        return total("prompt_tokens"), total("completion_tokens")

    def observe(self, observation: str, info: dict) -> None:
        message = self._last
        assistant = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        self.messages += [assistant] + _replies(message, info, observation)


def with_tokens(trajectory: credit.Trajectory, tokens: list[StepTokens | None],
                notes: dict[int, str] | None = None) -> credit.Trajectory:
    """The trajectory with each step's token offsets, ids and logprobs (steps without tokens keep
    none), and the context notes (`notes`: step -> text) added to their steps' observations."""
    notes = notes or {}
    steps = []
    for t, step in enumerate(trajectory.steps):
        tokens_t = tokens[t] if t < len(tokens) else None
        fields = {} if tokens_t is None else {"token_offsets": tokens_t.offsets, "token_ids": tokens_t.token_ids,
                                              "logprobs": tokens_t.logprobs}
        if t in notes:
            fields["observation"] = f"{step.observation or ''}\n\n{notes[t]}".lstrip("\n")
        steps.append(credit.Step.from_dict(step.to_dict(), **fields) if fields else step)
    return credit.Trajectory(task_id=trajectory.task_id, steps=steps, reward=trajectory.reward)


def run_episode(client: ChatClient, task: Task, max_steps: int = 30, isolation: str = "auto",
                interrupt: Interrupt | None = None, sample: int = 0) -> EpisodeOutcome:
    """Episode number `sample` of the served model on `task`. A request that fails for good or a
    malformed reply fails this episode only (the outcome's `error`)."""
    started = time.monotonic()
    env = CodeRepoEnv(tasks=[task], max_steps=max_steps, isolation=isolation, tool_schemas=False)
    policy = ChatPolicy(client, interrupt)
    try:
        result = episode.run_episode(env, policy, task)
    except Abandoned as exc:
        return EpisodeOutcome(task.id, None, error=str(exc), abandoned=True, sample=sample)
    except ClientError as exc:
        return EpisodeOutcome(task.id, None, error=str(exc), sample=sample)
    finally:
        env.close()
    trajectory = with_tokens(result.trajectory, policy.tokens[:len(result.trajectory.steps)], policy.notes)
    prompt, completion = policy.token_counts()
    return EpisodeOutcome(task.id, trajectory, result.resolved, result.steps, token_gaps=tuple(policy.gaps),
                          sample=sample, context_events=tuple(policy.context_events),
                          seconds=time.monotonic() - started, prompt_tokens=prompt, completion_tokens=completion)


def rollout(tasks: Sequence[Task], client: ChatClient, out: Path, episodes_per_task: int = 1, concurrency: int = 4,
            max_steps: int = 30, isolation: str = "auto", progress: bool = False,
            interrupt: Interrupt | None = None, records: bool = False, resume: bool = False) -> list[EpisodeOutcome]:
    """`episodes_per_task` episodes (samples 0, 1, ...) of the served model on each task,
    `concurrency` at a time; each finished trajectory is written to `out` (JSON lines) as it
    completes, and with `records` its `records.EpisodeRecord` beside it (`records.RolloutWriter`:
    an existing `out` is replaced when the first one is ready, and left as it was when none is).
    With `resume` (which needs `records`) the files are appended to, and the (task, sample) pairs
    they hold already are not played again.

    `interrupt` (pressed by Ctrl-C under `Interrupt.on_sigint`) stops the run early; the episodes it
    kept from starting are not among the outcomes. A KeyboardInterrupt or any other exception out
    of here first abandons the running episodes at their next request. Warns once when steps
    lack tokens or logprobs."""
    if episodes_per_task < 1 or concurrency < 1:
        raise ValueError("episodes_per_task and concurrency must be >= 1")
    if resume and not records:
        raise ValueError("resume needs records: they say which (task, sample) pairs are done")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    interrupt = interrupt or Interrupt()
    done_before = finished(out) if resume else set()
    queued = deque((task, k) for task in tasks for k in range(episodes_per_task) if (task.id, k) not in done_before)
    outcomes: list[EpisodeOutcome] = []
    writer = RolloutWriter(out, records=records, append=resume)
    bar = tqdm(total=len(queued), desc="rollouts", unit="episode", disable=not progress)
    with ThreadPoolExecutor(concurrency) as pool:
        running: set[Future] = set()
        try:
            while queued or running:
                while queued and len(running) < concurrency and not interrupt.stopping:
                    task, sample = queued.popleft()
                    running.add(pool.submit(run_episode, client, task, max_steps, isolation, interrupt, sample))
                if not running:
                    break
                done, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = future.result()
                    if outcome.trajectory is not None:
                        writer.write(outcome.trajectory, outcome.record(client.config.model))
                    outcomes.append(outcome)
                    bar.update()
                interrupt.tell(len(running))
        except BaseException:
            interrupt.abandon()  # else leaving the pool waits for every running episode to end
            raise
        finally:
            writer.close()
            bar.close()
    _warn_token_gaps(outcomes)
    return outcomes


def _warn_token_gaps(outcomes: list[EpisodeOutcome]) -> None:
    """One warning for the steps without tokens (credit has nothing to credit there) and one for
    those whose logprobs were incomplete (recorded as absent), each with what to do."""
    recorded = [o for o in outcomes if o.trajectory is not None]
    steps = sum(len(o.trajectory.steps) for o in recorded)
    gaps = Counter(gap for o in recorded for gap in o.token_gaps)
    untokenized = gaps[NO_LOGPROBS] + gaps[UNPLACED]
    if untokenized:
        causes = []
        if gaps[NO_LOGPROBS]:
            causes.append(f"{gaps[NO_LOGPROBS]} came without logprobs (a server that ignores logprobs=true; "
                          "vLLM gives them)")
        if gaps[UNPLACED]:
            causes.append(f"{gaps[UNPLACED]} held tool calls the client cannot place in the sampled text (not "
                          "Hermes <tool_call> blocks: a model that writes them would give exact tokens)")
        warnings.warn(f"code-gym rollout: {untokenized} of {steps} recorded steps have no tokens (token_offsets "
                      f"None), so credit gives them no per-token advantages: {'; '.join(causes)}. Pass the served "
                      "model's tokenizer (--tokenizer PATH; ClientConfig.tokenizer) to tokenize their text instead "
                      "(ids, no logprobs)", stacklevel=3)
    if gaps[PARTIAL]:
        warnings.warn(f"code-gym rollout: {gaps[PARTIAL]} of {steps} recorded steps came with a token that has no "
                      "numeric logprob; their logprobs are recorded as absent (None), not made up, so importance "
                      "ratios cannot use them. Check the server's logprobs output", stacklevel=3)
