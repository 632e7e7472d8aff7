"""The agent's tools: each one's name, JSON schema and implementation declared together (`@tool`).

Editor tools (view, create, str_replace, insert) follow the str_replace editor that SWE-agent /
OpenHands-trained models know: paths relative to the repository root, line-numbered views, and
str_replace only when `old_str` occurs exactly once. Shell-like tools run in the sandbox.
"""
from __future__ import annotations

import errno
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from code_gym import languages
from code_gym.grading import records as run_records
from code_gym.actions.parse import ToolCall, shown_text
from code_gym.grading.grade import RESULTS_DIR
from code_gym.util.hostfs import make_dirs_beneath, owned_prefix, read_beneath, write_beneath
from code_gym.workspace.diffs import quote_path
from code_gym.sandbox.base import Sandbox
from code_gym.sandbox.records import new_nonce

MAX_VIEW_CHARS = 16_000
SNIPPET_LINES = 4
MAX_PATH_BYTES = 4096  # PATH_MAX
MAX_PATTERN_CHARS = 4096  # a search pattern's length
SHOWN_LINES = 20  # line numbers an error lists


_TYPES = {"string": str, "integer": int, "array": list, "object": dict, "boolean": bool}


@dataclass
class WrittenLine:
    """A line a tool wrote from the action's own text: file, the line, its span in the action."""
    path: str
    text: str
    span: tuple[int, int]


@dataclass(frozen=True)
class RunRecords:
    """What a `run_tests` call measured, the way grading measures it: per-test outcomes by node id
    from the records the grader's plugin streamed out of the run, checked against pytest's junit XML
    and the exit code (never pytest's printed text, which the code under test can print too)."""
    tests: dict[str, str]
    exit_code: int | None
    timed_out: bool


@dataclass
class ToolResult:
    output: str
    error: bool = False
    submitted: bool = False
    written: list[WrittenLine] = field(default_factory=list)
    records: RunRecords | None = None  # run_tests only


class ToolError(Exception):
    """A bad tool call; the message tells the agent what to do instead."""


@dataclass
class ToolContext:
    root: Path
    sandbox: Sandbox
    visible_tests: tuple[str, ...]
    test_command: str = "python -m pytest"
    command_timeout: float = 30.0
    test_timeout: float = 60.0
    language: str = "python"  # the task's language (code_gym.languages): how run_tests runs and reads tests


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what the model is told (description, JSON-schema properties and required
    arguments) and its implementation, declared together with `@tool(...)`."""
    name: str
    description: str
    properties: dict[str, dict]
    required: tuple[str, ...]
    run: Callable[[ToolContext, ToolCall], ToolResult]

    @property
    def schema(self) -> dict:
        """The OpenAI function-tool schema."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": {
            "type": "object", "properties": self.properties, "required": list(self.required)}}}


REGISTRY: dict[str, Tool] = {}


def tool(name: str, description: str, properties: dict[str, dict] | None = None, required: tuple[str, ...] = ()):
    """Register the decorated function as the tool `name` with its schema."""
    def register(run: Callable[[ToolContext, ToolCall], ToolResult]) -> Callable[[ToolContext, ToolCall], ToolResult]:
        REGISTRY[name] = Tool(name, description, properties or {}, tuple(required), run)
        return run
    return register


def validate(call: ToolCall) -> None:
    """Check the call names a tool and its arguments have the schema's names and types, and hold
    text the host can pass on: UTF-8, and no NUL character in a command, path or pattern."""
    if call.name not in REGISTRY:
        raise ToolError(f"unknown tool '{shown_text(call.name)}'; the tools are: {', '.join(TOOL_NAMES)}")
    spec = REGISTRY[call.name]
    for req in spec.required:
        if req not in call.arguments:
            raise ToolError(f"'{call.name}' needs the argument '{req}'")
    for key, value in call.arguments.items():
        if key not in spec.properties:
            raise ToolError(f"'{call.name}' has no argument '{shown_text(key)}'; its arguments are: "
                            f"{', '.join(spec.properties) or 'none'}")
        want = spec.properties[key]["type"]
        if not isinstance(value, _TYPES[want]) or (want == "integer" and isinstance(value, bool)):
            raise ToolError(f"argument '{key}' of '{call.name}' must be {want}, got {type(value).__name__}")
        for text in (value if isinstance(value, list) else [value]):
            if isinstance(text, str):
                _check_text(call.name, key, text)


