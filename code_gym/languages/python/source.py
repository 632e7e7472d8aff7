"""Parsing Python source from threads.

CPython 3.11's `ast.parse` keeps the AST constructor's recursion counter in interpreter-wide state:
when two threads build trees at once and a garbage collection in one of them runs a finalizer that
switches threads, the counter of one tree is checked against the other's and the parse fails with
`SystemError: AST constructor recursion depth mismatch` (python/cpython#106905). The grader audits
patches from several threads (vector envs, the builder's workers, the Docker soak), so every parse in
code-gym goes through `parse`, which holds one lock around the construction. Parsing is ~1 ms per
thousand lines, small next to the test runs the lock sits between.
"""
from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, safe to call from several threads at once (SyntaxError as usual)."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
