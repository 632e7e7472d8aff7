"""Property tests: random batches of rollouts built from a small pool of edits, so groups form."""

import numpy as np
import pytest
from credit_testlib import added_hunk, file_diff, insert_call, offsets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import credit

POOL = [
    ["def f(a):", "    return a + 1"],
    ["def g(items):", "    total = 0", "    for x in items:", "        total += x", "    return total"],
    ["class Box:", "    def __init__(self, v):", "        self.v = v"],
    ["x = compute(1, 2)", "# a comment", "", "y = x * 2"],
    ["def g(values):", "    total = 0", "    for x in values:", "        total += x", "    return total"],
]

edits = st.lists(st.integers(0, len(POOL) - 1), min_size=0, max_size=3)
step = st.tuples(edits, st.booleans())
trajectory = st.tuples(st.integers(0, 2), st.lists(step, min_size=1, max_size=3), st.sampled_from([0.0, 0.5, 1.0]))


def build(spec):
    trajs = []
    for task, steps, reward in spec:
        built = []
        for blocks, with_offsets in steps:
            lines = [line for b in blocks for line in POOL[b]]
            hunks, start = [], 5
            for b in blocks:
                hunks.append(added_hunk(POOL[b], start))
                start += len(POOL[b]) + 10
            action = insert_call("m.py", lines) if blocks else "just looking"
            diff = file_diff("m.py", *hunks) if blocks else ""
            built.append(credit.Step(action, diff, token_offsets=offsets(action) if with_offsets else None,
                                     observation=str(len(blocks))))
        trajs.append(credit.Trajectory(f"task{task}", built, reward))
    return trajs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(trajectory, min_size=1, max_size=8), st.sampled_from(["mean_norm", "mean_std_norm"]),
       st.sampled_from(["reference", "contrast", "within", "nested", "split"]), st.sampled_from(["steps", "trajectories"]),
       st.sampled_from(["tree-sitter", "indent"]), st.sampled_from([1e-6, 0.0]), st.booleans())
def test_didpo_shapes_finiteness_and_zero_sum(spec, mode, baseline, count, syntax, eps, contrast_std):
    trajs = build(spec)
    res = credit.didpo(trajs, mode=mode, baseline=baseline, count=count, syntax=syntax, eps=eps,
                       contrast_std=contrast_std)
    n_steps = sum(len(t.steps) for t in trajs)
    assert res.episode.shape == (len(trajs),) and np.isfinite(res.episode).all()
    assert res.steps.returns.shape == (n_steps,) and np.isfinite(res.steps.returns).all()
    assert res.steps.diff_row.shape == res.steps.diff_anchor.shape == res.steps.diff_advantage.shape
    for traj, per_step in zip(trajs, res.tokens):
        assert len(per_step) == len(traj.steps)
        for s, values in zip(traj.steps, per_step):
            if s.token_offsets is None:
                assert values is None
            else:
                assert values.shape == (len(s.offsets),) and np.isfinite(values).all()
    for a in res.anchors:
        assert len(set(a.rows.tolist())) == len(a.rows) >= 2
        assert len({trajs[i].task_id for i in a.trajectories.tolist()}) == 1
        assert np.isfinite(a.advantage).all() and a.gs > 0
        if baseline == "reference" and mode == "mean_norm":
            assert abs(a.advantage.sum()) < 1e-9


@settings(max_examples=25, deadline=None)
@given(st.lists(trajectory, min_size=1, max_size=8))
def test_every_estimator_gives_finite_tokens_of_the_right_length(spec):
    trajs = build(spec)
    for name in credit.ESTIMATORS:
        res = credit.get(name)(trajs)
        for traj, per_step in zip(trajs, res.tokens):
            for s, values in zip(traj.steps, per_step):
                assert (values is None) == (s.token_offsets is None)
                if values is not None:
                    assert values.shape == (len(s.offsets),) and np.isfinite(values).all()


code_line = st.lists(st.sampled_from(["x", "y", "total", "=", "+", "(", ")", "1", "2", "return", "if", ":"]),
                     min_size=1, max_size=8).map(" ".join)
code_text = st.lists(code_line, min_size=1, max_size=6).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(code_text, min_size=2, max_size=2), st.sampled_from([0.5, 0.7, 0.8, 0.9]))
def test_two_texts_group_exactly_when_their_similarity_reaches_the_threshold(texts, threshold):
    from credit.grouping import group_texts
    from credit.text import similarity

    labels = group_texts(texts, threshold=threshold)
    assert (labels[0] == labels[1]) == (similarity(*texts) >= threshold - 1e-12)


