import pytest

from matrixlib import Matrix, ShapeError, add, scale, transpose


def test_add_and_scale():
    a = Matrix([[1, 2], [3, 4]])
    assert add(a, a) == scale(a, 2)


def test_transpose():
    assert transpose(Matrix([[1, 2, 3]])) == Matrix([[1], [2], [3]])


def test_square_product():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[0, 1], [1, 0]])
    assert a @ b == Matrix([[2, 1], [4, 3]])
    assert a @ Matrix.identity(2) == a


def test_shape_mismatch():
    with pytest.raises(ShapeError):
        Matrix([[1, 2]]) @ Matrix([[1, 2]])
