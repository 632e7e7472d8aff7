from matrixlib import Matrix, determinant, inverse, multiply


def test_rectangular_product():
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    b = Matrix([[7, 8], [9, 10], [11, 12]])
    assert a @ b == Matrix([[58, 64], [139, 154]])


def test_tall_times_wide():
    a = Matrix([[1, 2], [3, 4], [5, 6]])
    b = Matrix([[1, 0, 2], [0, 1, 3]])
    assert multiply(a, b) == Matrix([[1, 2, 8], [3, 4, 18], [5, 6, 28]])


def test_matrix_vector_product():
    a = Matrix([[2, 0, 1], [1, 1, 1], [0, 3, 0]])
    v = Matrix([[1], [2], [3]])
    assert a @ v == Matrix([[5], [6], [6]])


def test_determinant_of_permutation():
    assert determinant(Matrix([[0, 1], [1, 0]])) == -1
    assert determinant(Matrix([[0, 0, 1], [0, 1, 0], [1, 0, 0]])) == -1


def test_determinant_with_row_swap():
    assert determinant(Matrix([[0, 2, 1], [1, 0, 0], [0, 0, 3]])) == -6


def test_determinant_is_multiplicative():
    a = Matrix([[0, 3], [2, 1]])
    b = Matrix([[1, 4], [0, 2]])
    assert determinant(a @ b) == determinant(a) * determinant(b) == -12


def test_inverse_needs_pivoting():
    a = Matrix([[0, 1], [2, 0]])
    assert a @ inverse(a) == Matrix.identity(2)
