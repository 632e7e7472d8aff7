"""Which tool call of a step made which changed line, and which characters of the action wrote it.

The environment snapshots the workspace after each call that may write (`Workspace.scan_changes`),
so every changed line of the step's diff is attributed to the call that made it (`line_calls`).
Its characters in the action (`provenance`, added lines) are the written text where the line
appears in that call: the editor tools' `new_str` / `file_text`, or for `bash` a heredoc body, a
quoted string (printf, echo), a Python string literal inside a `python -c` script or heredoc,
with shell, printf and Python escapes decoded and JSON escapes mapped back. A line written
nowhere as a line (a partial-line `new_str`, a computed line) gets no span: credit places it on
its call's edit argument through `line_calls`. Each call's span (`calls`) and its
edit arguments (`edits`) are reported too; `credit.Step` takes all four (docs/credit.md). A call's
edit arguments of a kind are the texts that hold its lines of that kind: `new_str` / `file_text`
(added), `old_str` (deleted); for `bash` the bodies that hold them (a heredoc, a script's old and new string), or the
whole command when some line of that kind is in none (`sed`, a computed line). credit searches a
deleted line only inside its call's deleted edit arguments.
"""
from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from code_gym.actions.parse import ToolCall
from code_gym.util.linediff import BoundedMatcher
from code_gym.workspace.diffs import FileDiff, text_lines

# tools that never change the workspace: no snapshot after them
READ_ONLY_TOOLS = frozenset({"view", "search", "submit"})
# editor tools: argument -> kind of the text it holds
EDITOR_ARGS = {"create": (("file_text", "added"),), "insert": (("new_str", "added"),),
               "str_replace": (("new_str", "added"), ("old_str", "deleted"))}

