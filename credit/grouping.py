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
sets of (token, occurrence) elements. Sets with sim >= t share an element among their first few
elements in a global rarest-first order (`_candidates` states the bounds), so only pairs sharing
such a prefix element are verified, exactly, by popcounts of bitsets. Clusters are representative-centred: exact
classes are visited by decreasing support (then length, then their content hash, never their
position in the batch, so listing the trajectories in another order gives the same clusters), an
unassigned one becomes a representative and takes the unassigned classes similar to it, never
classes that are only similar to a member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from credit._util import count_at_most, csr_pointers, lexsort_ints, ranges, segment_starts, sorted_keys, unique_ints
from credit.text import MARKERS, MAX_COPIES, Contents, line_table

_MIX_INDENT = np.uint64(0x9E3779B97F4A7C15)
_MIX_LENGTH = np.uint64(0xC2B2AE3D27D4EB4F)
_POWER = np.uint64(0x100000001B3)
# classes whose near-duplicate pairs are searched together (whole buckets; ~a few tasks' units)
_CHUNK_CLASSES = 4096


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
      contents: the distinct contents (`credit.text.line_table(...).contents`).
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
    # visit order: most support, then longest, then class id, which follows (bucket, content key)
    # and not where a unit sits in the batch, so the clusters do not depend on the trajectories' order
    order = lexsort_ints((-lengths[first_unit], -support))  # (ties in class order)
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
    """Cluster labels for code texts: `cluster_texts(...).labels`; -1 for a text with no compared line."""
    return cluster_texts(texts, buckets, threshold=threshold, comment=comment).labels


def cluster_texts(
    texts: Sequence[str],
    buckets: Optional[Sequence[int]] = None,
    *,
    threshold: float = 0.8,
    comment: Optional[str] = "#",
) -> Clusters:
    """Clusters of code texts (convenience form of `cluster_units`).

    Args:
      texts: U code texts (one unit each).
      buckets: optional (U,) ints; texts in different buckets never group.
      threshold: Dice similarity for near-duplicates.
      comment: line-comment marker of the language, one of `credit.text.MARKERS`.

    Returns:
      Clusters over the texts (one unit each).
    """
    if comment not in MARKERS:
        raise ValueError(f"comment must be one of {MARKERS}, got {comment!r}")
    lines = [text.splitlines() for text in texts]
    flat = [line for ls in lines for line in ls]
    table = line_table(flat, np.full(len(flat), MARKERS.index(comment), np.int64))
    content, indent = table.content, table.indent
    unit = np.repeat(np.arange(len(texts)), [len(ls) for ls in lines])
    keep = content >= 0
    ptr = csr_pointers(np.bincount(unit[keep], minlength=len(texts)))
    bucket = np.zeros(len(texts), np.int64) if buckets is None else np.asarray(buckets, np.int64)
    return cluster_units(bucket, ptr, content[keep], indent[keep], table.contents, threshold=threshold)


def _exact_classes(bucket, unit_ptr, content, indent, hashes):
    """Exact-duplicate class per unit; class ids ordered by (bucket, key); first unit per class."""
    n_units = bucket.shape[0]
    lengths = np.diff(unit_ptr)
    unit_of = np.repeat(np.arange(n_units), lengths)
    pos = np.arange(content.shape[0]) - unit_ptr[unit_of]
    has = np.flatnonzero(lengths > 0)
    step = np.diff(indent, prepend=0)
    step[unit_ptr[has]] = 0
    value = hashes[content] ^ (step.astype(np.uint64) * _MIX_INDENT)
    powers = np.ones(max(int(lengths.max(initial=0)), 1), np.uint64)
    np.cumprod(np.full(powers.shape[0] - 1, _POWER, np.uint64), out=powers[1:])
    key = np.zeros(n_units, np.uint64)
    if has.shape[0]:
        key[has] = np.add.reduceat(value * powers[pos], unit_ptr[has])
    key ^= lengths.astype(np.uint64) * _MIX_LENGTH

    # sorted by (bucket, key): by key (a SIMD sort, equal keys in any order), then stably by bucket
    by_key = has[np.argsort(key[has])]
    order = by_key[lexsort_ints((bucket[by_key],))]
    new = np.ones(order.shape[0], bool)
    new[1:] = (key[order][1:] != key[order][:-1]) | (bucket[order][1:] != bucket[order][:-1])
    exact = np.full(n_units, -1, np.int64)
    exact[order] = np.cumsum(new) - 1
    first_unit = np.minimum.reduceat(order, np.flatnonzero(new)) if order.shape[0] else order  # lowest of each
    return exact, int(new.sum()), first_unit


