"""Built-in filters.

A filter is called as ``f(value, *args)`` and returns the new value.
"""
from __future__ import annotations

from typing import Any, Callable

from .errors import TemplateError


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def upper(value: Any) -> str:
    return _text(value).upper()


def lower(value: Any) -> str:
    return _text(value).lower()


def title(value: Any) -> str:
    return _text(value).title()


def strip(value: Any) -> str:
    return _text(value).strip()


def length(value: Any) -> int:
    return 0 if value is None else len(value)


FILTERS: dict[str, Callable[..., Any]] = {
    "upper": upper,
    "lower": lower,
    "title": title,
    "strip": strip,
    "length": length,
}


def apply_filter(name: str, value: Any, args: tuple[Any, ...] = ()) -> Any:
    try:
        func = FILTERS[name]
    except KeyError:
        raise TemplateError(f"unknown filter {name!r}") from None
    try:
        return func(value, *args)
    except TypeError as exc:
        raise TemplateError(f"bad arguments for filter {name!r}: {exc}") from None
