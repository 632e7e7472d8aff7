import math

import numpy as np
import pytest

from credit.groupability import groupability_score, phi, psi


def test_singletons_score_zero_in_every_form():
    for form in ("saturating", "log", "linear"):
        assert psi(np.array([0.0, 1.0]), form=form).tolist() == [0.0, 0.0]
        assert groupability_score(np.array([40.0]), np.array([1.0]), psi_form=form)[0] == 0.0


def test_saturating_forms_at_known_points():
    # phi(8) = 1 - 1/e, psi(9) = 1 - 1/e with s0 = g0 = 8
    np.testing.assert_allclose(phi(np.array([0.0, 8.0])), [0.0, 1 - math.exp(-1)])
    np.testing.assert_allclose(psi(np.array([2.0, 9.0])), [1 - math.exp(-1 / 8), 1 - math.exp(-1)])
    np.testing.assert_allclose(groupability_score(np.array([8.0]), np.array([9.0])), [(1 - math.exp(-1)) ** 2])


def test_log_and_linear_forms():
    np.testing.assert_allclose(phi(np.array([8.0, 80.0]), form="log"), [1.0, 1.0])
    np.testing.assert_allclose(phi(np.array([3.0]), form="log"), [math.log(4) / math.log(9)])
    np.testing.assert_allclose(phi(np.array([4.0, 16.0]), form="linear"), [0.5, 1.0])
    np.testing.assert_allclose(psi(np.array([4.0]), form="log"), [math.log(4) / math.log(8)])
    np.testing.assert_allclose(psi(np.array([4.0, 100.0]), form="linear"), [3 / 7, 1.0])


def test_more_lines_and_more_members_score_higher():
    gs = groupability_score(np.array([2.0, 10.0, 10.0]), np.array([4.0, 4.0, 12.0]))
    assert gs[0] < gs[1] < gs[2]


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    out = groupability_score(torch.tensor([8.0]), torch.tensor([9.0]))
    assert isinstance(out, torch.Tensor)
    assert out.item() == pytest.approx((1 - math.exp(-1)) ** 2, rel=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="form must be one of"):
        phi(np.array([1.0]), form="cubic")
    with pytest.raises(ValueError, match="same shape"):
        groupability_score(np.array([1.0, 2.0]), np.array([2.0]))


@pytest.mark.parametrize("phi_form", ["saturating", "log", "linear"])
@pytest.mark.parametrize("psi_form", ["saturating", "log", "linear"])
def test_the_scalar_score_is_the_array_score(phi_form, psi_form):
    from credit.groupability import score_one

    lines = np.array([0.0, 0.5, 1.0, 3.0, 8.0, 40.0, 1e3])
    sizes = np.array([0.0, 1.0, 2.0, 3.0, 8.0, 64.0])
    L, n = (x.ravel() for x in np.meshgrid(lines, sizes))
    for s0, g0 in ((8.0, 8.0), (2.0, 3.0)):
        want = groupability_score(L, n, s0=s0, g0=g0, phi_form=phi_form, psi_form=psi_form)
        got = [score_one(a, b, s0=s0, g0=g0, phi_form=phi_form, psi_form=psi_form) for a, b in zip(L, n)]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        assert [g > 0 for g in got] == (want > 0).tolist()