def _near_duplicate_clusters(order, first_unit, class_bucket, unit_ptr, content, contents, threshold):
    """Representative-centred clusters of exact classes; returns (cluster of each class, pairs verified)."""
    a, b = _similar_pairs(first_unit, class_bucket, unit_ptr, content, contents, threshold)
    return _representative_clusters(order, a, b), int(a.shape[0])


def _similar_pairs(first_unit, class_bucket, unit_ptr, content, contents, threshold):
    """(a, b): each pair of classes of one bucket whose Dice similarity reaches the threshold, once,
    a before b by (size, class id), the pairs sorted by (a, b).

    Chunk by chunk of whole buckets (`_bucket_chunks`), pairs never crossing buckets, each chunk's arrays small enough to stay in
    the cache (the refbench large batch, 64 tasks: 626 ms in one piece, 308 ms in chunks;
    docs/benchmarks.md, "credit")."""
    pairs = []
    for lo, hi in _bucket_chunks(class_bucket):
        elements = _class_elements(first_unit[lo:hi], class_bucket[lo:hi], unit_ptr, content, contents)
        a, b = _candidates(elements, threshold)
        a, b = _verified(a, b, elements, threshold)
        pairs.append((a + lo, b + lo))
    a, b = (np.concatenate(x) for x in zip(*pairs))
    return a, b


def _bucket_chunks(class_bucket: np.ndarray) -> list[tuple[int, int]]:
    """[lo, hi) ranges of the classes (sorted by bucket) that hold whole buckets, each closed once it
    holds _CHUNK_CLASSES classes or more."""
    n = class_bucket.shape[0]
    bounds = np.flatnonzero(np.diff(class_bucket)) + 1  # where a bucket starts
    out, lo = [], 0
    for start in bounds.tolist():
        if start - lo >= _CHUNK_CLASSES:
            out.append((lo, start))
            lo = start
    out.append((lo, n))
    return out


