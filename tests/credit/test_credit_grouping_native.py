"""The clusters' founding loop in C (`credit._native.founders`) against the Python loop it replaces
(`credit.grouping._founders`): random similarity graphs and visiting orders, and whole clusterings;
the near-duplicate pair search in C (`credit._pairs.near_pairs`) against the numpy one
(`credit.grouping._similar_pairs` without it): random multisets, edge shapes, whole clusterings."""
import numpy as np
import pytest
from credit_testlib import need_native

import credit.grouping as grouping_module
from credit._util import csr_pointers
from credit.grouping import cluster_texts
from credit.text import Contents


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


def _random_search(rng, n_buckets, most_families=5):
    """Classes of random token multisets in sorted buckets, with many near-duplicates: each bucket
    holds families of a base multiset over a small vocabulary, copies with a few tokens replaced,
    added or dropped; some buckets of one class, some classes empty or a token repeated past
    MAX_COPIES. Returns the arguments of `grouping._similar_pairs` but the threshold."""
    vocab = int(rng.integers(4, 40))
    lines, units, class_bucket = [], [], []
    for bucket in range(n_buckets):
        n_families = 1 if rng.random() < 0.2 else int(rng.integers(1, most_families + 1))
        for _ in range(n_families):
            base = rng.integers(0, vocab, int(rng.integers(0, 30)))
            if rng.random() < 0.15:
                base = np.concatenate([base, np.full(int(rng.integers(50, 90)), vocab)])  # past MAX_COPIES
            for _ in range(1 if n_families == 1 else int(rng.integers(1, 8))):
                tokens = base.copy()
                for _ in range(int(rng.integers(0, 4))):
                    edit, where = rng.random(), int(rng.integers(len(tokens) + 1))
                    if edit < 0.4 and len(tokens):
                        tokens[min(where, len(tokens) - 1)] = rng.integers(0, vocab + 1)
                    elif edit < 0.7:
                        tokens = np.insert(tokens, where, rng.integers(0, vocab + 1))
                    elif len(tokens):
                        tokens = np.delete(tokens, min(where, len(tokens) - 1))
                cuts = np.sort(rng.integers(0, len(tokens) + 1, int(rng.integers(0, 4))))
                units.append([len(lines) + k for k in range(len(cuts) + 1)])
                lines += np.split(rng.permutation(tokens), cuts)
                class_bucket.append(bucket)
    order = rng.permutation(len(lines))  # contents listed in another order than the units read them
    where = np.argsort(order)
    contents = Contents(np.zeros(len(lines), np.uint64), csr_pointers([len(lines[k]) for k in order]),
                        np.concatenate([lines[k] for k in order] + [np.zeros(0, np.int64)]).astype(np.int64),
                        vocab + 1)
    unit_ptr = csr_pointers([len(u) for u in units])
    content = np.array([where[k] for u in units for k in u], np.int64)
    first_unit = rng.permutation(len(units)).astype(np.int64)  # the classes' units anywhere in the batch
    return first_unit, np.asarray(class_bucket, np.int64), unit_ptr, content, contents


def _pairs_both_ways(monkeypatch, args, threshold):
    native = grouping_module.c_near_pairs
    got = []
    for search in (native, None):
        monkeypatch.setattr(grouping_module, "c_near_pairs", search)
        a, b = grouping_module._similar_pairs(*args, threshold)
        got.append(list(zip(a.tolist(), b.tolist())))
    monkeypatch.setattr(grouping_module, "c_near_pairs", native)
    return got


