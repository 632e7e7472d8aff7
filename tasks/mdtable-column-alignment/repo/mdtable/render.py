"""Rendering a Table as Markdown."""
from __future__ import annotations

from .escape import cell_text
from .table import Table
from .widths import column_widths


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _pad(text: str, width: int) -> str:
    return text.ljust(width)


def _separator(width: int) -> str:
    return "-" * width


def render(table: Table) -> str:
    header = [cell_text(h) for h in table.headers]
    body = [[cell_text(c) for c in row] for row in table.rows]
    widths = column_widths(header, body)
    lines = [_line([_pad(h, w) for h, w in zip(header, widths)])]
    lines.append(_line([_separator(w) for w in widths]))
    for row in body:
        lines.append(_line([_pad(c, w) for c, w in zip(row, widths)]))
    return "\n".join(lines) + "\n"