def _check_text(tool: str, key: str, text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(f"argument '{key}' of '{tool}' holds {text[exc.start]!r} at character {exc.start}, a lone "
                            f"surrogate that is not Unicode text; send valid Unicode (a JSON \\ud83d\\ude00 pair, "
                            f"not half of one)") from None
    if "\0" in text and key not in _TEXT_ARGUMENTS:
        raise ToolError(f"argument '{key}' of '{tool}' holds a NUL character (at {text.index(chr(0))}), which no "
                        f"command, path or pattern can hold; in bash, write one with printf '\\0'")


def resolve(ctx: ToolContext, path: str, must_exist: bool = True) -> Path:
    """A host path inside the workspace, or a ToolError (outside, through a symlink, missing)."""
    if path in ("", "."):
        return ctx.root
    if len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise ToolError(f"the path is {len(path.encode('utf-8', 'surrogateescape')):,} bytes and the limit is "
                        f"{MAX_PATH_BYTES} (PATH_MAX); use a shorter path")
    for prefix in (ctx.sandbox.workdir, str(ctx.root)):
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            path = path[len(prefix):].lstrip("/") or "."
            break
    if os.path.isabs(path):
        raise ToolError(f"{path}: outside the repository; use a path relative to the repository root")
    full = (ctx.root / path)
    real = Path(os.path.realpath(full))
    root = Path(os.path.realpath(ctx.root))
    if real != root and root not in real.parents:
        raise ToolError(f"{path}: resolves outside the repository; use a path inside it")
    if must_exist and not (full.exists()):
        raise ToolError(f"{path}: no such file or directory")
    return full


def _rel(ctx: ToolContext, full: Path) -> str:
    return full.relative_to(ctx.root).as_posix()


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start=first))


def _beneath(ctx: ToolContext, full: Path) -> tuple[Path, str]:
    """(the workspace, `full` relative to it) for the hostfs *_beneath calls: the kernel keeps every
    step of the path, links included, inside the workspace as it opens it, so a link or folder
    swapped in after `resolve` checked the path cannot turn the host's read or write outside."""
    return ctx.root, _rel(ctx, full)


def _read_text(ctx: ToolContext, full: Path, shown: str) -> str:
    try:  # never a FIFO (an open would block the host), a socket or a device; never outside the workspace
        data = read_beneath(*_beneath(ctx, full))
    except OSError as exc:
        if full.exists() and not full.is_file():
            raise ToolError(f"{shown}: is not a regular file; inspect it with bash (e.g. `ls -l {shown}`)") from None
        if exc.errno == errno.EXDEV:
            raise ToolError(f"{shown}: resolves outside the repository; use a path inside it") from None
        raise ToolError(f"{shown}: cannot be read: {exc.strerror or exc}") from None
    if b"\0" in data[:8192]:
        raise ToolError(f"{shown}: is a binary file; inspect it with bash (e.g. `xxd {shown} | head`)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown}: is not UTF-8 text; inspect it with bash") from None


def _written(call: ToolCall, arg: str, rel: str, text: str) -> list[WrittenLine]:
    out, pos = [], 0
    for line in text.split("\n"):
        span = call.action_span(arg, pos, pos + len(line))
        if span is not None and line.strip():
            out.append(WrittenLine(rel, line, span))
        pos += len(line) + 1
    return out


