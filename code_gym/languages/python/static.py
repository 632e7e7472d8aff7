"""The static check of a changed Python file for the `static` reward: does it parse, compile, and
stay free of new pyflakes findings (undefined names, unused imports, redefinitions, ...)? It never
runs the code."""
from __future__ import annotations

from collections import Counter

from pyflakes.checker import Checker

from code_gym.languages.base import FileCheck
from code_gym.languages.python import source as pysource
from code_gym.languages.python.audit import MAX_SOURCE_BYTES


def _findings(source: bytes, path: str) -> list[str]:
    """pyflakes messages (without positions) of a source that compiles; raises when it does not."""
    tree = pysource.parse(source, filename=path)
    compile(tree, path, "exec", dont_inherit=True)
    checker = Checker(tree, filename=path)
    return [f"{type(m).__name__}: {m.message % m.message_args}" for m in checker.messages]


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    if len(new) - len(old or b"") > MAX_SOURCE_BYTES:  # as the audit: not parsed (~0.4 GiB per MiB), scored 0
        return FileCheck(path, False, f"over {MAX_SOURCE_BYTES} bytes larger than before: too large to check")
    try:
        found = _findings(new, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return FileCheck(path, False, f"{type(exc).__name__}: {exc}")
    before: Counter = Counter()
    if old is not None:
        try:
            before = Counter(_findings(old, path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    fresh = []
    for message in found:
        if before[message] > 0:
            before[message] -= 1
        else:
            fresh.append(message)
    return FileCheck(path, True, new_findings=fresh)