@pytest.mark.parametrize("seed", range(6))
def test_the_c_pair_search_finds_the_numpy_pairs(seed, monkeypatch):
    """The same (a, b) pairs, oriented and listed alike, at thresholds from 0.3 to 1.0 and on the
    bounds of the Dice test (small multisets make many pairs land exactly on a threshold)."""
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(grouping_module, "_CHUNK_CLASSES", int(rng.choice([7, 64, 4096])))  # numpy: many chunks
    found = 0
    for big in (False, False, False, False, False, True):  # and one search of buckets of hundreds of classes
        args = _random_search(rng, 3, 80) if big else _random_search(rng, int(rng.integers(1, 30)))
        for threshold in (0.3, 0.5, 2 / 3, 0.75, 0.8, 0.9, 1.0, float(rng.uniform(0.05, 1.0))):
            native, numpy_pairs = _pairs_both_ways(monkeypatch, args, threshold)
            assert native == numpy_pairs, threshold
            found += len(native)
    assert found > 1000


def test_the_c_pair_search_on_edge_shapes(monkeypatch):
    """No classes, one class, only empty classes, all classes equal, one big bucket."""
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    contents = Contents(np.zeros(2, np.uint64), np.array([0, 0, 3]), np.array([1, 2, 1]), 3)
    unit_ptr = np.array([0, 0, 1, 2, 3, 4, 5])  # unit 0 no line, unit 1 a line of no token, units 2.. 3 tokens
    content = np.array([0, 1, 1, 1, 1], np.int64)
    for first_unit, class_bucket in [([], []), ([2], [0]), ([0, 1], [0, 0]), ([2, 3, 4, 5], [0, 0, 0, 0]),
                                     ([0, 2, 1, 3, 4, 5], [0, 0, 1, 1, 1, 2])]:
        args = (np.array(first_unit, np.int64), np.array(class_bucket, np.int64), unit_ptr, content, contents)
        for threshold in (0.5, 1.0):
            native, numpy_pairs = _pairs_both_ways(monkeypatch, args, threshold)
            assert native == numpy_pairs
    assert native == [(3, 4)]  # the two equal classes of bucket 1, not its class of an empty line


def test_a_pair_exactly_on_a_threshold_that_rounds_up_is_kept_by_both_searches(monkeypatch):
    """dice = 60 / 85 = 12 / 17 exactly, but 12 / 17 * 85 is 60.00000000000001 in float64: the pair
    passes only through the 1e-12 of the acceptance test, in C as in numpy."""
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    shared, own_a, own_b = np.arange(30), np.arange(30, 40), np.arange(40, 55)
    lines = [np.concatenate([own_a, shared]), np.concatenate([shared[::-1], own_b])]
    contents = Contents(np.zeros(2, np.uint64), csr_pointers([40, 45]), np.concatenate(lines), 55)
    args = (np.array([0, 1]), np.array([0, 0]), np.array([0, 1, 2]), np.array([0, 1]), contents)
    assert 12 / 17 * 85 > 60
    for threshold, expected in [(12 / 17, [(0, 1)]), (np.nextafter(12 / 17, 1) + 2e-12, [])]:
        native, numpy_pairs = _pairs_both_ways(monkeypatch, args, threshold)
        assert native == numpy_pairs == expected


@pytest.mark.parametrize("threshold", [0.3, 0.6, 0.8, 0.95])
def test_c_and_numpy_pair_searches_give_the_same_clusters(threshold, monkeypatch):
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    rng = np.random.default_rng(int(threshold * 100))
    words = [f"w{i}" for i in range(10)] + ["(", ")", "="]
    texts, buckets = [], []
    for _ in range(60):
        base = [list(rng.choice(words, int(rng.integers(1, 8)))) for _ in range(int(rng.integers(1, 5)))]
        bucket = int(rng.integers(0, 8))
        for _ in range(int(rng.integers(1, 6))):
            lines = [list(line) for line in base]
            for _ in range(int(rng.integers(0, 3))):
                line = lines[int(rng.integers(len(lines)))]
                line[int(rng.integers(len(line)))] = str(rng.choice(words))
            texts.append("\n".join(" ".join(line) for line in lines))
            buckets.append(bucket)
    got = []
    for search in (grouping_module.c_near_pairs, None):
        monkeypatch.setattr(grouping_module, "c_near_pairs", search)
        got.append(cluster_texts(texts, buckets, threshold=threshold))
    native, numpy_clusters = got
    for field in ("labels", "representative", "exact"):
        np.testing.assert_array_equal(getattr(native, field), getattr(numpy_clusters, field))
    assert native.n_candidate_pairs == numpy_clusters.n_candidate_pairs > 0


