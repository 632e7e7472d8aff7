"""Turns configuration text into a stream of line tokens."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from .errors import ConfigError

COMMENT_CHARS = "#;"
_SECTION = re.compile(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Token:
    kind: str  # "section" or "entry"
    lineno: int
    name: str
    raw: str = ""


def strip_comment(text: str) -> str:
    """Remove a trailing comment from a line."""
    for ch in COMMENT_CHARS:
        text = text.split(ch, 1)[0]
    return text.rstrip()


def tokenize(text: str) -> Iterator[Token]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in COMMENT_CHARS:
            continue
        stripped = strip_comment(stripped)
        m = _SECTION.match(stripped)
        if m:
            yield Token("section", lineno, m.group(1))
            continue
        if "=" not in stripped:
            raise ConfigError(f"expected 'key = value', got {stripped!r}", lineno)
        key, raw = (part.strip() for part in stripped.split("=", 1))
        if not _KEY.match(key):
            raise ConfigError(f"invalid key {key!r}", lineno)
        yield Token("entry", lineno, key, raw)
