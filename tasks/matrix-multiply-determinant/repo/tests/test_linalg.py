from fractions import Fraction

from matrixlib import Matrix, determinant, inverse, rank


def test_determinant_simple():
    assert determinant(Matrix([[2, 1], [1, 3]])) == 5
    assert determinant(Matrix([[1, 2], [2, 4]])) == 0


def test_inverse():
    a = Matrix([[4, 7], [2, 6]])
    assert inverse(a) == Matrix([[Fraction(3, 5), Fraction(-7, 10)], [Fraction(-1, 5), Fraction(2, 5)]])
    assert a @ inverse(a) == Matrix.identity(2)


def test_rank():
    assert rank(Matrix([[1, 2, 3], [2, 4, 6]])) == 1
