"""The benchmark's rollout generator makes valid, groupable data (so the benchmark measures real work)."""

import credit
from credit_testlib import load_bench


def test_synthetic_rollouts_feed_didpo_and_form_anchors():
    bench = load_bench()
    trajs = bench.rollouts(2, 8, 4, seed=3)
    assert len(trajs) == 16 and all(len(t.steps) == 4 for t in trajs)
    res = credit.didpo(trajs)
    assert res.stats["n_changed_lines"] > 100
    assert res.anchors and res.stats["coverage"]["occurrences_located"] == 1.0
    assert any(s.provenance for t in trajs for s in t.steps) and any(
        s.diff and s.provenance is None for t in trajs for s in t.steps)
