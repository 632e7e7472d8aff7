"""The clusters' founding loop in C (`credit._native.founders`) against the Python loop it replaces
(`credit.grouping._founders`): random similarity graphs and visiting orders, and whole clusterings."""
import numpy as np
import pytest
from credit_testlib import need_native

import credit.grouping as grouping_module


@pytest.mark.parametrize("seed", range(4))
def test_the_c_founding_loop_gives_the_python_clusters(seed, monkeypatch):
    native = grouping_module.c_founders
    need_native(native)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        m = int(rng.integers(0, 3 * n))
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = a != b
        a, b = a[keep].astype(np.int64), b[keep].astype(np.int64)
        order = rng.permutation(n).astype(np.int64)
        got = {}
        for reader in (native, None):
            monkeypatch.setattr(grouping_module, "c_founders", reader)
            got[reader is None] = grouping_module._representative_clusters(order, a, b)
        np.testing.assert_array_equal(got[False], got[True])


def test_the_c_founding_loop_refuses_indices_out_of_range():
    native = grouping_module.c_founders
    need_native(native)
    founder = np.arange(3)
    ptr = np.array([0, 1, 2, 2], np.int64)
    native(np.array([0, 1], np.int64), ptr, np.array([1, 0], np.int64), founder)
    assert founder.tolist() == [0, 0, 2]
    with pytest.raises(ValueError, match="neighbour out of range"):
        native(np.array([0], np.int64), ptr, np.array([1, 7], np.int64), np.arange(3))
    with pytest.raises(ValueError, match="order names"):
        native(np.array([5], np.int64), ptr, np.array([1, 0], np.int64), np.arange(3))
    with pytest.raises(ValueError, match="one more entry"):
        native(np.array([0], np.int64), ptr[:3], np.array([1, 0], np.int64), np.arange(3))
    with pytest.raises(ValueError, match="int64"):
        native(np.array([0], np.int32), ptr, np.array([1, 0], np.int64), np.arange(3))