def _representative_clusters(order: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cluster of each class: visited in `order`, an unassigned class founds the next cluster and
    takes its unassigned neighbours (pairs a, b). Classes without a neighbour skip the Python loop."""
    n_classes = order.shape[0]
    ends = np.concatenate([a, b])
    degree = np.bincount(ends, minlength=n_classes)
    ptr = np.concatenate([[0], np.cumsum(degree)])
    neighbours = np.concatenate([b, a])[lexsort_ints((ends,))].astype(np.int64)
    visit = order[degree[order] > 0]
    founder = np.asarray(_founders(visit.tolist(), ptr.tolist(), neighbours.tolist(), n_classes), np.int64)
    founds = founder[order] == order
    number = np.empty(n_classes, np.int64)
    number[order] = np.cumsum(founds) - 1
    return number[founder]


def _founders(visit: list[int], ptr: list[int], neighbours: list[int], n_classes: int) -> list[int]:
    """The loop of `_representative_clusters`: the founder of each class."""
    founder = list(range(n_classes))
    assigned = [False] * n_classes
    for c in visit:
        if assigned[c]:
            continue
        for other in neighbours[ptr[c]:ptr[c + 1]]:
            if not assigned[other]:
                assigned[other] = True
                founder[other] = c
        assigned[c] = True
    return founder


@dataclass(frozen=True, eq=False)
class _Elements:
    """Each class's token multiset as a set of elements (token, occurrence), in rarest-first order.

    Element ids are ranks in one global order (by the number of classes holding the element, then
    by token), and each class lists its elements in increasing id: the order prefix filtering needs.

    Attributes:
      ids: (E,) element ids of all classes, class after class.
      start, size: (C,) each class's segment of `ids`.
      n_ids: number of distinct elements.
      class_bucket: (C,) bucket of each class.
    """

    ids: np.ndarray
    start: np.ndarray
    size: np.ndarray
    n_ids: int
    class_bucket: np.ndarray


def _class_elements(first_unit, class_bucket, unit_ptr, content, contents) -> _Elements:
    """The elements of each class representative: its (class, token) pairs sorted to number the
    copies of each token (the k-th copy of t is element (t, k); copies past MAX_COPIES are not
    counted), then sorted again by (class, rank of the element in the rarest-first order)."""
    n_classes = first_unit.shape[0]
    line_lo, line_hi = unit_ptr[first_unit], unit_ptr[first_unit + 1]
    lines = content[ranges(line_lo, line_hi)]
    tok_lo, tok_hi = contents.token_ptr[lines], contents.token_ptr[lines + 1]
    tokens = contents.tokens[ranges(tok_lo, tok_hi)]
    tok_bits = _bits(contents.n_tokens)
    line_class = np.repeat(np.arange(n_classes), line_hi - line_lo)
    pair = sorted_keys(np.repeat(line_class, tok_hi - tok_lo) << tok_bits | tokens, n_classes << tok_bits)
    occ = _run_position(pair)
    if occ.max(initial=0) >= MAX_COPIES:
        counted = np.flatnonzero(occ < MAX_COPIES)
        pair, occ = pair[counted], occ[counted]
    cls = (pair >> tok_bits).astype(np.int64)
    element = (pair & ((1 << tok_bits) - 1)).astype(np.int64) * MAX_COPIES + occ
    holders = np.bincount(element, minlength=contents.n_tokens * MAX_COPIES)
    present = np.flatnonzero(holders)
    rank = np.zeros(holders.shape[0], np.int64)
    rank[present[np.argsort(holders[present], kind="stable")]] = np.arange(present.shape[0])
    id_bits = _bits(present.shape[0])
    by_rank = sorted_keys(cls << id_bits | rank[element], n_classes << id_bits)
    ids = (by_rank & ((1 << id_bits) - 1)).astype(np.int64)
    size = np.bincount(cls, minlength=n_classes)
    return _Elements(ids, segment_starts(size), size, present.shape[0], class_bucket)


def _bits(n: int) -> int:
    """Bits that hold the values 0..n-1."""
    return max(int(n) - 1, 1).bit_length()


def _run_position(keys: np.ndarray) -> np.ndarray:
    """Position of each entry of sorted `keys` within its run of equal keys (int32: the running
    maximum of run-start indices is the slow step, and it is twice as fast on 32-bit ints)."""
    index = np.arange(keys.shape[0], dtype=np.int32)
    start = np.zeros(keys.shape[0], np.int32)
    np.not_equal(keys[1:], keys[:-1], out=start[1:])
    start *= index
    return index - np.maximum.accumulate(start, out=start)


def _candidates(elements: _Elements, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Candidate pairs of classes: every pair whose Dice similarity may reach the threshold.

    With t the threshold, a pair y, x of one bucket (|y| <= |x|, ties broken by class id) reaches
    it only when

      |x \cap y| >= alpha = ceil(t (|x| + |y|) / 2),

    and then the first element they share is at a position j <= |y| - alpha of y, and so within its
    first |y| - ceil(t |y|) + 1 elements (its index prefix), and within the first
    |x| - ceil(t |x| / (2 - t)) + 1 elements of x (its probe prefix): the prefix filter of AllPairs
    (Bayardo et al. 2007) with the shorter index prefix and the positional filter of PPJoin (Xiao
    et al. 2008), here on the index side only. Probe entries are sorted by (element, bucket, size,
    class); the x that an index entry (y, j) may meet, those larger than y with j <= |y| - alpha,
    follow it in one contiguous run.

    Returns:
      (y, x) classes of each candidate pair, distinct pairs.
    """
    size, bucket = elements.size, elements.class_bucket
    n_classes = size.shape[0]
    t = threshold - 1e-12  # what `_verified` accepts, so no filter is stricter than it
    span = int(size.max(initial=0)) + 1
    by_size = lexsort_ints((size, bucket))
    size_rank = np.empty(n_classes, np.int64)
    size_rank[by_size] = np.arange(n_classes)

    probe_len = np.minimum(size - np.ceil(t / (2 - t) * size - 1e-9).astype(np.int64) + 1, size)
    width = max(int(probe_len.max(initial=0)), 1)
    cls = np.repeat(np.arange(n_classes), probe_len)
    pos = ranges(np.zeros(n_classes, np.int64), probe_len)
    ids = elements.ids[elements.start[cls] + pos]
    probe = sorted_keys((ids * n_classes + size_rank[cls]) * width + pos, elements.n_ids * n_classes * width)
    head = probe // width
    x = by_size[(head - head // n_classes * n_classes).astype(np.int64)]
    i = (probe - head * width).astype(np.int64)

    index = np.flatnonzero(i < (size - np.ceil(t * size - 1e-9).astype(np.int64) + 1)[x])
    y, j = x[index], i[index]
    alpha = np.ceil(t / 2 * np.arange(2 * span + 1) - 1e-9).astype(np.int64)
    reach = np.searchsorted(alpha, np.arange(span), side="right") - 1  # largest |x| + |y| with alpha <= k
    largest = np.minimum(reach[size[y] - j] - size[y], span - 1)
    n_buckets = int(bucket.max(initial=0)) + 1
    end_rank = count_at_most(bucket[by_size] * span + size[by_size], bucket[y] * span + largest,
                             n_buckets * span)
    hi = np.searchsorted(probe, (probe[index] + (end_rank - size_rank[y]) * width - j).astype(probe.dtype))
    lo = index + 1

    x = x[ranges(lo, hi)]
    y = np.repeat(y, np.maximum(hi - lo, 0))
    cls_bits = _bits(n_classes)
    pairs = sorted_keys(y << cls_bits | x, n_classes << cls_bits)
    first = np.ones(pairs.shape[0], bool)
    first[1:] = pairs[1:] != pairs[:-1]
    pairs = np.compress(first, pairs).astype(np.int64)
    return pairs >> cls_bits, pairs & ((1 << cls_bits) - 1)


def _verified(a, b, elements: _Elements, threshold):
    """The pairs whose Dice similarity reaches the threshold.

    Exact intersections by popcount: each class becomes a bitset over the elements present in its
    bucket; classes whose buckets need the same number of words are rows of one matrix, and the
    pairs among them are verified together.
    """
    if a.shape[0] == 0:
        return a, b
    size, class_bucket = elements.size, elements.class_bucket
    n_buckets = int(class_bucket.max(initial=0)) + 1
    cls = np.repeat(np.arange(size.shape[0]), size)
    n_ids = elements.n_ids
    key, slot, _ = unique_ints(np.repeat(class_bucket * n_ids, size) + elements.ids, n_buckets * n_ids)
    per_bucket = np.bincount(key // n_ids, minlength=n_buckets)
    slot -= np.repeat(segment_starts(per_bucket)[class_bucket], size)
    words = ((per_bucket + 63) // 64)[class_bucket]
    by_words = np.argsort(words, kind="stable")
    offset = np.empty(size.shape[0], np.int64)
    offset[by_words] = segment_starts(words[by_words])
    bits = np.zeros(int(words.sum()) * 64, bool)
    bits[offset[cls] * 64 + slot] = True
    bits = np.packbits(bits, bitorder="little").view(np.uint64)
    n_of_width = np.bincount(words)
    block = segment_starts(n_of_width * np.arange(n_of_width.shape[0]))  # where each width's rows start
    row = (offset - block[words]) // np.maximum(words, 1)

    inter = np.zeros(a.shape[0], np.int64)
    pair_words = words[a]
    for w in np.flatnonzero(np.bincount(pair_words)).tolist():
        sel = np.flatnonzero(pair_words == w)
        rows = bits[block[w]:block[w] + n_of_width[w] * w].reshape(-1, w)
        common = np.take(rows, row[a[sel]], axis=0) & np.take(rows, row[b[sel]], axis=0)
        inter[sel] = np.bitwise_count(common).astype(np.float32) @ np.ones(w, np.float32)  # exact below 2^24
    good = 2.0 * inter >= (threshold - 1e-12) * (size[a] + size[b])
    return a[good], b[good]
