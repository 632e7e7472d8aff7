from .errors import ShapeError, SingularMatrixError
from .matrix import Matrix
from .ops import add, multiply, scale, transpose
from .linalg import determinant, inverse, rank

__all__ = ["Matrix", "add", "multiply", "scale", "transpose", "determinant", "inverse", "rank",
           "ShapeError", "SingularMatrixError"]
