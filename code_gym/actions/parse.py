"""Turn a policy's response into tool calls.

Accepted forms, in the order they are tried:
- Hermes / Qwen text: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one or more);
- OpenAI function calls given as dicts: ``{"name", "arguments"}``, ``{"type": "function", "function": {...}}``,
  an assistant message ``{"tool_calls": [...]}``, or a list of these;
- a fenced ``bash`` / ``sh`` block in plain text, run as the bash tool.

For text actions every string argument keeps a map from its decoded characters back to the
characters of the action string, so the environment can say which action characters wrote which
diff lines (provenance), even when the code travelled as an escaped JSON string.

The parser is bounded: a response of at most `MAX_ACTION_CHARS` characters, `MAX_CALLS` tool
calls, JSON nested at most `MAX_JSON_DEPTH` deep with at most `MAX_JSON_VALUES` values a call,
plain JSON values only (integers of 64 bits). Past a limit the response is a format error that
names the limit and what to send instead, never an exception.
"""
from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"```(?:bash|sh|shell)[ \t]*\n(.*?)```", re.DOTALL)

MAX_ACTION_CHARS = 1_000_000  # a response's length: the action space's (CodeRepoEnv.action_space)
MAX_CALLS = 32  # tool calls in one response
MAX_JSON_DEPTH = 32  # nesting of a call's JSON; arguments are flat (strings, integers, lists of them)
MAX_JSON_VALUES = 10_000  # values in one call's JSON
_JSON_TOKEN_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)  # strings and brackets

FORMAT_HELP = (
    'Call a tool as <tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call> '
    "(several calls per response are allowed), or put one shell command in a ```bash fenced block."
)


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    # argument name -> absolute index in the action string of each decoded character (+ one past the end)
    offsets: dict[str, Sequence[int]] = field(default_factory=dict)
    # the whole call's (start, end) in the action text, tool name included (None: not from text)
    span: tuple[int, int] | None = None

    def action_span(self, arg: str, start: int, end: int) -> tuple[int, int] | None:
        """Characters [start, end) of argument `arg`, as a span of the action string (None if unknown)."""
        table = self.offsets.get(arg)
        if table is None or not 0 <= start <= end < len(table):
            return None
        return table[start], table[end]


@dataclass
class Parsed:
    calls: list[ToolCall]
    errors: list[str]
    # the text the calls' spans and offsets index: the action itself, or for tool-call dicts their
    # canonical text (`canonical_text`); None when dicts could not be rendered (format errors)
    text: str | None = None


def _depth_error(text: str) -> str | None:
    """An error when JSON text nests deeper than MAX_JSON_DEPTH (read before decoding: the decoder
    recurses once per level)."""
    depth = 0
    for token in _JSON_TOKEN_RE.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return (f"the tool call nests JSON more than {MAX_JSON_DEPTH} levels deep (the limit); tool arguments "
                        f"are flat: strings, integers and lists of them")
        elif bracket in "]}":
            depth -= 1
    return None