def representative_clusters(texts, threshold, class_id):
    """Brute-force oracle: exact classes by support, then length, then exact-class id (which
    follows the content, not the position in the batch); each founding representative takes the
    unassigned classes similar to it."""
    from credit.text import similarity

    keys = ["\n".join(line.strip() for line in t.splitlines() if line.strip()) for t in texts]
    classes = list(dict.fromkeys(keys))
    support = {k: keys.count(k) for k in classes}
    order = sorted(classes, key=lambda k: (-support[k], -len(k.splitlines()), class_id[keys.index(k)]))
    cluster = {}
    for c in order:
        if c in cluster:
            continue
        cluster[c] = c
        for x in order:
            if x not in cluster and similarity(c, x) >= threshold - 1e-12:
                cluster[x] = c
    return {frozenset(i for i, k in enumerate(keys) if cluster[k] == rep) for rep in set(cluster.values())}


@settings(max_examples=150, deadline=None)
@given(st.lists(code_text, min_size=1, max_size=7), st.sampled_from([0.6, 0.8]))
def test_clusters_match_a_brute_force_representative_centred_oracle(texts, threshold):
    from credit.grouping import cluster_texts

    clusters = cluster_texts(texts, threshold=threshold)
    labels = clusters.labels.tolist()
    got = {frozenset(i for i, lab in enumerate(labels) if lab == c) for c in set(labels)}
    assert got == representative_clusters(texts, threshold, clusters.exact.tolist())


def partition(labels):
    return {frozenset(i for i, lab in enumerate(labels) if lab == c) for c in set(labels)}


@settings(max_examples=150, deadline=None)
@given(st.lists(code_text, min_size=2, max_size=7), st.sampled_from([0.6, 0.8]), st.randoms())
def test_clusters_do_not_depend_on_the_order_of_the_texts(texts, threshold, rnd):
    from credit.grouping import group_texts

    perm = list(range(len(texts)))
    rnd.shuffle(perm)
    before = group_texts(texts, threshold=threshold).tolist()
    after = group_texts([texts[i] for i in perm], threshold=threshold).tolist()
    # the text at position j of the shuffled list is texts[perm[j]]
    assert {frozenset(perm[j] for j in part) for part in partition(after)} == partition(before)


# a chain of near-duplicates: each is similar to the next, the ends are not (A ~ B ~ C)
CHAIN = [["def add(a, b):", "    return a + b"],
         ["def add(a, b):", "    return a + b + 0"],
         ["def add(a, b):", "    return a + b + 0 + 0"]]


def test_didpo_does_not_depend_on_the_order_of_the_trajectories():
    from credit.text import similarity

    texts = ["\n".join(c) for c in CHAIN]
    t = 0.9
    assert similarity(texts[0], texts[1]) >= t and similarity(texts[1], texts[2]) >= t > similarity(texts[0], texts[2])
    trajs = []
    for variant, reward in zip(CHAIN, [1.0, 0.0, 0.5]):  # one each: equal support, equal length
        action = insert_call("m.py", variant)
        step = credit.Step(action, file_diff("m.py", added_hunk(variant, 5)), token_offsets=offsets(action))
        trajs.append(credit.Trajectory("task", [step], reward))
    trajs.append(credit.Trajectory("task", [credit.Step("just looking", "", token_offsets=offsets("just looking"))], 0.0))
    for perm in ([0, 1, 2, 3], [2, 1, 0, 3], [1, 2, 3, 0], [3, 2, 1, 0]):
        res = credit.didpo([trajs[i] for i in perm], similarity=t)
        ref = credit.didpo(trajs, similarity=t)
        for pos, i in enumerate(perm):
            np.testing.assert_array_equal(res.tokens[pos][0], ref.tokens[i][0])
            assert res.episode[pos] == ref.episode[i]


@pytest.mark.parametrize("seed", range(6))
def test_lexsort_ints_is_numpys_lexsort(seed):
    """credit._util.lexsort_ints: the order of np.lexsort (ties in index order) for integer keys of
    any sign and width, packed into one int64 sort where they fit and left to np.lexsort where not."""
    from credit._util import lexsort_ints

    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(0, 300))
        keys = []
        for _ in range(int(rng.integers(1, 4))):
            width = int(rng.choice([1, 3, 12, 30, 62]))
            lo = -(1 << width) if rng.random() < 0.3 else 0
            key = rng.integers(lo, 1 << width, size=n, dtype=np.int64)
            kind = rng.random()
            if kind < 0.1:
                key = key > 0
            elif kind < 0.2 and width < 30 and lo == 0:
                key = key.astype(np.uint32)
            keys.append(key)
        np.testing.assert_array_equal(lexsort_ints(tuple(keys)), np.lexsort(tuple(keys)))
