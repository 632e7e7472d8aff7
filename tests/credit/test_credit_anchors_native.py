"""The greedy anchor pass in C (`credit._native.greedy`) against the Python loop it replaces
(`credit.anchors._greedy_loop`): random selections, with and without a cap, overlapping lines,
cuts kept and dropped by the rescore, both counts."""
import numpy as np
import pytest
from credit_testlib import need_native

import credit.anchors as anchors_module
from credit.anchors import select_anchors


def _random_units(rng):
    """Units of a few tasks: clusters of occurrences in rows whose changed lines overlap, so that
    the greedy pass cuts, keeps and drops candidates."""
    units = []
    n_rows = int(rng.integers(2, 12))
    row_task = rng.integers(0, 3, n_rows)
    row_traj = rng.integers(0, 6, n_rows)
    for cluster in range(int(rng.integers(1, 25))):
        for row in rng.choice(n_rows, size=int(rng.integers(1, n_rows + 1)), replace=False).tolist():
            lo = int(rng.integers(0, 12))
            ids = list(range(100 * row + lo, 100 * row + lo + int(rng.integers(1, 6))))
            units.append((cluster, row, int(row_traj[row]), int(row_task[row]), int(rng.integers(0, 9)), ids))
    return units


def _table(units):
    cols = list(zip(*units))
    ptr = np.concatenate([[0], np.cumsum([len(ids) for ids in cols[5]])]).astype(np.int64)
    return (*[np.asarray(c, np.int64) for c in cols[:5]], ptr, np.asarray([i for ids in cols[5] for i in ids], np.int64))


@pytest.mark.parametrize("seed", range(6))
def test_the_c_greedy_pass_selects_what_the_python_loop_selects(seed, monkeypatch):
    native = anchors_module.c_greedy
    need_native(native)
    rng = np.random.default_rng(seed)
    seen_cut = 0
    for _ in range(150):
        table = _table(_random_units(rng))
        options = dict(count=str(rng.choice(["steps", "trajectories"])),
                       max_anchors=None if rng.random() < 0.5 else int(rng.integers(1, 5)))
        got = {}
        for reader in (native, None):
            monkeypatch.setattr(anchors_module, "c_greedy", reader)
            got[reader is None] = select_anchors(*table, **options)
        c, python = got[False], got[True]
        assert [m.tolist() for m in c.members] == [m.tolist() for m in python.members]
        np.testing.assert_array_equal(c.gs, python.gs)
        np.testing.assert_array_equal(c.cluster, python.cluster)
        # a cut anchor keeps fewer members than its cluster has rows
        cluster, row = table[0], table[1]
        seen_cut += sum(len(m) < len(set(row[cluster == k].tolist())) for m, k in zip(c.members, c.cluster.tolist()))
    assert seen_cut > 20  # the cases reach the cut branch


def test_the_c_greedy_pass_refuses_arrays_that_do_not_fit():
    native = anchors_module.c_greedy
    need_native(native)
    ok = dict(lines=np.array([0, 1], np.int64), line_ptr=np.array([0, 1, 2], np.int64),
              member_ptr=np.array([0, 2], np.int64), members=np.array([0, 1], np.int64), tasks=np.zeros(1, np.int64),
              contested=np.zeros(1, bool), order=np.zeros(1, np.int64))

    def call(**changed):
        a = {**ok, **changed}
        return native(a["lines"], a["line_ptr"], a["member_ptr"], a["members"], a["tasks"], a["contested"], a["order"],
                      1, np.zeros(2, bool), np.zeros(1, np.int64), np.zeros(1, bool), lambda units: 1.0)

    assert call() == {}
    with pytest.raises(ValueError, match="line id"):
        call(lines=np.array([0, 5], np.int64))
    with pytest.raises(ValueError, match="out of range"):
        call(order=np.array([3], np.int64))
    with pytest.raises(ValueError, match="inconsistent"):
        call(line_ptr=np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="8-byte"):
        call(tasks=np.zeros(1, np.int32))
    with pytest.raises(ValueError, match="task"):
        call(tasks=np.array([4], np.int64))
