import numpy as np
import pytest

from credit.grouping import group_texts
from credit.text import similarity

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
    assert group_texts([a, b], threshold=0.81).tolist() == [0, 1]
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