_PATH = {"type": "string", "description": "Path relative to the repository root."}
_TEXT_ARGUMENTS = frozenset({"file_text", "old_str", "new_str"})  # file content: any text, NUL included


@tool("bash", "Run a bash command in the repository (no network). Output is truncated when long.",
      {"command": {"type": "string", "description": "The command to run."}}, ("command",))
def tool_bash(ctx: ToolContext, call: ToolCall) -> ToolResult:
    result = ctx.sandbox.exec(call.arguments["command"], timeout=ctx.command_timeout)
    text = result.describe() or "(no output)"
    if result.timed_out:  # every backend kills what a command leaves, so backgrounding cannot dodge the limit
        tests = (f", or run tests with the run_tests tool (limit {ctx.test_timeout:g}s)"
                 if ctx.test_timeout > ctx.command_timeout else "")
        text += (f"\n[the limit is {ctx.command_timeout:g}s per command, and every process a command starts "
                 f"(a background job too) ends with it: run something quicker, such as fewer tests or a smaller "
                 f"input{tests}]")
    return ToolResult(text, error=result.timed_out)


@tool("view", "Show a file with line numbers, or list a directory two levels deep.",
      {"path": _PATH, "view_range": {"type": "array", "items": {"type": "integer"},
                                     "description": "Optional [start, end] lines, 1-based; end -1 means the last line."}},
      ("path",))
def tool_view(ctx: ToolContext, call: ToolCall) -> ToolResult:
    path = call.arguments["path"]
    full = resolve(ctx, path)
    if full.is_dir():
        entries = []
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            depth = len(Path(dirpath).relative_to(full).parts)
            if depth >= 2:
                dirnames[:] = []
            for name in sorted(filenames):
                if not name.startswith("."):
                    entries.append(quote_path(_rel(ctx, Path(dirpath) / name)))  # one line a name, as git writes it
        text = "\n".join(entries) or "(empty directory)"
        if len(text) > MAX_VIEW_CHARS:
            text = text[:MAX_VIEW_CHARS] + "\n[... listing truncated: view a subfolder, or search with bash (find, ls) ...]"
        return ToolResult(text)
    lines = _read_text(ctx, full, path).split("\n")
    rng = call.arguments.get("view_range")
    first, last = 1, len(lines)
    if rng is not None:
        if len(rng) != 2 or not all(isinstance(v, int) for v in rng):
            raise ToolError("view_range must be two integers [start, end]")
        first, last = rng[0], (len(lines) if rng[1] == -1 else rng[1])
        if not (1 <= first <= len(lines)) or last < first or last > len(lines):
            raise ToolError(f"view_range {rng} is outside the file's {len(lines)} lines")
    text = _numbered(lines[first - 1:last], first)
    if len(text) > MAX_VIEW_CHARS:
        text = text[:MAX_VIEW_CHARS] + "\n[... file truncated: use view_range to see the rest ...]"
    return ToolResult(text)


@tool("create", "Create a new file with the given content (fails if the file exists).",
      {"path": _PATH, "file_text": {"type": "string", "description": "The whole content of the file."}},
      ("path", "file_text"))
def tool_create(ctx: ToolContext, call: ToolCall) -> ToolResult:
    path, text = call.arguments["path"], call.arguments["file_text"]
    full = resolve(ctx, path, must_exist=False)
    if full.exists() or full.is_symlink():
        raise ToolError(f"{path}: already exists; edit it with str_replace or insert")
    _write(ctx, full, path, text, exclusive=True)
    return ToolResult(f"created {path}", written=_written(call, "file_text", _rel(ctx, full), text))