_HEREDOC_RE = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_PY_STRING_RE = re.compile(r"""(?i:[rbuf]{0,2})('''|\"\"\"|'|")""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}


@dataclass
class Body:
    """A text a command writes from its own characters: `text[i]` came from `command[offsets[i]]`
    (offsets has one more entry: one past the end). `outer` is the raw (undecoded) span it lies in."""
    text: str
    offsets: Sequence[int]
    outer: tuple[int, int]


@dataclass
class Transition:
    """One call's change to the workspace: the snapshot after it and the paths it changed."""
    call: int
    snapshot: Any
    paths: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# texts a bash command writes from its own characters


def _heredocs(command: str) -> tuple[list[Body], list[tuple[int, int]]]:
    bodies, skip = [], []
    pos = 0
    while True:
        m = _HEREDOC_RE.search(command, pos)
        if m is None:
            break
        line_end = command.find("\n", m.end())
        if line_end < 0:
            break
        start = line_end + 1
        strip_tabs, delim = m.group(1) == "-", m.group(3)
        at, end = start, len(command)
        stop = len(command)
        while at <= len(command):
            nl = command.find("\n", at)
            line = command[at: nl if nl >= 0 else len(command)]
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                end, stop = at, nl if nl >= 0 else len(command)
                break
            if nl < 0:
                break
            at = nl + 1
        text = command[start:end]
        bodies.append(Body(text, range(start, end + 1), (start, end)))
        skip.append((start, stop))
        pos = stop
    return bodies, skip


def _shell_strings(command: str, skip: list[tuple[int, int]]) -> list[Body]:
    """Quoted words outside heredoc bodies: '...' (literal), "..." (\\ " $ ` escapes), $'...' (C escapes)."""
    out, i, n = [], 0, len(command)
    skips = deque(sorted(skip))
    while i < n:
        if skips and skips[0][0] <= i:
            i = max(i, skips.popleft()[1])
            continue
        c = command[i]
        if c == "\\":
            i += 2
        elif c == "#" and (i == 0 or command[i - 1] in " \t\n;&|("):
            nl = command.find("\n", i)
            i = n if nl < 0 else nl
        elif c == "'" and i > 0 and command[i - 1] == "$":
            body, i = _decode(command, i + 1, "'")
            out.append(body)
        elif c == "'":
            end = command.find("'", i + 1)
            end = n if end < 0 else end
            out.append(Body(command[i + 1:end], range(i + 1, end + 1), (i + 1, end)))
            i = end + 1
        elif c == '"':
            body, i = _decode(command, i + 1, '"', shell=True)
            out.append(body)
        else:
            i += 1
    return out


def _decode(s: str, i: int, quote: str, shell: bool = False) -> tuple[Body, int]:
    """Decode from s[i] to the closing `quote`: (the body, the index after the quote)."""
    text, offsets, start, n = [], [], i, len(s)
    q = len(quote)
    while i < n and s[i:i + q] != quote:
        if s[i] == "\\" and i + 1 < n:
            nxt = s[i + 1]
            if nxt != "\n":  # a backslash-newline continues the line: it writes nothing
                value = (nxt if nxt in '"\\$`' else None) if shell else _ESCAPES.get(nxt)
                if value is None:  # not an escape: the backslash stands for itself
                    text.append("\\"), offsets.append(i)
                    i += 1
                    continue
                text.append(value), offsets.append(i)
            i += 2
            continue
        text.append(s[i]), offsets.append(i)
        i += 1
    offsets.append(i)
    return Body("".join(text), offsets, (start, i)), i + q


def _escaped(body: Body) -> Body | None:
    """The body with printf / echo -e / Python backslash escapes decoded (None when it has none)."""
    if "\\" not in body.text:
        return None
    inner, _ = _decode(body.text + "\0", 0, "\0")
    return Body(inner.text, [body.offsets[k] for k in inner.offsets], body.outer)


def _python_strings(body: Body) -> list[Body]:
    """String literals of Python code in the body (a `python -c` script, a heredoc), decoded."""
    out, text, pos = [], body.text, 0
    # quote -> the last newline of the last quote of its kind that opened no one-line literal: every
    # quote of that kind before it is escaped and would read up to the same end, across that newline
    # (without this, "'\\'\\'\\'...\n" is read to its end from each quote: quadratic)
    unclosed: dict[str, int] = {}
    while True:
        m = _PY_STRING_RE.search(text, pos)
        if m is None:
            return out
        quote = m.group(1)
        raw = "r" in m.group(0)[:-len(quote)].lower()
        start = m.end()
        if len(quote) == 1 and not raw and m.start(1) < unclosed.get(quote, -1):
            pos = start
            continue
        if raw:
            end = text.find(quote, start)
            end = len(text) if end < 0 else end
            inner = Body(text[start:end], range(start, end + 1), (start, end))
            nxt = end + len(quote)
        else:
            inner, nxt = _decode(text, start, quote)
        if len(quote) == 1 and "\n" in text[start:min(nxt, len(text))]:
            pos = start  # not a one-line literal: an apostrophe in a comment or text
            if not raw:
                unclosed[quote] = text.rfind("\n", start, min(nxt, len(text)))
            continue
        out.append(Body(inner.text, [body.offsets[min(k, len(body.offsets) - 1)] for k in inner.offsets], body.outer))
        pos = max(nxt, start + 1)


# a backslash always starts an escape: one parse of any text, never exponential backtracking
_SED_RE = re.compile(r"s([/|#,:@!])((?:\\.|(?!\1)[^\\])*)\1((?:\\.|(?!\1)[^\\])*)\1[gIip0-9]*;?$", re.S)


def _sed_parts(body: Body) -> list[Body]:
    """A quoted `s/old/new/` sed expression's old text and new text, backslash escapes decoded
    (the text a deleted line held, and what it became)."""
    m = _SED_RE.fullmatch(body.text.strip())
    if m is None:
        return []
    lead = len(body.text) - len(body.text.lstrip())
    out = []
    for g in (2, 3):
        text, offsets, i, end = [], [], lead + m.start(g), lead + m.end(g)
        while i < end:
            k = i + 1 if body.text[i] == "\\" and i + 1 < end else i
            text.append(body.text[k]), offsets.append(body.offsets[i])
            i = k + 1
        offsets.append(body.offsets[end])
        out.append(Body("".join(text), offsets, (body.offsets[lead + m.start(g)], body.offsets[end])))
    return out


def bash_bodies(command: str) -> list[Body]:
    """The texts a bash command may write from its own characters, most literal first: heredoc
    bodies, quoted words, the old and new texts of `s/old/new/` sed expressions, then the same
    with printf / Python escapes decoded, then the string literals of Python code in them."""
    heredocs, skip = _heredocs(command)
    first = heredocs + _shell_strings(command, skip)
    first += [part for b in first for part in _sed_parts(b)]
    out = list(first)
    out += [b for b in map(_escaped, first) if b is not None]
    for b in first:
        if "(" in b.text or "\n" in b.text:
            out += _python_strings(b)
    return out


# ---------------------------------------------------------------------------------------------
# which call made which line


def _lines(data: bytes | None) -> list[str]:
    if not data:
        return []
    return text_lines(data.decode("utf-8", errors="replace"))


def attribute(ws: Any, before: Any, transitions: list[Transition], diffs: list[FileDiff],
              default_call: int) -> list[tuple[str, str, int, int]]:
    """(path, kind, line, call) for every changed line of `diffs` (the step's diff from `before`):
    each file's lines are followed through the snapshots after each call, so an added line goes to
    the call that wrote it and a deleted line to the call that removed it. Lines the alignment
    cannot follow (a moved line) go to the last call that changed the file."""
    touched: dict[str, list[Transition]] = defaultdict(list)
    for t in transitions:
        for path in t.paths:
            touched[path].append(t)
    out: list[tuple[str, str, int, int]] = []
    for diff in diffs:
        if not diff.added and not diff.removed:
            continue
        path = diff.path
        steps = touched.get(path) or touched.get(diff.old_path or "", [])
        last_call = steps[-1].call if steps else default_call
        if len(steps) <= 1:
            out += [(path, "added", n, last_call) for n, _ in diff.added]
            out += [(path, "deleted", n, last_call) for n, _ in diff.removed]
            continue
        state = _lines(ws.content(before, path))
        tags: list[tuple[bool, int]] = [(False, k + 1) for k in range(len(state))]  # (written by a call?, id)
        deleted_by: dict[int, int] = {}
        for t in steps:
            new = _lines(ws.content(t.snapshot, path))
            matcher = BoundedMatcher(state, new)
            new_tags: list[tuple[bool, int]] = []
            for op, a1, a2, b1, b2 in matcher.get_opcodes():
                if op == "equal":
                    new_tags += tags[a1:a2]
                    continue
                for by_call, ident in tags[a1:a2]:
                    if not by_call:
                        deleted_by[ident] = t.call
                new_tags += [(True, t.call)] * (b2 - b1)
            state, tags = new, new_tags
        for n, _ in diff.added:
            by_call, ident = tags[n - 1] if n - 1 < len(tags) else (False, 0)
            out.append((path, "added", n, ident if by_call else last_call))
        out += [(path, "deleted", n, deleted_by.get(n, last_call)) for n, _ in diff.removed]
    return out


# ---------------------------------------------------------------------------------------------
# character spans


def _arg_span(call: ToolCall, arg: str) -> tuple[int, int] | None:
    table = call.offsets.get(arg)
    return (table[0], table[-1]) if table else None


class _CallText:
    """The lines a call wrote, by text, with their action spans (first-come), and its fallbacks."""

    def __init__(self, call: ToolCall, index: int):
        self.index = index
        self.exact: dict[str, deque] = defaultdict(deque)
        self.stripped: dict[str, deque] = defaultdict(deque)
        self.edits: list[tuple[int, str, int, int]] = []
        self.fallback = call.span or (0, 0)
        self.body_of: dict[tuple[int, int], tuple[int, int]] = {}  # line span -> edit span holding it
        self._queued: set[tuple[int, str, tuple[int, int]]] = set()  # (table, key, span) already queued
        if call.name in EDITOR_ARGS:
            for arg, kind in EDITOR_ARGS[call.name]:
                span = _arg_span(call, arg)
                if span is None:
                    continue
                self.edits.append((index, kind, *span))
                if kind == "added":
                    self._add_lines(call.arguments.get(arg, ""), lambda a, b, arg=arg: call.action_span(arg, a, b),
                                    span)
            added = [e for e in self.edits if e[1] == "added" and e[3] > e[2]]
            if added:
                self.fallback = added[0][2:]
        elif call.name == "bash" and isinstance(call.arguments.get("command"), str):
            command = call.arguments["command"]
            span = _arg_span(call, "command")
            if span is not None:
                self.fallback = span
                for body in bash_bodies(command):
                    outer = call.action_span("command", body.outer[0], body.outer[1])
                    if outer is None:
                        continue
                    self._add_lines(body.text, lambda a, b, body=body: call.action_span(
                        "command", body.offsets[a], body.offsets[b]), outer)

    def _add_lines(self, text: str, span_of, outer: tuple[int, int]) -> None:
        pos = 0
        for line in text.split("\n"):
            span = span_of(pos, pos + len(line.rstrip()))
            pos += len(line) + 1
            if span is None or not line.strip():
                continue
            for kind, (table, key) in enumerate(((self.exact, line.rstrip()), (self.stripped, line.strip()))):
                if (kind, key, span) not in self._queued:
                    self._queued.add((kind, key, span))
                    table[key].append(span)
            self.body_of.setdefault(span, outer)

    def holder(self, text: str) -> tuple[int, int] | None:
        """The edit argument (a quoted string, a heredoc body) that holds a line of this text, if any."""
        for table, key in ((self.exact, text.rstrip()), (self.stripped, text.strip())):
            queue = table.get(key)
            if queue:
                return self.body_of.get(queue[0])
        return None

    def locate(self, text: str) -> tuple[tuple[int, int], tuple[int, int] | None]:
        """(the span of an added line of this text, the edit argument holding it or None)."""
        for table, key in ((self.exact, text.rstrip()), (self.stripped, text.strip())):
            queue = table.get(key)
            if queue:
                span = queue.popleft() if len(queue) > 1 else queue[0]
                return span, self.body_of.get(span)
        return self.fallback, None


def call_provenance(calls: list[ToolCall], diffs: list[FileDiff],
                    line_calls: list[tuple[str, str, int, int]]) -> dict[str, list]:
    """The step's `calls`, `edits`, `line_calls` and `provenance` (lists of dicts, see the module
    docstring and `credit.Step`)."""
    texts = [_CallText(c, k) for k, c in enumerate(calls)]
    by_line = {(p, kind, n): c for p, kind, n, c in line_calls}
    provenance: list[dict] = []
    held: dict[int, dict[tuple[int, int], None]] = defaultdict(dict)  # call -> bodies that wrote its lines, in order
    loose: set[tuple[int, str]] = set()  # (call, kind) with a line no body holds: its edit is the command
    kinds: dict[int, set[str]] = defaultdict(set)
    for p, kind, _, c in line_calls:
        kinds[c].add(kind)
    for diff in diffs:
        for n, text in diff.added:
            c = by_line.get((diff.path, "added", n))
            if c is None or c >= len(texts):
                continue
            span, outer = texts[c].locate(text) if text.strip() else ((texts[c].fallback[0],) * 2, None)
            if outer is None and text.strip():
                # not written as a line (sed, a computed line): no span; credit places it on the
                # call's edit argument (`edits`) through `line_calls`, below the lines' own spans
                loose.add((c, "added"))
                continue
            if outer is not None:
                held[c].setdefault(outer)
            provenance.append({"path": diff.path, "line": n, "start": span[0], "end": span[1]})
    # the bodies of a bash call that hold the text of lines it deleted (a Python script's old string)
    held_deleted: dict[int, dict[tuple[int, int], None]] = defaultdict(dict)
    for diff in diffs:
        for n, text in diff.removed:
            c = by_line.get((diff.path, "deleted", n))
            if c is None or c >= len(texts) or calls[c].name in EDITOR_ARGS or not text.strip():
                continue
            outer = texts[c].holder(text)
            if outer is None:
                loose.add((c, "deleted"))
            else:
                held_deleted[c].setdefault(outer)
    edits: list[tuple[int, str, int, int]] = []
    for k, (call, ct) in enumerate(zip(calls, texts)):
        edits += ct.edits
        if call.name in EDITOR_ARGS:
            continue
        # bash and other tools: the bodies that wrote (held) lines, else the command, for each kind it changed
        for kind, bodies in (("added", list(held[k])), ("deleted", sorted(held_deleted[k]))):
            if kind in kinds[k]:
                whole = (k, kind) in loose or not bodies
                edits += [(k, kind, *ct.fallback)] if whole else [(k, kind, *b) for b in bodies]
    return {
        "calls": [{"start": c.span[0], "end": c.span[1]} if c.span else {"start": 0, "end": 0} for c in calls],
        "edits": [{"call": c, "kind": kd, "start": s, "end": e} for c, kd, s, e in edits],
        "line_calls": [{"path": p, "kind": kd, "line": n, "call": c} for p, kd, n, c in line_calls],
        "provenance": provenance,
    }
