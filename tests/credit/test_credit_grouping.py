import numpy as np
import pytest

from credit._util import count_at_most, csr_pointers, ranges, sorted_keys, unique_ints
from credit.grouping import cluster_units, group_texts
from credit.text import Contents, line_table, similarity

TOTAL = """def total_price(items, tax):
    total = 0
    for item in items:
        price = item.price * item.quantity
        total += price
    if tax:
        total = total * (1 + tax)
    # round to cents
    result = round(total, 2)
    return result
"""
RENAMED = TOTAL.replace("total =", "acc =").replace("total +=", "acc +=").replace("total *", "acc *").replace(
    "round(total", "round(acc")
CACHE = """class Cache:
    def __init__(self, size):
        self.size = size
        self.data = {}

    def get(self, key):
        return self.data.get(key)
"""


def test_renamed_variable_groups_with_the_original_unrelated_code_does_not():
    assert similarity(TOTAL, RENAMED) > 0.8 > similarity(TOTAL, CACHE)
    labels = group_texts([TOTAL, CACHE, RENAMED, CACHE])
    assert labels[0] == labels[2] and labels[1] == labels[3] and labels[0] != labels[1]


def test_exact_grouping_ignores_comments_blank_lines_and_trailing_whitespace():
    noisy = TOTAL.replace("    total = 0\n", "    total = 0   # start\n\n").replace("return result", "return result  ")
    labels = group_texts([TOTAL, noisy, RENAMED], threshold=1.0)
    assert labels[0] == labels[1] != labels[2]


def test_relative_indentation_matters_for_exact_groups_only():
    flat = "if a:\n    b = 1\nc = 2\n"
    nested = "if a:\n    b = 1\n    c = 2\n"
    shifted = "    if a:\n        b = 1\n    c = 2\n"
    exact = group_texts([flat, nested, shifted], threshold=1.0)
    assert exact[0] == exact[2] != exact[1]
    assert len(set(group_texts([flat, nested, shifted]).tolist())) == 1


def test_buckets_never_mix_and_empty_units_get_no_label():
    labels = group_texts([TOTAL, TOTAL, "# comment\n\n"], buckets=[0, 1, 0])
    assert labels[0] != labels[1] and labels[2] == -1


def test_clusters_are_representative_centred_not_chained():
    a = " ".join(f"t{i}" for i in range(10))
    b = " ".join(f"t{i}" for i in range(2, 12))  # dice(a, b) = 0.8
    c = " ".join(f"t{i}" for i in range(4, 14))  # dice(b, c) = 0.8, dice(a, c) = 0.6
    assert similarity(a, b) == pytest.approx(0.8) and similarity(a, c) == pytest.approx(0.6)
    # b has the most support, so it represents; a and c both join it
    assert len(set(group_texts([a, b, b, c]).tolist())) == 1
    # a has the most support: b joins a, c is not similar to a and founds its own cluster
    labels = group_texts([a, a, b, c])
    assert labels[0] == labels[2] != labels[3]


def test_threshold_is_inclusive_and_checked():
    a = " ".join(f"t{i}" for i in range(10))
    b = " ".join(f"t{i}" for i in range(2, 12))
    assert group_texts([a, b], threshold=0.8)[0] == group_texts([a, b], threshold=0.8)[1]
    separate = group_texts([a, b], threshold=0.81)
    assert separate[0] != separate[1] and sorted(separate.tolist()) == [0, 1]
    with pytest.raises(ValueError, match="threshold"):
        group_texts([a], threshold=0.0)


def test_many_near_duplicates_are_found_without_all_pairs():
    rng = np.random.default_rng(0)
    base = [" ".join(f"w{rng.integers(10_000)}" for _ in range(40)) for _ in range(30)]
    texts = []
    for text in base:
        words = text.split()
        for _ in range(3):
            w = list(words)
            w[int(rng.integers(40))] = "changed"
            texts.append(" ".join(w))
    labels = group_texts(texts)
    assert len(set(labels.tolist())) == 30
    assert all(len(set(labels[3 * k:3 * k + 3].tolist())) == 1 for k in range(30))


