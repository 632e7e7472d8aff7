import numpy as np
import pytest

from credit.anchors import select_anchors
from credit.groupability import groupability_score


def table(units):
    """units: (cluster, row, trajectory, task, compared lines, changed line ids)."""
    cols = list(zip(*units))
    sizes = [len(ids) for ids in cols[5]]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    arrays = [np.asarray(c, np.int64) for c in cols[:5]]
    return (*arrays, ptr, np.asarray([i for ids in cols[5] for i in ids], np.int64))


def test_highest_score_first_and_overlaps_are_cut():
    # cluster 0: a 6-line unit in rows 0, 1, 2; cluster 1: a 2-line sub-unit of it in rows 0, 1
    # plus row 3. Rows own line ids 0-5, 10-15, 20-25, 30-31.
    units = [
        (0, 0, 0, 0, 6, range(0, 6)), (0, 1, 1, 0, 6, range(10, 16)), (0, 2, 2, 0, 6, range(20, 26)),
        (1, 0, 0, 0, 2, (0, 1)), (1, 1, 1, 0, 2, (10, 11)), (1, 3, 3, 0, 2, (30, 31)),
    ]
    sel = select_anchors(*table(units))
    # cluster 0 scores higher; cluster 1 keeps only row 3 after the cut: a singleton, dropped
    assert sel.cluster.tolist() == [0]
    assert sel.members[0].tolist() == [0, 1, 2]
    assert sel.gs[0] == pytest.approx(groupability_score(np.array([6.0]), np.array([3.0]))[0])
    assert sel.n_candidates == 2


def test_a_cut_anchor_is_rescored_on_what_is_left():
    units = [
        (0, 0, 0, 0, 8, range(0, 8)), (0, 1, 1, 0, 8, range(10, 18)),
        (1, 0, 0, 0, 2, (0, 1)), (1, 2, 2, 0, 2, (20, 21)), (1, 3, 3, 0, 2, (30, 31)),
        (1, 4, 4, 0, 2, (40, 41)),
    ]
    sel = select_anchors(*table(units))
    by_cluster = dict(zip(sel.cluster.tolist(), range(len(sel.members))))
    assert set(by_cluster) == {0, 1}
    k = by_cluster[1]
    assert sel.size[k] == 3 and sel.members[k].tolist() == [3, 4, 5]
    assert sel.gs[k] == pytest.approx(groupability_score(np.array([2.0]), np.array([3.0]))[0])


def test_one_occurrence_per_row_the_largest():
    units = [(0, 0, 0, 0, 3, (0, 1, 2)), (0, 0, 0, 0, 5, (3, 4, 5, 6, 7)), (0, 1, 1, 0, 5, (10, 11, 12, 13, 14))]
    sel = select_anchors(*table(units))
    assert sel.members[0].tolist() == [1, 2] and sel.mean_lines[0] == 5.0


def test_count_trajectories_and_the_per_task_cap():
    # two steps of one trajectory: 2 rows but 1 trajectory
    units = [(0, 0, 0, 0, 4, (0,)), (0, 1, 0, 0, 4, (10,))]
    assert len(select_anchors(*table(units)).members) == 1
    assert len(select_anchors(*table(units), count="trajectories").members) == 0
    many = [(c, r, r, 0, 4, (100 * c + r,)) for c in range(5) for r in range(2)]
    many += [(c, r, r, 1, 4, (100 * c + r + 50,)) for c in range(5, 7) for r in range(2)]
    sel = select_anchors(*table(many), max_anchors=3)
    assert len(sel.members) == 5  # 3 for task 0, 2 for task 1
    assert len(select_anchors(*table(many)).members) == 7  # no cap by default


def test_no_candidates():
    sel = select_anchors(*table([(-1, 0, 0, 0, 3, (0,)), (0, 1, 1, 0, 0, (1,))]))
    assert sel.members == [] and sel.n_candidates == 0


def test_bad_arguments():
    args = table([(0, 0, 0, 0, 3, (0,))])
    with pytest.raises(ValueError, match="count must be one of"):
        select_anchors(*args, count="rows")
    with pytest.raises(ValueError, match="row must have shape"):
        select_anchors(args[0], args[1][:0], *args[2:])


def reference_selection(cluster, row, trajectory, task, compared, ptr, lines, count="steps", max_anchors=64):
    """The greedy of the module docstring, one cluster at a time: (cluster, members, gs) per anchor."""
    best = {}
    for u in np.flatnonzero((cluster >= 0) & (compared > 0)).tolist():
        key = (int(cluster[u]), int(row[u]))
        if key not in best or compared[u] > compared[best[key]]:
            best[key] = u
    groups = {}
    for (c, _), u in sorted(best.items()):
        groups.setdefault(c, []).append(u)

    def score(members):
        n = len(set(trajectory[members].tolist())) if count == "trajectories" else len(members)
        mean = float(np.mean(compared[members].astype(np.float64)))
        return float(groupability_score(np.array([mean]), np.array([float(n)]))[0]), mean, n

    scored = {c: score(np.array(m)) for c, m in groups.items()}
    order = sorted((c for c in groups if scored[c][0] > 0),
                   key=lambda c: (-scored[c][0], -scored[c][1], -scored[c][2], c))
    taken, per_task, out = set(), {}, []
    for c in order:
        t = int(task[groups[c][0]])
        if per_task.get(t, 0) >= max_anchors:
            continue
        kept = [u for u in groups[c] if not taken & set(lines[ptr[u]:ptr[u + 1]].tolist())]
        g = score(np.array(kept))[0] if len(kept) >= 2 else 0.0
        if g <= 0:
            continue
        taken |= {int(x) for u in kept for x in lines[ptr[u]:ptr[u + 1]]}
        per_task[t] = per_task.get(t, 0) + 1
        out.append((c, kept, g))
    return out


@pytest.mark.parametrize("count", ["steps", "trajectories"])
@pytest.mark.parametrize("max_anchors", [1, 3, 64])
def test_random_overlapping_clusters_match_the_one_at_a_time_greedy(count, max_anchors):
    rng = np.random.default_rng(max_anchors)
    for _ in range(20):
        n = int(rng.integers(2, 60))
        row = rng.integers(0, 12, n)
        units = [(int(rng.integers(-1, 8)), int(r), int(r) // 2, int(r) % 2, int(rng.integers(0, 6)),
                  10 * int(r) + rng.choice(10, int(rng.integers(1, 5)), replace=False)) for r in row]
        args = table(units)
        sel = select_anchors(*args, count=count, max_anchors=max_anchors)
        want = reference_selection(*args, count=count, max_anchors=max_anchors)
        assert sel.cluster.tolist() == [c for c, _, _ in want]
        assert [m.tolist() for m in sel.members] == [m for _, m, _ in want]
        assert sel.gs.tolist() == [g for _, _, g in want]
