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

from credit._util import ranges, segment_starts
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
    elements, class_start, size = _class_elements(first_unit, unit_ptr, content, contents)
    a, b = _candidates(elements, class_start, size, class_bucket, threshold)
    a, b = _verified(a, b, elements, class_start, size, class_bucket, threshold)
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


def _verified(a, b, elements, class_start, size, class_bucket, threshold):
    """The pairs whose Dice similarity reaches the threshold.

    Exact intersections by popcount: each class becomes a bitset over the elements of its bucket
    that occur in two or more classes (the others cannot be shared).
    """
    if a.shape[0] == 0:
        return a, b
    cls = np.repeat(np.arange(size.shape[0]), size)
    n_elem = np.int64(elements.max(initial=0) + 1)
    key = class_bucket[cls] * n_elem + elements
    uniq, inverse, count = np.unique(key, return_inverse=True, return_counts=True)
    shared = count[inverse] >= 2
    shared_uniq = np.flatnonzero(count >= 2)
    dense_of = np.full(uniq.shape[0], -1, np.int64)
    bucket_of = uniq[shared_uniq] // n_elem
    first = np.searchsorted(bucket_of, bucket_of, side="left")
    dense_of[shared_uniq] = np.arange(shared_uniq.shape[0]) - first
    n_buckets = int(class_bucket.max(initial=0)) + 1
    words = np.zeros(n_buckets, np.int64)
    np.maximum.at(words, bucket_of, dense_of[shared_uniq] // 64 + 1)
    class_words = words[class_bucket]
    offset = segment_starts(class_words)
    bits = np.zeros(int(class_words.sum()), np.uint64)
    dense = dense_of[inverse[shared]]
    bit = np.left_shift(np.uint64(1), (dense % 64).astype(np.uint64))
    np.bitwise_or.at(bits, offset[cls[shared]] + dense // 64, bit)
    w = class_words[a]
    pair_words = np.bitwise_count(bits[ranges(offset[a], offset[a] + w)] & bits[ranges(offset[b], offset[b] + w)])
    inter = np.zeros(a.shape[0], np.int64)
    nonzero = w > 0
    if nonzero.any():
        inter[nonzero] = np.add.reduceat(pair_words.astype(np.int64), segment_starts(w)[nonzero])
    good = 2.0 * inter >= (threshold - 1e-12) * (size[a] + size[b])
    return a[good], b[good]


def _class_elements(first_unit, unit_ptr, content, contents):
    """Each class representative's token multiset as a set of (token, occurrence) element ids,
    per class in a global rarest-first order. Returns (elements, class start, class size)."""
    n_classes = first_unit.shape[0]
    line_lo, line_hi = unit_ptr[first_unit], unit_ptr[first_unit + 1]
    lines = content[ranges(line_lo, line_hi)]
    line_class = np.repeat(np.arange(n_classes), line_hi - line_lo)
    tok_lo, tok_hi = contents.token_ptr[lines], contents.token_ptr[lines + 1]
    tokens = contents.tokens[ranges(tok_lo, tok_hi)]
    cls = np.repeat(line_class, tok_hi - tok_lo)
    n_tok = np.int64(contents.n_tokens)
    pair = np.sort(cls * n_tok + tokens)  # packed (class, token): np.sort is far cheaper than lexsort
    cls, tokens = pair // n_tok, pair % n_tok
    run_start = np.ones(pair.shape[0], bool)
    run_start[1:] = pair[1:] != pair[:-1]
    starts = np.flatnonzero(run_start)
    occ = np.arange(pair.shape[0]) - np.repeat(starts, np.diff(np.append(starts, pair.shape[0])))
    counted = occ < MAX_COPIES
    cls, tokens, occ = cls[counted], tokens[counted], occ[counted]
    element = tokens * MAX_COPIES + occ
    # element (t, k) is in a class iff it holds t at least k + 1 times: bincount gives frequencies
    freq = np.bincount(element, minlength=int(n_tok) * MAX_COPIES)[element]
    n_elem = np.int64(n_tok * MAX_COPIES)
    n_freq = np.int64(n_classes + 1)
    packed = np.sort((cls * n_freq + freq) * n_elem + element)
    size = np.bincount(cls, minlength=n_classes)
    return packed % n_elem, segment_starts(size), size


def _candidates(elements, class_start, size, class_bucket, threshold):
    """Candidate pairs (a < b) of classes: prefix filtering plus the size and positional
    filters of PPJoin (Xiao et al. 2008), which never drop a pair with Jaccard >= J."""
    n_classes = size.shape[0]
    jaccard = threshold / (2.0 - threshold)
    prefix = size - np.ceil(jaccard * size - 1e-9).astype(np.int64) + 1
    cls = np.repeat(np.arange(n_classes), size)
    pos = np.arange(elements.shape[0]) - class_start[cls]
    entry = np.flatnonzero(pos < prefix[cls])
    n_elem = np.int64(elements.max(initial=0) + 1)
    n_entry = np.int64(elements.shape[0])
    key = np.sort((class_bucket[cls[entry]] * n_elem + elements[entry]) * n_entry + entry)
    item, entry = key // n_entry, key % n_entry
    run_end = np.searchsorted(item, item, side="right")
    partners = run_end - np.arange(item.shape[0]) - 1
    left = np.repeat(entry, partners)
    right = entry[np.repeat(np.arange(item.shape[0]) + 1, partners)
                  + (np.arange(int(partners.sum())) - np.repeat(segment_starts(partners), partners))]
    a, b = cls[left], cls[right]
    # a pair's first common element at positions i, j bounds the overlap by 1 + min(|x|-i-1, |y|-j-1)
    bound = 1 + np.minimum(size[a] - pos[left] - 1, size[b] - pos[right] - 1)
    need = np.ceil(jaccard / (1.0 + jaccard) * (size[a] + size[b]) - 1e-9)
    ok = (np.minimum(size[a], size[b]) >= jaccard * np.maximum(size[a], size[b]) - 1e-9) & (bound >= need)
    n_cls = np.int64(n_classes)
    pairs = np.sort(np.minimum(a[ok], b[ok]) * n_cls + np.maximum(a[ok], b[ok]))
    if pairs.shape[0]:
        pairs = pairs[np.append(True, pairs[1:] != pairs[:-1])]
    return pairs // n_cls, pairs % n_cls
