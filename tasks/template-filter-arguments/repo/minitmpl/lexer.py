"""Splits template text into literal text and ``{{ ... }}`` expressions."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import TemplateSyntaxError

OPEN, CLOSE = "{{", "}}"


@dataclass(frozen=True)
class Chunk:
    kind: str  # "text" or "expr"
    value: str
    pos: int


def tokenize(template: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    pos = 0
    while pos < len(template):
        start = template.find(OPEN, pos)
        if start == -1:
            chunks.append(Chunk("text", template[pos:], pos))
            break
        if start > pos:
            chunks.append(Chunk("text", template[pos:start], pos))
        end = template.find(CLOSE, start + len(OPEN))
        if end == -1:
            raise TemplateSyntaxError(f"unclosed '{{{{' at position {start}")
        expr = template[start + len(OPEN):end].strip()
        if not expr:
            raise TemplateSyntaxError(f"empty expression at position {start}")
        chunks.append(Chunk("expr", expr, start))
        pos = end + len(CLOSE)
    return chunks