def _value_error(value: Any, what: str = "the tool call") -> str | None:
    """An error when `value` (`what`) is not plain JSON data within the limits: dicts with str keys,
    lists, str, int of 64 bits, float, bool, None; at most MAX_JSON_DEPTH deep, MAX_JSON_VALUES values
    and MAX_ACTION_CHARS characters of strings."""
    stack, count, chars = [(value, what, 1)], 0, 0
    while stack:
        item, where, depth = stack.pop()
        count += 1
        if count > MAX_JSON_VALUES:
            return (f"{what} holds more than {MAX_JSON_VALUES:,} JSON values (the limit); tool arguments are "
                    f"flat: strings, integers and lists of them")
        if depth > MAX_JSON_DEPTH:
            return (f"{what} nests more than {MAX_JSON_DEPTH} levels deep (the limit); tool arguments are "
                    f"flat: strings, integers and lists of them")
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    return f"{where} has a key of type {type(key).__name__}; JSON object keys are strings"
                chars += len(key)
                stack.append((sub, f"{where}[{shown_text(key)!r}]", depth + 1))
        elif isinstance(item, (list, tuple)):
            stack += [(sub, f"{where}[{k}]", depth + 1) for k, sub in enumerate(item)]
        elif isinstance(item, str):
            chars += len(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not -(1 << 63) <= item < 1 << 63:
            return f"the integer at {where} does not fit in 64 bits; pass a smaller number"
        elif not isinstance(item, (int, float, bool)) and item is not None:
            return f"{where} is a {type(item).__name__}; tool calls hold JSON values only (str, int, float, bool, None, lists, objects)"
        if chars > MAX_ACTION_CHARS:
            return (f"{what} holds more than {MAX_ACTION_CHARS:,} characters (the limit); write a large file in "
                    f"parts: create it with the first part, then add the rest with insert")
    return None


def _loads(text: str) -> Any:
    """json.loads within the bounds; ValueError says what was wrong."""
    error = _depth_error(text)
    if error is None:
        value = json.loads(text)
        error = _value_error(value)
    if error is not None:
        raise ValueError(error)
    return value


def shown_text(text: str, limit: int = 60) -> str:
    """Agent text as an error message shows it: its first `limit` characters, and its length."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def action_repr(action: Any) -> str:
    """An action that is not text, for records: its repr when it is plain JSON data within the
    limits, else its type and what was wrong (a repr could recurse past the stack, or refuse an
    int of 5,000 digits)."""
    error = _value_error(action, "the action")
    return repr(action) if error is None else f"<{type(action).__name__}: {error}>"


def render_call(name: str, arguments: Any) -> str:
    """One tool call as the Hermes / Qwen `<tool_call>` block: the canonical text of a function call
    (the model client renders served tool calls this way, and dict actions are parsed over it)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _function(item: Any) -> tuple[str | None, Any]:
    if isinstance(item, dict) and item.get("type") == "function" and isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item, dict):
        return None, None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = _loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    return item.get("name"), arguments


def canonical_text(action: Any) -> str:
    """The canonical text of an assistant turn given as OpenAI objects (a function call, a list of
    them, or a message with `content` and `tool_calls`): its content, then each call as
    `render_call` writes it, joined by newlines. Text is returned as it is."""
    if isinstance(action, str):
        return action
    parts: list[str] = []
    for item in action if isinstance(action, list) else [action]:
        if isinstance(item, dict) and isinstance(item.get("tool_calls"), list):
            if isinstance(item.get("content"), str):
                parts.append(item["content"])
            parts.append(canonical_text(item["tool_calls"]))
            continue
        name, arguments = _function(item)
        parts.append(render_call(name, arguments))
    return "\n".join(p for p in parts if p)


def _decoded_offsets(raw: str, base: int) -> list[int]:
    """For the raw (escaped) content of a JSON string starting at `base`, the action index of each decoded char."""
    out: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        out.append(base + i)
        if raw[i] != "\\":
            i += 1
        elif raw[i + 1 : i + 2] != "u":
            i += 2
        else:
            code = int(raw[i + 2 : i + 6], 16)
            pair = 0xD800 <= code < 0xDC00 and raw[i + 6 : i + 8] == "\\u"
            i += 12 if pair else 6
    out.append(base + n)
    return out


