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


def need_native(native, module: str = "credit._native") -> None:
    """Skip (fail in CI, where make setup builds it) when the C extension `module` was not built."""
    import os

    import pytest

    if native is None:
        why = f"{module} is not built (the install found no C compiler): reinstall with one, `make setup`"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


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


def assert_didpo_unchanged_without(monkeypatch, module, name: str) -> None:
    """credit.didpo on a benchmark batch gives the same coverage and tokens with `module.name` (a C
    function) set to None, so that the Python path runs instead."""
    import credit

    batch = [t.to_dict() for t in load_bench().rollouts(3, 8, 4, seed=5)]
    with_c = credit.didpo(batch)
    monkeypatch.setattr(module, name, None)
    without = credit.didpo(batch)
    assert with_c.stats["coverage"] == without.stats["coverage"]
    for a, b in zip(with_c.tokens, without.tokens):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def through_c(module, name: str, run, what: str):
    """run() with the C function `module.name` watched: its result, once the C function was called
    once and took the input (returned something other than None, its way of handing it back)."""
    real, calls = getattr(module, name), []

    def watched(*args):
        calls.append(real(*args))
        return calls[-1]

    setattr(module, name, watched)
    try:
        got = run()
    finally:
        setattr(module, name, real)
    assert len(calls) == 1 and calls[0] is not None, f"{module.__name__}.{name} did not take {what}"
    return got
