"""Gaussian-elimination based algorithms, exact over Fractions."""
from __future__ import annotations

from fractions import Fraction

from .errors import ShapeError, SingularMatrixError
from .matrix import Matrix, Number


def _as_fractions(a: Matrix) -> list[list[Fraction]]:
    return [[Fraction(x) for x in row] for row in a.rows()]


def _pivot_row(rows: list[list[Fraction]], col: int, start: int) -> int | None:
    for r in range(start, len(rows)):
        if rows[r][col] != 0:
            return r
    return None


def _normalize(x: Fraction) -> Number:
    return x.numerator if x.denominator == 1 else x


def determinant(a: Matrix) -> Number:
    if not a.is_square:
        raise ShapeError("determinant needs a square matrix")
    rows = _as_fractions(a)
    n = len(rows)
    det = Fraction(1)
    for col in range(n):
        pivot = _pivot_row(rows, col, col)
        if pivot is None:
            return 0
        if pivot != col:
            rows[col], rows[pivot] = rows[pivot], rows[col]
        det *= rows[col][col]
        for r in range(col + 1, n):
            factor = rows[r][col] / rows[col][col]
            if factor:
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    return _normalize(det)


def rank(a: Matrix) -> int:
    rows = _as_fractions(a)
    n_rows, n_cols = a.shape
    rank = 0
    for col in range(n_cols):
        pivot = _pivot_row(rows, col, rank)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(rank + 1, n_rows):
            factor = rows[r][col] / rows[rank][col]
            rows[r] = [x - factor * y for x, y in zip(rows[r], rows[rank])]
        rank += 1
        if rank == n_rows:
            break
    return rank


def inverse(a: Matrix) -> Matrix:
    if not a.is_square:
        raise ShapeError("inverse needs a square matrix")
    n = a.shape[0]
    rows = [row + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(_as_fractions(a))]
    for col in range(n):
        pivot = _pivot_row(rows, col, col)
        if pivot is None:
            raise SingularMatrixError("matrix is singular")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        p = rows[col][col]
        rows[col] = [x / p for x in rows[col]]
        for r in range(n):
            if r != col and rows[r][col]:
                factor = rows[r][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    return Matrix([[_normalize(x) for x in row[n:]] for row in rows])