def test_a_pair_exactly_at_the_size_and_prefix_bounds_is_found():
    # y (8 tokens) inside x (12): dice = 16 / 20 = 0.8, the smallest |y| for |x| = 12; x's own 4
    # tokens are rarer than the shared ones, so x's first shared token is the last of its probe
    # prefix (12 - ceil(12 * 0.8 / 1.2) + 1 = 5 tokens)
    shared = " ".join(f"s{i}" for i in range(8))
    x, y = "a b c d " + shared, shared
    assert similarity(x, y) == pytest.approx(0.8)
    labels = group_texts([x, y], threshold=0.8)
    assert labels[0] == labels[1]


def _family_texts(rng, n_families, copies, words):
    """Near-duplicate families: each copy of a random base text with a few tokens replaced."""
    texts = []
    for _ in range(n_families):
        base = [list(rng.choice(words, int(rng.integers(1, 10)))) for _ in range(int(rng.integers(1, 6)))]
        if rng.random() < 0.15:
            base.append(["x"] * int(rng.integers(60, 90)))  # more copies than similarity counts
        for _ in range(copies):
            lines = [list(line) for line in base]
            for _ in range(int(rng.integers(0, 4))):
                line = lines[int(rng.integers(len(lines)))]
                line[int(rng.integers(len(line)))] = str(rng.choice(words))
            texts.append("\n".join(" ".join(line) for line in lines))
    return [texts[i] for i in rng.permutation(len(texts))]


def _clusters(texts, buckets, threshold):
    lines = [line for t in texts for line in t.splitlines()]
    table = line_table(lines, np.ones(len(lines), np.int64))
    ptr = np.concatenate([[0], np.cumsum([len(t.splitlines()) for t in texts])])
    return cluster_units(np.asarray(buckets), ptr, table.content, table.indent, table.contents, threshold=threshold)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.95])
def test_near_duplicate_families_match_a_brute_force_oracle(threshold):
    rng = np.random.default_rng(int(threshold * 100))
    words = np.array([f"w{i}" for i in range(12)] + ["(", ")", "=", "self", "."])
    texts = _family_texts(rng, 12, 6, words)
    buckets = rng.integers(0, 3, len(texts))
    clusters = _clusters(texts, buckets, threshold)

    # oracle: per bucket, exact classes by support, each founding representative takes the
    # unassigned classes similar to it; and the similar pairs of distinct classes, all counted
    expected, n_similar = set(), 0
    for b in np.unique(buckets).tolist():
        members = np.flatnonzero(buckets == b)
        keys = [texts[i] for i in members]
        classes = list(dict.fromkeys(keys))
        support = {k: keys.count(k) for k in classes}
        # ties: the exact-class id, which follows the content, never the position in the batch
        class_id = {k: int(clusters.exact[members[keys.index(k)]]) for k in classes}
        order = sorted(classes, key=lambda k: (-support[k], -len(k.splitlines()), class_id[k]))
        similar = {(p, q): similarity(p, q) >= threshold - 1e-12 for p in classes for q in classes if p != q}
        n_similar += sum(similar.values()) // 2
        founder = {}
        for c in order:
            if c not in founder:
                founder[c] = c
                founder.update({x: c for x in order if x not in founder and similar[c, x]})
        expected |= {frozenset(members[i] for i, k in enumerate(keys) if founder[k] == rep)
                     for rep in set(founder.values())}
    labels = clusters.labels.tolist()
    assert {frozenset(i for i, lab in enumerate(labels) if lab == c) for c in set(labels)} == expected
    assert clusters.n_candidate_pairs == n_similar


