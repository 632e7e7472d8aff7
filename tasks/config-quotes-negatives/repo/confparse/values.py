"""Typing of raw configuration values."""
from __future__ import annotations

from typing import Union

from .errors import ConfigError

Value = Union[str, int, float, bool]

_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off"}


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and body[i + 1] in '"\\':
            out.append(body[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def coerce(raw: str) -> Value:
    """Convert the raw text of a value to a Python value."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return _unquote(raw)
    if raw.startswith('"'):
        raise ConfigError(f"unterminated string {raw!r}")
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    if raw.isdigit():
        return int(raw)
    try:
        return float(raw)
    except ValueError:
        return raw
