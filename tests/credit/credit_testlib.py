"""Builders for small, hand-checkable credit test cases (diffs, tool-call actions, token offsets)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def added_hunk(lines: list[str], start: int) -> str:
    """A hunk that adds `lines` at new-file line `start`, with one context line on each side."""
    body = [" # context above"] + ["+" + x for x in lines] + [" # context below"]
    return f"@@ -{start - 1},2 +{start - 1},{len(lines) + 2} @@\n" + "\n".join(body) + "\n"


def file_diff(path: str, *hunks: str) -> str:
    return f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def insert_call(path: str, code_lines: list[str], thought: str = "Let me add the code.") -> str:
    """A Hermes-style tool call that carries the code inside a JSON string."""
    args = {"command": "insert", "path": path, "new_str": "\n".join(code_lines) + "\n"}
    return f"{thought}\n<tool_call>{json.dumps({'name': 'str_replace_editor', 'arguments': args})}</tool_call>"


def offsets(action: str) -> np.ndarray:
    """Token offsets of a word / whitespace / punctuation tokenizer."""
    return np.array([m.span() for m in TOKEN.finditer(action)], np.int64).reshape(-1, 2)


def code_span(action: str, code_lines: list[str]) -> tuple[int, int]:
    """Character span of the (JSON-escaped) code in a tool-call action, first to last line."""
    escaped = json.dumps("\n".join(code_lines))[1:-1]
    start = action.index(escaped)
    return start, start + len(escaped)


def token_mask(action: str, span: tuple[int, int]) -> np.ndarray:
    """Tokens overlapping a character span."""
    off = offsets(action)
    return (off[:, 0] < span[1]) & (off[:, 1] > span[0])


BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "credit_bench.py"


def load_bench():
    """benchmarks/credit_bench.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("credit_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stdlib_windows(rng) -> list[tuple[str, ...]]:
    """Windows of 3-60 lines cut at random from every other module of the standard library (a
    fifteenth as many windows as a file has lines), drawn with `rng` (random.Random)."""
    import sysconfig

    windows = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[::2]:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for _ in range(len(lines) // 15):
            at = rng.randrange(len(lines))
            windows.append(tuple(lines[at:at + rng.randint(3, 60)]))
    return windows