def test_the_c_pair_search_refuses_bad_input():
    native = grouping_module.c_near_pairs
    need_native(native, "credit._pairs")
    unit_ptr, content = np.array([0, 1, 2]), np.array([0, 1])
    token_ptr, tokens = np.array([0, 2, 3]), np.array([0, 1, 1])

    def call(first_unit=(0, 1), bucket=(0, 0), unit_ptr=unit_ptr, content=content, token_ptr=token_ptr,
             tokens=tokens, threshold=0.5):
        arrays = [np.asarray(x, np.int64) for x in (first_unit, bucket, unit_ptr, content, token_ptr, tokens)]
        return np.frombuffer(native(*arrays, 64, threshold), np.int64).tolist()

    assert call() == [1, 0] and call(threshold=0.9) == []  # dice 2 / 3: the smaller class first
    for kwargs, message in [
        (dict(first_unit=(0, 2)), "first_unit names a unit"),
        (dict(first_unit=(0, -1)), "first_unit names a unit"),
        (dict(bucket=(1, 0)), "non-decreasing"),
        (dict(bucket=(0,)), "class_bucket must match"),
        (dict(unit_ptr=(0, 2, 1)), "unit_ptr not sorted"),
        (dict(unit_ptr=(0, 1, 5)), "unit_ptr not sorted"),
        (dict(content=(0, 2)), "content names a line"),
        (dict(token_ptr=(0, 4, 3)), "token_ptr not sorted"),
        (dict(tokens=(0, -1, 1)), "token id out of range"),
        (dict(threshold=0.0), "threshold"),
        (dict(threshold=1.5), "threshold"),
    ]:
        with pytest.raises(ValueError, match=message):
            call(**kwargs)
    with pytest.raises(ValueError, match="int64"):
        native(np.array([0, 1], np.int32), *[np.asarray(x, np.int64) for x in ((0, 0), unit_ptr, content,
                                                                              token_ptr, tokens)], 64, 0.5)


# The pair search on threads (credit/_threads.h): buckets cut into runs of about equal work, one per
# part, joined in bucket order; CREDIT_THREADS (read at each call) sets the threads.

THREADS = (1, 2, 3, 4)


def _pairs_by_threads(monkeypatch, args, threshold, split):
    """The C pairs of `_similar_pairs` at each thread count of THREADS (each checked to have been
    cut into that many parts when `split`, left whole otherwise), and the numpy pairs."""
    import credit._pairs

    native = grouping_module.c_near_pairs
    got = {}
    for threads in THREADS:
        monkeypatch.setenv("CREDIT_THREADS", str(threads))
        a, b = grouping_module._similar_pairs(*args, threshold)
        got[threads] = list(zip(a.tolist(), b.tolist()))
        assert credit._pairs.last_parts() == (threads if split else 1), (threads, threshold)
    monkeypatch.setattr(grouping_module, "c_near_pairs", None)
    a, b = grouping_module._similar_pairs(*args, threshold)
    monkeypatch.setattr(grouping_module, "c_near_pairs", native)
    return got, list(zip(a.tolist(), b.tolist()))


