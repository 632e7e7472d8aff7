"""Column width computation."""
from __future__ import annotations

MIN_WIDTH = 3


def column_widths(header: list[str], body: list[list[str]]) -> list[int]:
    widths = [max(MIN_WIDTH, len(h)) for h in header]
    for row in body:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    return widths