def _write(ctx: ToolContext, full: Path, shown: str, text: str, exclusive: bool = False) -> None:
    """Write `text` to `full` (its folders made first), inside the workspace only (`_beneath`)."""
    root, rel = _beneath(ctx, full)
    try:
        make_dirs_beneath(root, os.path.dirname(rel))
        write_beneath(root, rel, text.encode("utf-8"), exclusive=exclusive)
    except FileExistsError:
        raise ToolError(f"{shown}: already exists; edit it with str_replace or insert") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise ToolError(f"{shown}: resolves outside the repository; use a path inside it") from None
        raise ToolError(f"{shown}: cannot be written: {exc.strerror or exc}") from None


def _snippet(text: str, line: int, count: int) -> str:
    lines = text.split("\n")
    start = max(0, line - SNIPPET_LINES)
    return _numbered(lines[start:line + count + SNIPPET_LINES], start + 1)


@tool("str_replace", "Replace the one occurrence of old_str in a file with new_str. old_str must match "
                     "exactly, whitespace included, and occur exactly once.",
      {"path": _PATH, "old_str": {"type": "string"},
       "new_str": {"type": "string", "description": "Replacement (may be empty)."}},
      ("path", "old_str"))
def tool_str_replace(ctx: ToolContext, call: ToolCall) -> ToolResult:
    path, old = call.arguments["path"], call.arguments["old_str"]
    new = call.arguments.get("new_str", "")
    full = resolve(ctx, path)
    if full.is_dir():
        raise ToolError(f"{path}: is a directory")
    text = _read_text(ctx, full, path)
    if not old:
        raise ToolError("old_str is empty; give the exact text to replace (use insert to add text)")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_str was not found in {path}; it must match exactly, whitespace included "
                        "(view the file to copy the text)")
    if count > 1:
        lines = _lines_of(text, old, SHOWN_LINES)
        more = f" and {count - len(lines)} more" if count > len(lines) else ""
        raise ToolError(f"old_str occurs {count} times in {path} (lines {lines}{more}); include more context to make "
                        "it unique")
    at = text.index(old)
    updated = text[:at] + new + text[at + len(old):]
    _write(ctx, full, path, updated)
    line = text[:at].count("\n")
    return ToolResult(f"edited {path}:\n" + _snippet(updated, line, new.count("\n") + 1),
                      written=_written(call, "new_str", _rel(ctx, full), new))


def _lines_of(text: str, sub: str, limit: int) -> list[int]:
    """The line numbers of the first `limit` occurrences of `sub` in `text` (one pass over the text)."""
    out, line, at, i = [], 1, 0, text.find(sub)
    while i >= 0 and len(out) < limit:
        line += text.count("\n", at, i)
        out.append(line)
        at, i = i, text.find(sub, i + 1)
    return out


@tool("insert", "Insert text after line insert_line of a file (0 inserts at the top).",
      {"path": _PATH, "insert_line": {"type": "integer"}, "new_str": {"type": "string"}},
      ("path", "insert_line", "new_str"))
def tool_insert(ctx: ToolContext, call: ToolCall) -> ToolResult:
    path, line, new = call.arguments["path"], call.arguments["insert_line"], call.arguments["new_str"]
    full = resolve(ctx, path)
    if full.is_dir():
        raise ToolError(f"{path}: is a directory")
    text = _read_text(ctx, full, path)
    lines = text.split("\n")
    n = len(lines) - (1 if text.endswith("\n") else 0)
    if not 0 <= line <= n:
        raise ToolError(f"insert_line {line} is outside 0..{n} for {path}")
    block = new if new.endswith("\n") else new + "\n"
    offsets = [0]
    for ln in lines[:-1]:
        offsets.append(offsets[-1] + len(ln) + 1)
    at = offsets[line] if line < len(offsets) else len(text)
    if at == len(text) and text and not text.endswith("\n"):
        block = "\n" + block.rstrip("\n")
    updated = text[:at] + block + text[at:]
    _write(ctx, full, path, updated)
    return ToolResult(f"inserted into {path}:\n" + _snippet(updated, line, new.count("\n") + 1),
                      written=_written(call, "new_str", _rel(ctx, full), new))


