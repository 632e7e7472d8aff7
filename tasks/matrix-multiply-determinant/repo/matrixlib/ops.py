"""Elementwise and structural operations."""
from __future__ import annotations

from .errors import ShapeError
from .matrix import Matrix, Number


def add(a: Matrix, b: Matrix) -> Matrix:
    if a.shape != b.shape:
        raise ShapeError(f"cannot add {a.shape} and {b.shape}")
    rows, cols = a.shape
    return Matrix([[a[i, j] + b[i, j] for j in range(cols)] for i in range(rows)])


def scale(a: Matrix, k: Number) -> Matrix:
    return Matrix([[k * x for x in row] for row in a.rows()])


def transpose(a: Matrix) -> Matrix:
    rows, cols = a.shape
    return Matrix([[a[i, j] for i in range(rows)] for j in range(cols)])


def multiply(a: Matrix, b: Matrix) -> Matrix:
    """Matrix product ``a @ b``."""
    n, m = a.shape
    m2, p = b.shape
    if m != m2:
        raise ShapeError(f"cannot multiply {a.shape} by {b.shape}")
    return Matrix(
        [[sum(a[i, k] * b[k, j] for k in range(n)) for j in range(p)] for i in range(n)]
    )
