"""The Matrix value type."""
from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Sequence, Union

from .errors import ShapeError

Number = Union[int, Fraction]


class Matrix:
    __slots__ = ("_rows",)

    def __init__(self, rows: Iterable[Sequence[Number]]) -> None:
        data = [list(r) for r in rows]
        if not data or not data[0]:
            raise ShapeError("a matrix needs at least one row and one column")
        width = len(data[0])
        if any(len(r) != width for r in data):
            raise ShapeError("all rows must have the same length")
        self._rows = data

    @classmethod
    def identity(cls, n: int) -> "Matrix":
        return cls([[1 if i == j else 0 for j in range(n)] for i in range(n)])

    @classmethod
    def zeros(cls, rows: int, cols: int) -> "Matrix":
        return cls([[0] * cols for _ in range(rows)])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self._rows), len(self._rows[0])

    @property
    def is_square(self) -> bool:
        r, c = self.shape
        return r == c

    def rows(self) -> list[list[Number]]:
        """A copy of the entries, row by row."""
        return [list(r) for r in self._rows]

    def __getitem__(self, index: tuple[int, int]) -> Number:
        i, j = index
        return self._rows[i][j]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Matrix):
            return NotImplemented
        return self._rows == other._rows

    def __matmul__(self, other: "Matrix") -> "Matrix":
        from .ops import multiply

        return multiply(self, other)

    def __add__(self, other: "Matrix") -> "Matrix":
        from .ops import add

        return add(self, other)

    def __repr__(self) -> str:
        return f"Matrix({self._rows!r})"

    def __str__(self) -> str:
        return "[" + ", ".join("[" + ", ".join(str(x) for x in r) + "]" for r in self._rows) + "]"