@tool("search", "Search files for a regular expression (grep -E); prints file:line:text.",
      {"pattern": {"type": "string"},
       "path": {"type": "string", "description": "Folder or file to search (default: the repository)."}},
      ("pattern",))
def tool_search(ctx: ToolContext, call: ToolCall) -> ToolResult:
    pattern, target = call.arguments["pattern"], call.arguments.get("path", ".")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"the pattern is {len(pattern):,} characters and the limit is {MAX_PATTERN_CHARS:,}; search "
                        "for a shorter, distinctive part of the text")
    rel = _rel(ctx, resolve(ctx, target)) if target not in ("", ".") else "."
    quoted = shlex.quote(pattern)
    # grep reading /dev/null fails (exit 2) only on the pattern: an invalid one is told apart from unreadable files
    command = (f"grep -qE -e {quoted} /dev/null; [ $? -ne 2 ] || exit 2; "
               f"grep -rnIE --exclude-dir=.git --exclude-dir=__pycache__ -e {quoted} -- {shlex.quote(rel)} | head -n 200")
    result = ctx.sandbox.exec(command, timeout=ctx.command_timeout)
    if result.exit_code == 2 and not result.timed_out:
        raise ToolError(f"the pattern is not a valid extended regular expression (grep -E): {result.output.strip()}; "
                        "put a backslash before ( ) [ ] { } . * + ? | ^ $ \\ to match them as text")
    if result.timed_out:
        return ToolResult(f"{result.output}\n[the search ran past the {ctx.command_timeout:g}s limit and was "
                          "stopped: use a simpler pattern (back-references such as \\1 are slow) or a smaller path]",
                          error=True)
    return ToolResult(result.output or "no matches")


@tool("run_tests", "Run the repository's visible tests (or the given test files) and show the result.",
      {"paths": {"type": "array", "items": {"type": "string"}, "description": "Optional test files."}})
def tool_run_tests(ctx: ToolContext, call: ToolCall) -> ToolResult:
    paths = call.arguments.get("paths") or list(ctx.visible_tests)
    for p in paths:
        if not isinstance(p, str):
            raise ToolError("paths must be a list of strings")
        resolve(ctx, p)
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("results")))
    try:
        binds = {results: RESULTS_DIR}
        language = languages.get(ctx.language)
        plan = language.test_run(ctx.test_command, tuple(paths), ctx.sandbox.inside(results, binds))
        nonce = new_nonce()
        result = ctx.sandbox.exec(plan.command, timeout=ctx.test_timeout, binds=binds, records=nonce)
        tests, void = run_records.run_outcomes(language, result, nonce, results, plan=plan)
        if void:  # a broken stream, or one that disagrees with the runner's report or exit code
            tests = {}
    finally:
        shutil.rmtree(results, ignore_errors=True)
    return ToolResult(result.describe(), error=result.timed_out,
                      records=RunRecords(tests, result.exit_code, result.timed_out))


@tool("submit", "Finish the episode: your changes are graded by the task's tests.")
def tool_submit(ctx: ToolContext, call: ToolCall) -> ToolResult:
    return ToolResult("submitted", submitted=True)


TOOL_SCHEMAS: list[dict] = [t.schema for t in REGISTRY.values()]
TOOL_NAMES: tuple[str, ...] = tuple(REGISTRY)


def run_tool(ctx: ToolContext, call: ToolCall) -> ToolResult:
    """Run one call; a bad call becomes an error result, never an exception."""
    try:
        validate(call)
        return REGISTRY[call.name].run(ctx, call)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", error=True)
    except (OSError, ValueError) as exc:
        return ToolResult(f"error: {call.name} failed: {exc}", error=True)


def describe_tools() -> str:
    """Tool list for prompts: one line each with its arguments."""
    lines = []
    for spec in REGISTRY.values():
        lines.append(f"- {spec.name}({', '.join(spec.properties)}): {spec.description}")
    return "\n".join(lines)


