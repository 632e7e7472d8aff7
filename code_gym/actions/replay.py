"""Turn a unified diff into the editor tool calls an agent would make to write it.

Used to replay reference patches through the real environment (the main job, tests) and, later,
to build candidate actions for the built-in policy."""
from __future__ import annotations

import json
from pathlib import Path

from unidiff import PatchSet


def _unique_old(text: str, old: str, before: list[str], after: list[str]) -> str | None:
    """Grow `old` with surrounding lines until it occurs once in `text`."""
    for k in range(0, max(len(before), len(after)) + 1):
        pre = "".join(before[len(before) - k:]) if k else ""
        post = "".join(after[:k])
        candidate = pre + old + post
        if candidate and text.count(candidate) == 1:
            return candidate
    return None


def unique_edit(text: str, old: str, new: str) -> tuple[str, str] | None:
    """(old_str, new_str) of a str_replace that turns `old` into `new` in `text`: `old` widened with
    the lines around its first occurrence until it occurs once, `new` widened alike (None when
    no widening makes it unique)."""
    lines = text.splitlines(keepends=True)
    start = text.find(old)
    line_at = text[:start].count("\n") if start >= 0 else 0
    widened = _unique_old(text, old, lines[:line_at], lines[line_at + old.count("\n"):])
    if widened is None:
        return None
    pre = widened[: widened.index(old)] if old else ""
    return widened, pre + new + widened[len(pre) + len(old):]


def patch_to_calls(patch: str, repo: Path) -> list[dict]:
    """Editor calls ({"name", "arguments"}) that turn `repo` into `repo` + `patch`, hunk by hunk.

    New files become `create`; deleted files a `bash rm`; each hunk of a modified file one
    `str_replace` whose old_str is the hunk's source text (widened until unique)."""
    calls: list[dict] = []
    state: dict[str, str] = {}
    for pf in PatchSet(patch):
        path = pf.path
        if pf.is_added_file:
            text = "".join(line.value for h in pf for line in h if not line.is_removed)
            calls.append({"name": "create", "arguments": {"path": path, "file_text": text}})
            continue
        if pf.is_removed_file:
            calls.append({"name": "bash", "arguments": {"command": f"rm -- {json.dumps(path)}"}})
            continue
        text = state.get(path)
        if text is None:
            text = (repo / pf.source_file[2:] if pf.source_file.startswith("a/") else repo / path).read_text()
        for hunk in pf:
            old = "".join(line.value for line in hunk if not line.is_added)
            new = "".join(line.value for line in hunk if not line.is_removed)
            edit = unique_edit(text, old, new)
            if edit is None:
                raise ValueError(f"{path}: hunk {hunk.section_header or hunk.source_start} cannot be located uniquely")
            widened, replacement = edit
            calls.append({"name": "str_replace", "arguments": {"path": path, "old_str": widened, "new_str": replacement}})
            text = text.replace(widened, replacement, 1)
        state[path] = text
    return calls


def hermes(calls: list[dict], thought: str = "") -> str:
    """Render calls as Hermes/Qwen response text."""
    body = "".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>\n" for c in calls)
    return f"{thought}\n{body}" if thought else body