def test_sorted_keys_unique_ints_and_count_at_most_agree_with_numpy_on_both_paths():
    rng = np.random.default_rng(0)
    for bound in (50, 1 << 20, 1 << 40):
        keys = rng.integers(0, bound, 1000)
        assert np.array_equal(sorted_keys(keys, bound), np.sort(keys))
        got, want = unique_ints(keys, bound), np.unique(keys, return_inverse=True, return_counts=True)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        values, queries = np.sort(keys[:300]), rng.integers(0, bound, 200)
        assert np.array_equal(count_at_most(values, queries, bound), np.searchsorted(values, queries, side="right"))
    assert sorted_keys(np.array([5, 1]), 10).dtype == np.uint32


def test_ranges_skips_empty_and_reversed_ranges():
    assert ranges(np.array([3, 7, 0, 10]), np.array([5, 7, 2, 9])).tolist() == [3, 4, 0, 1]
    assert ranges(np.array([4]), np.array([4])).tolist() == []


@pytest.mark.parametrize("chunk", [1, 5, 40])
def test_pairs_searched_by_chunks_of_buckets_give_the_same_clusters(chunk, monkeypatch):
    """The numpy search looks for near-duplicate pairs a few buckets at a time (`_CHUNK_CLASSES`);
    every chunking must give the clusters, representatives and pair count of one search over all
    buckets."""
    import credit.grouping as grouping

    rng = np.random.default_rng(chunk)
    words = np.array([f"w{i}" for i in range(12)] + ["(", ")", "=", "self", "."])
    texts = _family_texts(rng, 30, 5, words)
    buckets = rng.integers(0, 12, len(texts))
    whole = _clusters(texts, buckets, 0.7)
    monkeypatch.setattr(grouping, "_CHUNK_CLASSES", chunk)
    assert len(grouping._bucket_chunks(np.sort(buckets))) > 1
    chunked = _clusters(texts, buckets, 0.7)
    assert chunked.labels.tolist() == whole.labels.tolist()
    assert chunked.representative.tolist() == whole.representative.tolist()
    assert chunked.n_candidate_pairs == whole.n_candidate_pairs > 0


def _pairs(args, threshold):
    import credit.grouping as grouping

    a, b = grouping._similar_pairs(*args, threshold)
    return list(zip(a.tolist(), b.tolist()))


def test_the_pair_search_on_edge_shapes():
    """No classes, one class, only empty classes, all classes equal, one big bucket."""
    contents = Contents(np.zeros(2, np.uint64), np.array([0, 0, 3]), np.array([1, 2, 1]), 3)
    unit_ptr = np.array([0, 0, 1, 2, 3, 4, 5])  # unit 0 no line, unit 1 a line of no token, units 2.. 3 tokens
    content = np.array([0, 1, 1, 1, 1], np.int64)
    all_equal = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    for first_unit, class_bucket, expected in [
            ([], [], []), ([2], [0], []), ([0, 1], [0, 0], []), ([2, 3, 4, 5], [0, 0, 0, 0], all_equal),
            ([0, 2, 1, 3, 4, 5], [0, 0, 1, 1, 1, 2], [(3, 4)])]:  # bucket 1's two equal classes, not its empty line
        args = (np.array(first_unit, np.int64), np.array(class_bucket, np.int64), unit_ptr, content, contents)
        for threshold in (0.5, 1.0):
            assert _pairs(args, threshold) == expected


def test_a_pair_exactly_on_a_threshold_that_rounds_up_is_kept():
    """dice = 60 / 85 = 12 / 17 exactly, but 12 / 17 * 85 is 60.00000000000001 in float64: the pair
    passes only through the 1e-12 of the acceptance test."""
    shared, own_a, own_b = np.arange(30), np.arange(30, 40), np.arange(40, 55)
    lines = [np.concatenate([own_a, shared]), np.concatenate([shared[::-1], own_b])]
    contents = Contents(np.zeros(2, np.uint64), csr_pointers([40, 45]), np.concatenate(lines), 55)
    args = (np.array([0, 1]), np.array([0, 0]), np.array([0, 1, 2]), np.array([0, 1]), contents)
    assert 12 / 17 * 85 > 60
    assert _pairs(args, 12 / 17) == [(0, 1)]
    assert _pairs(args, np.nextafter(12 / 17, 1) + 2e-12) == []
