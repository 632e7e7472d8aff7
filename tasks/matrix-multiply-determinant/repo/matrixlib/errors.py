class ShapeError(ValueError):
    """Operands have incompatible shapes."""


class SingularMatrixError(ValueError):
    """The matrix has no inverse."""