def test_the_c_pair_search_gives_the_same_pairs_on_any_threads_on_the_benchmark_batch(monkeypatch):
    """The paper shape of benchmarks/credit_bench.py is cut into as many parts as there are threads,
    with the pairs of one thread (and of numpy), in the same order, and the same didpo result."""
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    import credit
    from credit_testlib import load_bench

    batch = [t.to_dict() for t in load_bench().rollouts(6, 32, 8, seed=0)]
    calls, real = [], grouping_module._similar_pairs

    def watched(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(grouping_module, "_similar_pairs", watched)
    results = {}
    for threads in (1, 2):
        monkeypatch.setenv("CREDIT_THREADS", str(threads))
        results[threads] = credit.didpo(batch)
    monkeypatch.setattr(grouping_module, "_similar_pairs", real)
    assert len(calls) == 2
    assert results[1].stats["coverage"] == results[2].stats["coverage"]
    for a, b in zip(results[1].tokens, results[2].tokens):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    got, numpy_pairs = _pairs_by_threads(monkeypatch, calls[0][:-1], calls[0][-1], split=True)
    assert len(numpy_pairs) > 1000
    for threads in THREADS:
        assert got[threads] == numpy_pairs, threads


@pytest.mark.parametrize("seed", range(3))
def test_the_c_pair_search_gives_the_same_pairs_on_any_threads_on_random_searches(seed, monkeypatch):
    """Small random searches stay in one part; one of 40 buckets of up to 80 families is cut into
    as many parts as there are threads. Every thread count gives the one-thread (and numpy) pairs."""
    need_native(grouping_module.c_near_pairs, "credit._pairs")
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        args = _random_search(rng, int(rng.integers(1, 6)))
        for threshold in (0.5, 0.8, 1.0):
            got, numpy_pairs = _pairs_by_threads(monkeypatch, args, threshold, split=False)
            assert all(got[threads] == numpy_pairs for threads in THREADS), threshold
    args = _random_search(rng, 40, 80)
    found = 0
    for threshold in (0.3, 0.5, 2 / 3, 0.8, 0.9, 1.0, float(rng.uniform(0.05, 1.0))):
        got, numpy_pairs = _pairs_by_threads(monkeypatch, args, threshold, split=True)
        for threads in THREADS:
            assert got[threads] == numpy_pairs, (threads, threshold)
        found += len(numpy_pairs)
    assert found > 10000


def test_the_c_pair_search_on_threads_raises_the_error_of_the_first_bucket(monkeypatch):
    """An error in the last bucket (in the last part) is raised whatever the threads; with another
    in the first bucket, that one is, as with one thread."""
    native = grouping_module.c_near_pairs
    need_native(native, "credit._pairs")
    import credit._pairs

    rng = np.random.default_rng(7)
    first_unit, class_bucket, unit_ptr, content, contents = _random_search(rng, 40, 80)
    buckets, sizes = np.unique(class_bucket, return_counts=True)
    first = int(np.flatnonzero(class_bucket == buckets[sizes >= 2][0])[0])
    last = int(np.flatnonzero(class_bucket == buckets[sizes >= 2][-1])[0])
    n_units = unit_ptr.shape[0] - 1
    # the last unit for a class of the last bucket: unit_ptr's last entry then concerns it alone
    at = int(np.flatnonzero(first_unit == n_units - 1)[0])
    first_unit[[at, last]] = first_unit[[last, at]]
    assert first_unit[first] != n_units - 1
    bad_ptr = unit_ptr.copy()
    bad_ptr[-1] += 1  # past the lines: the last bucket's class fails
    bad_content = content.copy()
    bad_content[unit_ptr[first_unit[first]]] = contents.token_ptr.shape[0]  # the first bucket's class fails
    arrays = [np.asarray(x, np.int64) for x in (first_unit, class_bucket, bad_ptr, content,
                                                 contents.token_ptr, contents.tokens)]
    for bad_first, message in [(False, "unit_ptr not sorted"), (True, "content names a line")]:
        arrays[3] = bad_content if bad_first else arrays[3]
        for threads in THREADS:
            monkeypatch.setenv("CREDIT_THREADS", str(threads))
            with pytest.raises(ValueError, match=message):
                native(*arrays, 64, 0.8)
            assert credit._pairs.last_parts() == threads
