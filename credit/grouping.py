r"""Group similar sub-diffs: exact groups by a stable hash, near-duplicates by token similarity.

Comparison ignores comments, blank lines and trailing whitespace (`credit.text`). Two units are

  exact duplicates when their compared lines are equal, with the same relative indentation
    (a 64-bit polynomial hash of the lines' stable 64-bit hashes and indentation steps, grouped by
    sorting; never Python's salted `hash()`);
  near-duplicates when the Dice similarity of their token multisets reaches a threshold:

    sim(A, B) = 2 |A \cap B| / (|A| + |B|)

  the order-free analogue of difflib's ratio 2M / T that the reference implementation uses
  (verl-code `didpo/snippet.py::source_similarity`; the multiset form is an upper bound of it).
  Renaming a variable that makes k of N tokens gives sim = 1 - k / N.

Near-duplicate pairs are found without comparing all pairs: prefix filtering (Chaudhuri et al.
2006; Bayardo et al. 2007, "Scaling up all pairs similarity search") on the multisets encoded as
sets of (token, occurrence) elements. Sim >= t is Jaccard >= t / (2 - t); sets that similar share
an element among their first |A| - ceil(J |A|) + 1 elements in a global rarest-first order, so
only units sharing such a prefix element are verified. Clusters are representative-centred:
exact classes are visited by decreasing support, an unassigned one becomes a representative and
takes the unassigned classes similar to it, never classes that are only similar to a member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from credit._util import ranges, segment_starts, sorted_keys, unique_ints
from credit.text import MAX_COPIES, Contents, LineVocabulary

_MIX_INDENT = np.uint64(0x9E3779B97F4A7C15)
_MIX_LENGTH = np.uint64(0xC2B2AE3D27D4EB4F)
_POWER = np.uint64(0x100000001B3)


@dataclass(frozen=True, eq=False)
class Clusters:
    """Cluster labels of units.

    Attributes:
      labels: (U,) cluster id of each unit, -1 for a unit with no compared line.
      representative: (K,) the unit that represents each cluster (its first exact duplicate).
      exact: (U,) exact-duplicate class of each unit (-1 for no compared line).
      n_candidate_pairs: candidate pairs that passed the filters and were verified.
    """

    labels: np.ndarray
    representative: np.ndarray
    exact: np.ndarray
    n_candidate_pairs: int


def cluster_units(
    bucket: np.ndarray,
    unit_ptr: np.ndarray,
    content: np.ndarray,
    indent: np.ndarray,
    contents: Contents,
    *,
    threshold: float = 0.8,
) -> Clusters:
    """Exact + near-duplicate clustering of units given as sequences of compared lines.

    Args:
      bucket: (U,) int; units in different buckets (task, edit type) never share a cluster.
      unit_ptr: (U + 1,) CSR pointers into `content` / `indent`.
      content: (M,) content id (into `contents`) of each compared line, in unit order.
      indent: (M,) leading whitespace of each compared line.
      contents: the distinct contents (`LineVocabulary.arrays()`).
      threshold: Dice similarity for near-duplicates in (0, 1]; 1 keeps exact groups only.

    Returns:
      Clusters.
    """
    bucket = np.asarray(bucket, np.int64)
    n_units = bucket.shape[0]
    if unit_ptr.shape != (n_units + 1,) or content.shape != indent.shape or content.shape[0] != unit_ptr[-1]:
        raise ValueError("unit_ptr must have U + 1 entries ending at len(content) == len(indent)")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")

    exact, n_classes, first_unit = _exact_classes(bucket, unit_ptr, content, indent, contents.hashes)
    has = exact >= 0
    support = np.bincount(exact[has], minlength=n_classes)
    lengths = np.diff(unit_ptr)
    class_bucket = bucket[first_unit]
    order = np.lexsort((first_unit, -lengths[first_unit], -support))
    if threshold < 1.0 and n_classes > 1:
        cluster_of_class, n_pairs = _near_duplicate_clusters(
            order, first_unit, class_bucket, unit_ptr, content, contents, threshold)
    else:
        cluster_of_class, n_pairs = np.empty(n_classes, np.int64), 0
        cluster_of_class[order] = np.arange(n_classes)
    labels = np.full(n_units, -1, np.int64)
    labels[has] = cluster_of_class[exact[has]]
    visit = np.empty(n_classes, np.int64)
    visit[order] = np.arange(n_classes)
    first_visit = np.full(cluster_of_class.max(initial=-1) + 1, n_classes, np.int64)
    np.minimum.at(first_visit, cluster_of_class, visit)
    rep_class = order[first_visit]
    return Clusters(labels, first_unit[rep_class], exact, n_pairs)


def group_texts(
    texts: Sequence[str],
    buckets: Optional[Sequence[int]] = None,
    *,
    threshold: float = 0.8,
    comment: Optional[str] = "#",
) -> np.ndarray:
    """Cluster labels for code texts (convenience form of `cluster_units`).

    Args:
      texts: U code texts (one unit each).
      buckets: optional (U,) ints; texts in different buckets never group.
      threshold: Dice similarity for near-duplicates.
      comment: line-comment marker of the language.

    Returns:
      (U,) labels; -1 for a text with no compared line.
    """
    vocab = LineVocabulary()
    lines = [text.splitlines() for text in texts]
    content, indent = vocab.lines([line for ls in lines for line in ls], comment)
    unit = np.repeat(np.arange(len(texts)), [len(ls) for ls in lines])
    keep = content >= 0
    ptr = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(np.bincount(unit[keep], minlength=len(texts)), out=ptr[1:])
    bucket = np.zeros(len(texts), np.int64) if buckets is None else np.asarray(buckets, np.int64)
    return cluster_units(bucket, ptr, content[keep], indent[keep], vocab.arrays(), threshold=threshold).labels


def _exact_classes(bucket, unit_ptr, content, indent, hashes):
    """Exact-duplicate class per unit; class ids ordered by (bucket, key); first unit per class."""
    n_units = bucket.shape[0]
    lengths = np.diff(unit_ptr)
    unit_of = np.repeat(np.arange(n_units), lengths)
    pos = np.arange(content.shape[0]) - unit_ptr[unit_of]
    step = np.diff(indent, prepend=0)
    step[pos == 0] = 0
    value = hashes[content] ^ (step.astype(np.uint64) * _MIX_INDENT)
    powers = np.ones(max(int(lengths.max(initial=0)), 1), np.uint64)
    np.cumprod(np.full(powers.shape[0] - 1, _POWER, np.uint64), out=powers[1:])
    has = np.flatnonzero(lengths > 0)
    key = np.zeros(n_units, np.uint64)
    if has.shape[0]:
        key[has] = np.add.reduceat(value * powers[pos], unit_ptr[has])
    key ^= lengths.astype(np.uint64) * _MIX_LENGTH

    order = has[np.lexsort((has, key[has], bucket[has]))]
    new = np.ones(order.shape[0], bool)
    new[1:] = (key[order][1:] != key[order][:-1]) | (bucket[order][1:] != bucket[order][:-1])
    exact = np.full(n_units, -1, np.int64)
    exact[order] = np.cumsum(new) - 1
    return exact, int(new.sum()), order[new]


def _near_duplicate_clusters(order, first_unit, class_bucket, unit_ptr, content, contents, threshold):
    """Representative-centred clusters of exact classes; returns (cluster of each class, pairs verified)."""
    n_classes = first_unit.shape[0]
    elements = _class_elements(first_unit, class_bucket, unit_ptr, content, contents)
    a, b = _candidates(elements, threshold)
    a, b = _verified(a, b, elements, threshold)
    neighbours: list[list[int]] = [[] for _ in range(n_classes)]
    for x, y in zip(a.tolist(), b.tolist()):
        neighbours[x].append(y)
        neighbours[y].append(x)
    cluster = [-1] * n_classes
    next_id = 0
    for c in order.tolist():
        if cluster[c] >= 0:
            continue
        cluster[c] = next_id
        for other in neighbours[c]:
            if cluster[other] < 0:
                cluster[other] = next_id
        next_id += 1
    return np.asarray(cluster, np.int64), int(a.shape[0])


@dataclass(frozen=True, eq=False)
class _Elements:
    """Each class's token multiset as a set of elements (token, occurrence), in rarest-first order.

    Element ids are ranks in one global order (by the number of classes holding the element, then
    by token), and each class lists its elements in increasing id: the order prefix filtering needs.

    Attributes:
      ids: (E,) element ids of all classes, class after class.
      start, size: (C,) each class's segment of `ids`.
      n_ids: number of distinct elements.
      class_bucket: (C,) bucket of each class (non-decreasing).
    """

    ids: np.ndarray
    start: np.ndarray
    size: np.ndarray
    n_ids: int
    class_bucket: np.ndarray


def _class_elements(first_unit, class_bucket, unit_ptr, content, contents) -> _Elements:
    """The elements of each class representative."""
    n_classes = first_unit.shape[0]
    line_lo, line_hi = unit_ptr[first_unit], unit_ptr[first_unit + 1]
    lines = content[ranges(line_lo, line_hi)]
    line_class = np.repeat(np.arange(n_classes), line_hi - line_lo)
    tok_lo, tok_hi = contents.token_ptr[lines], contents.token_ptr[lines + 1]
    tokens = contents.tokens[ranges(tok_lo, tok_hi)]
    n_tok = np.int64(contents.n_tokens)
    pair = sorted_keys(np.repeat(line_class, tok_hi - tok_lo) * n_tok + tokens, n_classes * int(n_tok))
    occ = _run_position(pair)
    counted = occ < MAX_COPIES
    pair, occ = pair[counted], occ[counted]
    cls = pair // n_tok
    element = pair % n_tok * MAX_COPIES + occ
    holders = np.bincount(element, minlength=int(n_tok) * MAX_COPIES)
    present = np.flatnonzero(holders)
    rank = np.zeros(holders.shape[0], np.int64)
    rank[present[np.argsort(holders[present], kind="stable")]] = np.arange(present.shape[0])
    n_ids = np.int64(present.shape[0])
    ids = sorted_keys(cls * n_ids + rank[element], n_classes * int(n_ids)) % n_ids
    size = np.bincount(cls, minlength=n_classes)
    return _Elements(ids, segment_starts(size), size, int(n_ids), class_bucket)


def _run_position(keys: np.ndarray) -> np.ndarray:
    """Position of each entry of sorted `keys` within its run of equal keys."""
    index = np.arange(keys.shape[0], dtype=np.int32)
    head = np.ones(keys.shape[0], np.int32)
    np.not_equal(keys[1:], keys[:-1], out=head[1:], casting="unsafe")
    head *= index
    return (index - np.maximum.accumulate(head)).astype(np.int64)


def _candidates(elements: _Elements, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Candidate pairs of classes: every pair whose Dice similarity may reach the threshold.

    With t the threshold, a pair y, x of one bucket (|y| <= |x|, ties broken by class id) reaches
    it only when

      |x \cap y| >= alpha = ceil(t (|x| + |y|) / 2),  hence  |x| <= |y| (2 - t) / t,

    and then the first element they share is at a position j <= |y| - alpha of y, and so within its
    first |y| - ceil(t |y|) + 1 elements (its index prefix), and at a position i <= |x| - alpha of x,
    within its first |x| - ceil(t |x| / (2 - t)) + 1 elements (its probe prefix): the prefix filter
    of AllPairs (Bayardo et al. 2007) with the shorter index prefix and the positional filter of
    PPJoin (Xiao et al. 2008). Probe entries are sorted by (element, bucket, size, class); the x
    that an index entry (y, j) may meet, those with j <= |y| - alpha, form a contiguous run of them.
    """
    size, bucket = elements.size, elements.class_bucket
    n_classes = np.int64(size.shape[0])
    t = threshold - 1e-12  # what `_verified` accepts, so no filter is stricter than it
    span = int(size.max(initial=0)) + 1
    alpha = np.ceil(t / 2 * np.arange(2 * span + 1) - 1e-9).astype(np.int64)
    by_size = np.lexsort((size, bucket))
    size_rank = np.empty(n_classes, np.int64)
    size_rank[by_size] = np.arange(n_classes)

    probe_len = np.minimum(size - np.ceil(t / (2 - t) * size - 1e-9).astype(np.int64) + 1, size)
    entry = ranges(elements.start, elements.start + probe_len)
    cls = np.repeat(np.arange(n_classes), probe_len)
    width = np.int64(int(probe_len.max(initial=0)))
    probe = sorted_keys((elements.ids[entry] * n_classes + size_rank[cls]) * width + entry - elements.start[cls],
                        elements.n_ids * int(n_classes) * int(width))
    x, i = by_size[probe // width % n_classes], probe % width

    index = np.flatnonzero(i < size[x] - np.ceil(t * size[x] - 1e-9).astype(np.int64) + 1)
    y, j = x[index], i[index]
    reach = np.searchsorted(alpha, np.arange(span), side="right") - 1  # largest |x| + |y| with alpha <= k
    largest = np.minimum(reach[size[y] - j] - size[y], span - 1)
    end_rank = np.searchsorted(bucket[by_size] * span + size[by_size], bucket[y] * span + largest, side="right")
    lo = index + 1
    hi = np.searchsorted(probe, probe[index] + (end_rank - size_rank[y]) * width - j)

    hit = ranges(lo, hi)
    n_hits = np.maximum(hi - lo, 0)
    x, i = x[hit], i[hit]
    y = np.repeat(y, n_hits)
    ok = i + alpha[size[x] + size[y]] <= size[x]
    pairs = sorted_keys(y[ok] * n_classes + x[ok], int(n_classes) ** 2)
    pairs = pairs[np.append(True, pairs[1:] != pairs[:-1])] if pairs.shape[0] else pairs
    return pairs // n_classes, pairs % n_classes


def _verified(a, b, elements: _Elements, threshold):
    """The pairs whose Dice similarity reaches the threshold.

    Exact intersections by popcount: each class becomes a bitset over the elements that two or
    more classes of its bucket hold (the others cannot be shared), with one word count per bucket;
    classes of one word count are rows of one matrix, so pairs of that width are verified together.
    """
    if a.shape[0] == 0:
        return a, b
    size, class_bucket = elements.size, elements.class_bucket
    n_buckets = int(class_bucket.max(initial=0)) + 1
    cls = np.repeat(np.arange(size.shape[0]), size)
    n_ids = np.int64(elements.n_ids)
    key, item, holders = unique_ints(class_bucket[cls] * n_ids + elements.ids, n_buckets * int(n_ids))
    shared = holders >= 2
    per_bucket = np.bincount(key[shared] // n_ids, minlength=n_buckets)
    slot = (np.cumsum(shared) - 1 - segment_starts(per_bucket)[key // n_ids])[item]
    cls, slot = cls[shared[item]], slot[shared[item]]

    words = ((per_bucket + 63) // 64)[class_bucket]
    by_words = np.argsort(words, kind="stable")
    offset = np.empty(size.shape[0], np.int64)
    offset[by_words] = segment_starts(words[by_words])
    bits = np.zeros(int(words.sum()) * 64, bool)
    bits[offset[cls] * 64 + slot] = True
    bits = np.packbits(bits, bitorder="little").view(np.uint64)

    inter = np.zeros(a.shape[0], np.int64)
    pair_words = words[a]
    for w in np.unique(pair_words[pair_words > 0]).tolist():
        sel = np.flatnonzero(pair_words == w)
        first = offset[by_words[np.searchsorted(words[by_words], w)]]
        rows = bits[first:first + int((words == w).sum()) * w].reshape(-1, w)
        common = rows[(offset[a[sel]] - first) // w] & rows[(offset[b[sel]] - first) // w]
        inter[sel] = np.bitwise_count(common).sum(axis=1, dtype=np.int64)
    good = 2.0 * inter >= (threshold - 1e-12) * (size[a] + size[b])
    return a[good], b[good]
