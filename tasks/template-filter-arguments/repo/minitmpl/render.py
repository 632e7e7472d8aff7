"""Rendering templates."""
from __future__ import annotations

import re
from typing import Any, Mapping

from .context import resolve
from .errors import TemplateSyntaxError
from .filters import apply_filter, _text
from .lexer import tokenize

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_expression(expr: str) -> tuple[str, list[tuple[str, tuple[Any, ...]]]]:
    """Split ``path | f1 | f2`` into the path and a list of (filter, args)."""
    parts = [p.strip() for p in expr.split("|")]
    path, filter_parts = parts[0], parts[1:]
    if not _PATH.match(path):
        raise TemplateSyntaxError(f"invalid variable path {path!r}")
    filters: list[tuple[str, tuple[Any, ...]]] = []
    for part in filter_parts:
        if not part:
            raise TemplateSyntaxError(f"empty filter in {expr!r}")
        filters.append((part, ()))
    return path, filters


def render(template: str, context: Mapping[str, Any]) -> str:
    out: list[str] = []
    for chunk in tokenize(template):
        if chunk.kind == "text":
            out.append(chunk.value)
            continue
        path, filters = parse_expression(chunk.value)
        value = resolve(context, path)
        for name, args in filters:
            value = apply_filter(name, value, args)
        out.append(_text(value))
    return "".join(out)
