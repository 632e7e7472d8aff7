"""Grouping rows and aggregate functions.

Every aggregate receives the raw (string) cells of one column for one group,
blank cells already removed, and returns the value to display or None.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Iterable

from .errors import ReportError


def _numbers(cells: Iterable[str]) -> list[Decimal]:
    out = []
    for cell in cells:
        try:
            out.append(Decimal(cell))
        except InvalidOperation:
            raise ReportError(f"not a number: {cell!r}") from None
    return out


def total(cells: list[str]) -> Decimal | None:
    values = _numbers(cells)
    return sum(values, Decimal(0)) if values else None


def count(cells: list[str]) -> int:
    return len(cells)


def minimum(cells: list[str]) -> Decimal | None:
    values = _numbers(cells)
    return min(values) if values else None


def maximum(cells: list[str]) -> Decimal | None:
    values = _numbers(cells)
    return max(values) if values else None


def group_rows(rows: list[dict[str, str]], keys: list[str]) -> dict[tuple[str, ...], list[dict[str, str]]]:
    groups: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups
