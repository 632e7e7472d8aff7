"""The Table model."""
from __future__ import annotations

from typing import Iterable, Sequence


class Table:
    """A header row plus body rows of equal length."""

    def __init__(self, headers: Sequence[object], rows: Iterable[Sequence[object]] = ()) -> None:
        if not headers:
            raise ValueError("a table needs at least one column")
        self.headers = list(headers)
        self.rows: list[list[object]] = []
        for row in rows:
            self.add_row(row)

    @property
    def width(self) -> int:
        return len(self.headers)

    def add_row(self, row: Sequence[object]) -> None:
        if len(row) != self.width:
            raise ValueError(f"row has {len(row)} cells, expected {self.width}")
        self.rows.append(list(row))

    def column(self, index: int) -> list[object]:
        return [row[index] for row in self.rows]