class _SpanDecoder(json.JSONDecoder):
    """A JSON decoder that records the raw span of every string value it decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: list[tuple[int, int, str]] = []

        def parse_string(s: str, end: int, strict: bool = True):
            value, stop = json.decoder.scanstring(s, end, strict)
            self.strings.append((end, stop - 1, value))
            return value, stop

        self.parse_string = parse_string
        self.scan_once = json.scanner.py_make_scanner(self)


def _parse_json_call(text: str, base: int) -> tuple[ToolCall | None, str | None]:
    decoder = _SpanDecoder()
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    error = _depth_error(stripped)
    if error is not None:
        return None, error
    try:
        obj, _ = decoder.raw_decode(stripped)
    except json.JSONDecodeError as exc:
        return None, f"the tool call is not valid JSON ({exc.msg} at char {exc.pos}); {FORMAT_HELP}"
    except ValueError as exc:  # a number the decoder refuses (an int of more than 4,300 digits)
        return None, f"the tool call is not valid JSON ({exc}); {FORMAT_HELP}"
    error = _value_error(obj)
    if error is not None:
        return None, error
    call, error = _call_from_dict(obj)
    if call is None:
        return None, error
    args = obj.get("arguments", obj.get("parameters"))
    if isinstance(args, dict):
        unused: dict[str, deque[int]] = defaultdict(deque)  # decoded text -> its strings, in order
        for k, (_, _, decoded) in enumerate(decoder.strings):
            unused[decoded].append(k)
        for key, value in args.items():
            if isinstance(value, str) and unused.get(value):
                start, stop, _ = decoder.strings[unused[value].popleft()]
                call.offsets[key] = _decoded_offsets(stripped[start:stop], base + lead + start)
    return call, None


def _call_from_dict(obj: Any) -> tuple[ToolCall | None, str | None]:
    if not isinstance(obj, dict):
        return None, f"a tool call must be a JSON object with 'name' and 'arguments'; {FORMAT_HELP}"
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None, f"the tool call has no 'name'; {FORMAT_HELP}"
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = _loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return None, f"the arguments of '{shown_text(name)}' are not valid JSON ({exc.msg}); pass a JSON object"
        except ValueError as exc:
            return None, f"the arguments of '{shown_text(name)}': {exc}"
    if not isinstance(args, dict):
        return None, f"the arguments of '{shown_text(name)}' must be a JSON object, got {type(args).__name__}"
    return ToolCall(name=name, arguments=dict(args)), None


def _parse_objects(action: Any) -> Parsed:
    items = action if isinstance(action, list) else [action]
    calls, errors = [], []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("tool_calls"), list):
            sub = _parse_objects(item["tool_calls"])
            calls += sub.calls
            errors += sub.errors
            continue
        call, error = _call_from_dict(item)
        if call:
            calls.append(call)
        else:
            errors.append(error)
    return Parsed(calls, errors)


def _too_many(count: int) -> Parsed:
    return Parsed([], [f"the response has {count} tool calls and the limit is {MAX_CALLS}: none ran; send at most "
                       f"{MAX_CALLS} calls per response and the rest in the next steps"])


def parse_action(action: Any) -> Parsed:
    """Parse a response (str) or tool-call object(s) into tool calls plus format errors."""
    if not isinstance(action, str):
        if isinstance(action, (dict, list)):
            error = _value_error(action, "the action")
            if error is not None:
                return Parsed([], [error])
            parsed = _parse_objects(action)
            if len(parsed.calls) + len(parsed.errors) > MAX_CALLS:
                return _too_many(len(parsed.calls) + len(parsed.errors))
            if parsed.errors or not parsed.calls:
                return parsed
            text = canonical_text(action)
            again = parse_action(text)
            same = [(c.name, c.arguments) for c in again.calls] == [(c.name, c.arguments) for c in parsed.calls]
            return again if same and not again.errors else parsed
        return Parsed([], [f"an action must be response text or a tool-call dict, got {type(action).__name__}"])
    if len(action) > MAX_ACTION_CHARS:
        return Parsed([], [f"the response is {len(action):,} characters and the limit is {MAX_ACTION_CHARS:,}: "
                           f"nothing ran; write a large file in parts (create it with the first part, then add "
                           f"the rest with insert)"])
    blocks = action.count("<tool_call>")
    if blocks > MAX_CALLS:
        return _too_many(blocks)
    calls, errors = [], []
    for match in _TOOL_CALL_RE.finditer(action):
        call, error = _parse_json_call(match.group(1), match.start(1))
        if call:
            call.span = (match.start(), match.end())
            calls.append(call)
        else:
            errors.append(error)
    if calls or errors:
        return Parsed(calls, errors, action)
    for match in _FENCE_RE.finditer(action):
        command = match.group(1)
        offsets = range(match.start(1), match.end(1) + 1)
        calls.append(ToolCall("bash", {"command": command}, {"command": offsets}, (match.start(), match.end())))
    if len(calls) > MAX_CALLS:
        return _too_many(len(calls))
    if not calls:
        errors.append(f"no tool call found in the response. {FORMAT_HELP}")
    return Parsed(calls, errors, action)
