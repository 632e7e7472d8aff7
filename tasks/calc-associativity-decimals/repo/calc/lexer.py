"""Splits an expression into tokens."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .errors import LexError

OPERATORS = "+-*/^"


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "op", "(", ")", "eof"
    value: object
    pos: int


def tokenize(src: str) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    while i < len(src):
        ch = src[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit():
            start = i
            while i < len(src) and src[i].isdigit():
                i += 1
            tokens.append(Token("num", Fraction(src[start:i]), start))
        elif ch in OPERATORS:
            tokens.append(Token("op", ch, i))
            i += 1
        elif ch in "()":
            tokens.append(Token(ch, ch, i))
            i += 1
        else:
            raise LexError(f"unexpected character {ch!r}", i)
    tokens.append(Token("eof", None, len(src)))
    return tokens
