/* credit._pairs: the near-duplicate pair search of credit/grouping.py (`_similar_pairs`) in C.

The numpy search numbers each class's token multiset as (token, occurrence) elements in one
rarest-first order, lists candidate pairs by prefix filtering and verifies them with bitset
popcounts, all as whole-array passes (credit/grouping.py `_class_elements`, `_candidates`,
`_verified`). Here each bucket is one loop of the same method: AllPairs (Bayardo et al. 2007) with
PPJoin's positional filter (Xiao et al. 2008), elements ranked rarest-first within the bucket,
classes probed by increasing size against an inverted index of the smaller ones' prefixes, each
candidate verified by counting its elements past the last common prefix rank that are marked in
the larger class, stopping as soon as the outcome is known. At the harness's large shape (82k
classes in 128 buckets, 1.9M elements, 81k pairs at 0.8) about 45 ms against numpy's 140.

Only the set of pairs matters (the clusters' founding loop does not depend on their order), and
it is the numpy one exactly: both keep the pairs of distinct non-empty classes of one bucket with
2.0 * |A & B| >= (threshold - 1e-12) * (|A| + |B|) in float64, and both filters are complete for
that test (the overlap bounds here are the least integers that pass it, ceil of half the
right-hand side). Pairs come out as numpy gives them: (y, x), y before x by (size, class), sorted
by (y, x).
Threads (credit/_threads.h): nearly all the time goes to the buckets' searches (bucket_elements,
bucket_pairs, sort_bucket_pairs: about 0.02 us per element, in proportion to it bucket by bucket;
checking the input and visit_by_unit take a few per cent), and buckets are independent. The
buckets of two classes or more, weighed by their elements (each line's tokens, before the copies
past max_copies are dropped) plus one per class, are cut into runs of about equal weight
(credit_part_start), one run per part (MIN_PART_WORK or more each: about a third of a millisecond);
each part searches its run with its own vocabulary arrays, work arrays and pairs, touching no
Python object or allocator (malloc only; errors are codes), and the calling thread concatenates the
parts' pairs in part order, which is bucket order: the pairs, and their order, of one thread. An
error is the first in bucket order, as with one thread: each part stops at its first, and the
caller raises the one of the first part that failed. Weighing reads the classes' lines' token
counts (about 3% of the search; not done when one thread is allowed). On 2 cores, 2 threads: the
large shape 46 -> 26 ms, the paper shape (12 buckets) 2.4 -> 1.7 ms.
Memory: the vocabulary, the units, and one bucket's elements and classes per part; never all pairs
of a bucket's classes.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_threads.h"

/* The least weight (elements plus classes) of a part: about 0.35 ms of search, against 30-50 us to
   start a thread. The paper shape (about 125k) splits into 4 parts, small batches stay whole. */
#define MIN_PART_WORK 16384

/* Error codes of a part (it runs without the GIL, so it sets no Python exception). */
enum { ERR_NONE = 0, ERR_MEMORY, ERR_UNIT_PTR, ERR_CONTENT, ERR_TOKEN_PTR, ERR_TOO_BIG };

/* A growable array of `item`-byte entries. */
typedef struct {
    void *data;
    size_t cap;
} grow_t;

/* Room for n entries of `item` bytes (contents kept; never NULL after, even for n = 0, so that
   memset may be given it); -1 on failure (no exception set: the parts call it without the GIL). */
static int reserve(grow_t *g, size_t n, size_t item) {
    if (n <= g->cap && g->data != NULL) return 0;
    size_t cap = g->cap ? g->cap : 256;
    while (cap < n) cap *= 2;
    void *data = cap > PY_SSIZE_T_MAX / item ? NULL : realloc(g->data, cap * item);
    if (data == NULL) return -1;
    g->data = data;
    g->cap = cap;
    return 0;
}

/* Fill an int32 array with -1. */
static void fill_minus_one(int32_t *a, size_t n) { memset(a, 0xff, n * sizeof(int32_t)); }

typedef struct {
    int32_t cls, pos, size;
} entry_t;

/* The caller's data, read by all parts. */
typedef struct {
    const int64_t *first_unit, *unit_ptr, *content, *token_ptr, *tokens;
    Py_ssize_t n_units, n_lines, n_contents, n_token_items;
    int64_t max_copies, n_vocab;
    double scaled; /* threshold - 1e-12: the factor of the acceptance test */
    /* each bucket's classes by unit, and each class's place in its bucket there (visit_by_unit) */
    const int32_t *visit, *local_of;
} input_t;

/* One part's state: its vocabulary and work arrays, and its pairs. */
typedef struct {
    const input_t *in;
    int err; /* ERR_*: the first error met */
    /* over the vocabulary: copies counted in the class (0 between classes), local id in the bucket
       (-1 between buckets), and by local id: the token, its most copies in a class */
    int32_t *copies, *local, *vocab, *most;
    /* one bucket's work arrays */
    grow_t start;      /* int32: each class's segment of the elements (n + 1) */
    grow_t element;    /* int32: each element's local token, then its element id */
    grow_t occ;        /* int32: the occurrence of each element's token */
    grow_t freq;       /* int32: classes holding each element id */
    grow_t rank;       /* int32: rank of each element id */
    grow_t holder;     /* int32: classes by rank */
    grow_t sorted;     /* int32: each class's ranks, increasing */
    grow_t counts;     /* int32: counting sorts' tallies */
    grow_t order;      /* int32: scratch of n, then classes by (size, class) */
    grow_t ptr;        /* int32: starts by rank: of the holders, then of the inverted lists (R + 1) */
    grow_t head;       /* int32: first entry of each list still of a usable size */
    grow_t fill;       /* int32: end of each list so far */
    grow_t index;      /* entry_t: inverted lists of (class, position, size) */
    grow_t met;        /* int32: prefix ranks the class probed shares with each class */
    grow_t met_i;      /* int32: position in the class probed of the last of them */
    grow_t met_j;      /* int32: and in the class met */
    grow_t candidates; /* int32: the classes met */
    grow_t mark;       /* int32: last class probed that holds each rank */
    grow_t need;       /* int32: least_overlap by the sum of the sizes */
    /* output */
    grow_t pairs; /* int64: (y, x) */
    grow_t spare; /* int64: the pairs of one bucket, sorted by x */
    size_t n_pairs;
} search_t;

/* The least overlap of classes of sizes a and b that passes 2.0 * overlap >= scaled * (a + b):
   2.0 * k and half the right-hand side are exact, so this is the test itself. */
static inline int64_t least_overlap(double scaled, int64_t a, int64_t b) {
    double half = scaled * (double)(a + b) * 0.5;
    int64_t k = (int64_t)half; /* toward zero: the ceiling when half <= 0, else the floor */
    return k + ((double)k < half);
}

static inline int64_t clip(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int bad_input(const char *what) {
    PyErr_Format(PyExc_ValueError, "near_pairs: %s", what);
    return -1;
}

/* Record the part's error `err`; -1. */
static int fail(search_t *s, int err) {
    s->err = err;
    return -1;
}

/* Reserve for a part: -1 with ERR_MEMORY recorded on failure. */
static int grow(search_t *s, grow_t *g, size_t n, size_t item) {
    return reserve(g, n, item) < 0 ? fail(s, ERR_MEMORY) : 0;
}

/* The elements of one bucket's n classes (their first units' tokens, each token's copies past
   max_copies not counted) as ranks in the bucket (by the classes holding the element), class k's
   (classes[k]) increasing in s->sorted[start[k] .. start[k + 1]]; the number of distinct elements
   in *n_ranks. 0, or -1 with s->err set. */
static int bucket_elements(search_t *s, const int32_t *classes, Py_ssize_t n, Py_ssize_t *n_ranks) {
    size_t n_elements = 0, n_local = 0;
    if (grow(s, &s->start, (size_t)n + 1, 4) < 0) return -1;
    int32_t *start = s->start.data;
    int32_t *copies = s->copies, *local = s->local, *vocab = s->vocab, *most = s->most;
    const input_t *in = s->in;
    const int64_t *tokens = in->tokens;
    int32_t max_copies = (int32_t)in->max_copies;
    start[0] = 0;
    for (Py_ssize_t c = 0; c < n; c++) {
        int64_t u = in->first_unit[classes[c]]; /* checked in range by visit_by_unit */
        int64_t l0 = in->unit_ptr[u], l1 = in->unit_ptr[u + 1];
        if (l0 < 0 || l0 > l1 || l1 > in->n_lines) return fail(s, ERR_UNIT_PTR);
        for (int64_t l = l0; l < l1; l++) {
            int64_t k = in->content[l];
            if (k < 0 || k >= in->n_contents) return fail(s, ERR_CONTENT);
            int64_t t0 = in->token_ptr[k], t1 = in->token_ptr[k + 1];
            if (t0 < 0 || t0 > t1 || t1 > in->n_token_items) return fail(s, ERR_TOKEN_PTR);
            if (n_elements + (size_t)(t1 - t0) >= INT32_MAX) return fail(s, ERR_TOO_BIG);
            if (grow(s, &s->element, n_elements + (size_t)(t1 - t0), 4) < 0
                || grow(s, &s->occ, n_elements + (size_t)(t1 - t0), 4) < 0)
                return -1;
            int32_t *element = s->element.data, *occ = s->occ.data;
            for (int64_t q = t0; q < t1; q++) {
                int64_t t = tokens[q]; /* checked in range by near_pairs */
                int32_t copy = copies[t];
                if (copy >= max_copies) continue;
                copies[t] = copy + 1;
                int32_t id = local[t];
                if (id < 0) {
                    vocab[n_local] = (int32_t)t;
                    most[n_local] = 0;
                    id = local[t] = (int32_t)n_local++;
                }
                if (copy + 1 > most[id]) most[id] = copy + 1;
                element[n_elements] = id;
                occ[n_elements++] = copy;
            }
        }
        start[c + 1] = (int32_t)n_elements;
        const int32_t *element = s->element.data;
        for (size_t e = (size_t)start[c]; e < n_elements; e++) copies[vocab[element[e]]] = 0;
    }
    /* element ids: each local token's copies in a block of its most copies in a class */
    size_t n_ids = 0;
    for (size_t k = 0; k < n_local; k++) {
        local[vocab[k]] = -1;
        int32_t block = most[k];
        most[k] = (int32_t)n_ids; /* now the block's first id */
        n_ids += (size_t)block;
    }
    if (grow(s, &s->freq, n_ids, 4) < 0 || grow(s, &s->rank, n_ids, 4) < 0 || grow(s, &s->counts, (size_t)n + 2, 4) < 0
        || grow(s, &s->ptr, n_ids + 1, 4) < 0 || grow(s, &s->fill, n_ids, 4) < 0 || grow(s, &s->order, (size_t)n, 4) < 0
        || grow(s, &s->holder, n_elements, 4) < 0 || grow(s, &s->sorted, n_elements, 4) < 0)
        return -1;
    int32_t *element = s->element.data, *occ = s->occ.data, *freq = s->freq.data, *rank = s->rank.data;
    int32_t *counts = s->counts.data, *rank_start = s->ptr.data, *rank_fill = s->fill.data, *place = s->order.data;
    int32_t *holder = s->holder.data, *sorted = s->sorted.data;
    start = s->start.data;
    memset(freq, 0, n_ids * 4);
    for (size_t e = 0; e < n_elements; e++) {
        element[e] = most[element[e]] + occ[e];
        freq[element[e]]++;
    }
    /* rank: by the number of classes holding the element (1..n), then by id */
    memset(counts, 0, ((size_t)n + 2) * 4);
    for (size_t r = 0; r < n_ids; r++) counts[freq[r] + 1]++;
    for (Py_ssize_t f = 0; f <= n; f++) counts[f + 1] += counts[f];
    for (size_t r = 0; r < n_ids; r++) rank[r] = counts[freq[r]]++;
    /* the classes holding each rank (a counting sort), then each class's ranks in increasing order */
    for (size_t r = 0; r < n_ids; r++) rank_start[rank[r] + 1] = freq[r];
    rank_start[0] = 0;
    for (size_t r = 0; r < n_ids; r++) {
        rank_start[r + 1] += rank_start[r];
        rank_fill[r] = rank_start[r];
    }
    for (Py_ssize_t c = 0; c < n; c++) {
        place[c] = start[c];
        for (int32_t e = start[c]; e < start[c + 1]; e++) holder[rank_fill[rank[element[e]]]++] = (int32_t)c;
    }
    for (size_t r = 0; r < n_ids; r++)
        for (int32_t h = rank_start[r]; h < rank_start[r + 1]; h++) sorted[place[holder[h]]++] = (int32_t)r;
    *n_ranks = (Py_ssize_t)n_ids;
    return 0;
}

/* Append the pair (y, x). */
static int emit(search_t *s, int64_t y, int64_t x) {
    if (grow(s, &s->pairs, 2 * s->n_pairs + 2, 8) < 0) return -1;
    int64_t *pairs = s->pairs.data;
    pairs[2 * s->n_pairs] = y;
    pairs[2 * s->n_pairs + 1] = x;
    s->n_pairs++;
    return 0;
}

/* The least size of a class that may pass with one of size sx (<= sx): the least s with
   need[sx + s] <= s, by bisection (the excess need[sx + s] - s does not increase with s, and is
   <= 0 at s = sx). */
static int64_t least_partner(const int32_t *need, int64_t sx) {
    int64_t lo = 1, hi = sx;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (need[sx + mid] <= mid)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The passing pairs among the n classes of the bucket that starts at class lo (elements from
   bucket_elements; local class k is the caller's classes[k]). Each class x, by increasing (size,
   class), counts the prefix ranks it shares with each smaller class y (its probe prefix against
   their index prefixes, remembering the last positions met, i in x and j in y), then bounds and
   verifies each y met: every common rank up to those positions was met, so the overlap is that
   count plus the common ranks of y after j, at most min(|x| - 1 - i, |y| - 1 - j) of them (PPJoin's
   positional filter). A y too large to pass if it first met x at position i is not read from
   there on; it either met x before (and all its common ranks before i were met) or cannot pass.
   0, or -1 with s->err set. */
static int bucket_pairs(search_t *s, const int32_t *classes, Py_ssize_t n, Py_ssize_t n_ranks, Py_ssize_t lo) {
    const int32_t *start = s->start.data, *sorted = s->sorted.data, *local_of = s->in->local_of;
    double scaled = s->in->scaled;
    /* classes by (size, class); the largest size bounds the counting sort */
    int32_t max_size = 0;
    for (Py_ssize_t c = 0; c < n; c++)
        if (start[c + 1] - start[c] > max_size) max_size = start[c + 1] - start[c];
    if (grow(s, &s->counts, (size_t)max_size + 2, 4) < 0 || grow(s, &s->order, (size_t)n, 4) < 0
        || grow(s, &s->ptr, (size_t)n_ranks + 1, 4) < 0 || grow(s, &s->head, (size_t)n_ranks, 4) < 0
        || grow(s, &s->fill, (size_t)n_ranks, 4) < 0 || grow(s, &s->met, (size_t)n, 4) < 0
        || grow(s, &s->met_i, (size_t)n, 4) < 0 || grow(s, &s->met_j, (size_t)n, 4) < 0
        || grow(s, &s->candidates, (size_t)n, 4) < 0 || grow(s, &s->mark, (size_t)n_ranks, 4) < 0
        || grow(s, &s->need, 2 * (size_t)max_size + 1, 4) < 0)
        return -1;
    int32_t *need = s->need.data; /* the least overlap of two classes by the sum of their sizes */
    for (int64_t k = 0; k <= 2 * (int64_t)max_size; k++) need[k] = (int32_t)least_overlap(scaled, k, 0);
    int32_t *counts = s->counts.data, *order = s->order.data, *ptr = s->ptr.data, *head = s->head.data;
    int32_t *fill = s->fill.data, *met = s->met.data, *met_i = s->met_i.data, *met_j = s->met_j.data;
    int32_t *candidates = s->candidates.data, *mark = s->mark.data;
    memset(counts, 0, ((size_t)max_size + 2) * 4);
    for (Py_ssize_t c = 0; c < n; c++) counts[start[c + 1] - start[c] + 1]++;
    for (int32_t k = 0; k <= max_size; k++) counts[k + 1] += counts[k];
    for (Py_ssize_t k = 0; k < n; k++) { /* the classes in their caller's order: ties as numpy breaks them */
        int32_t c = local_of[lo + k];
        order[counts[start[c + 1] - start[c]]++] = c;
    }
    /* inverted lists of index prefixes: the first sy - least_overlap(sy, sy) + 1 ranks of each y */
    memset(ptr, 0, ((size_t)n_ranks + 1) * 4);
    size_t n_entries = 0;
    for (Py_ssize_t c = 0; c < n; c++) {
        int64_t sy = start[c + 1] - start[c];
        int64_t keep = clip(sy - need[2 * sy] + 1, 0, sy);
        for (int64_t j = 0; j < keep; j++) ptr[sorted[start[c] + j] + 1]++;
        n_entries += (size_t)keep;
    }
    for (Py_ssize_t r = 0; r < n_ranks; r++) {
        ptr[r + 1] += ptr[r];
        head[r] = fill[r] = ptr[r];
    }
    if (grow(s, &s->index, n_entries, sizeof(entry_t)) < 0) return -1;
    entry_t *index = s->index.data;
    memset(met, 0, (size_t)n * 4);
    fill_minus_one(mark, (size_t)n_ranks);
    for (Py_ssize_t q = 0; q < n; q++) {
        int32_t x = order[q];
        const int32_t *xs = sorted + start[x];
        int64_t sx = start[x + 1] - start[x];
        if (sx == 0) continue; /* never paired, as in the numpy search (no prefix) */
        int64_t smallest = least_partner(need, sx);
        int64_t probe = clip(sx - need[sx + smallest] + 1, 0, sx);
        int32_t n_met = 0;
        int64_t largest = sx; /* the largest size that may first meet x at position i */
        for (int32_t i = 0; i < probe; i++) {
            while (largest >= smallest && need[sx + largest] > sx - i) largest--;
            int32_t r = xs[i], h = head[r], end = fill[r];
            while (h < end && index[h].size < smallest) h++;
            head[r] = h; /* sizes only grow from here on, and so does `smallest` */
            for (; h < end && index[h].size <= largest; h++) {
                int32_t y = index[h].cls, count = met[y];
                candidates[n_met] = y;
                n_met += count == 0;
                met[y] = count + 1;
                met_i[y] = i;
                met_j[y] = index[h].pos;
            }
        }
        if (n_met > 0)
            for (int64_t i = 0; i < sx; i++) mark[xs[i]] = x;
        for (int32_t k = 0; k < n_met; k++) {
            int32_t y = candidates[k];
            int64_t common = met[y], sy = start[y + 1] - start[y], i = met_i[y], j = met_j[y];
            met[y] = 0;
            int64_t least = need[sx + sy], rest = sy - 1 - j;
            if (common + (sx - 1 - i < rest ? sx - 1 - i : rest) < least) continue;
            const int32_t *ys = sorted + start[y];
            for (int64_t p = j + 1; p < sy && common < least && common + (sy - p) >= least; p++)
                common += mark[ys[p]] == x;
            if (2.0 * (double)common >= scaled * (double)(sx + sy) && emit(s, classes[y], classes[x]) < 0) return -1;
        }
        int64_t keep = clip(sx - need[2 * sx] + 1, 0, sx);
        for (int64_t j = 0; j < keep; j++) {
            entry_t *slot = &index[fill[xs[j]]++];
            slot->cls = x;
            slot->pos = (int32_t)j;
            slot->size = (int32_t)sx;
        }
    }
    return 0;
}

/* Sort the pairs from the first-th on, of the bucket of classes lo .. lo + n, by (y, x) as numpy
   lists them: two counting sorts, by x then stably by y (the founding loop's neighbour lists are
   built faster from pairs in that order). 0, or -1 with s->err set. */
static int sort_bucket_pairs(search_t *s, size_t first, int64_t lo, Py_ssize_t n) {
    size_t m = s->n_pairs - first;
    if (m < 2) return 0;
    if (grow(s, &s->spare, 2 * m, 8) < 0 || grow(s, &s->counts, (size_t)n + 1, 4) < 0) return -1;
    int64_t *pairs = (int64_t *)s->pairs.data + 2 * first, *spare = s->spare.data;
    int32_t *counts = s->counts.data;
    for (int side = 1; side >= 0; side--) { /* x, then y */
        int64_t *from = side ? pairs : spare, *to = side ? spare : pairs;
        memset(counts, 0, ((size_t)n + 1) * 4);
        for (size_t k = 0; k < m; k++) counts[from[2 * k + side] - lo + 1]++;
        for (Py_ssize_t c = 0; c < n; c++) counts[c + 1] += counts[c];
        for (size_t k = 0; k < m; k++) {
            int32_t at = counts[from[2 * k + side] - lo]++;
            to[2 * at] = from[2 * k];
            to[2 * at + 1] = from[2 * k + 1];
        }
    }
    return 0;
}

/* Each bucket's classes (a run of equal class_bucket, checked non-decreasing) in the order of their
   first units (in->visit), so that their lines are read in the order they lie in memory (twice as
   fast as in class order at the harness's large shape), and the position of each class there
   (in->local_of), in the buffers visit and local_of (counts and run: scratch). Two counting sorts:
   by unit, then stably by bucket. 0, or -1 with an error set. */
static int visit_by_unit(input_t *in, const int64_t *class_bucket, Py_ssize_t n, grow_t *visit_buffer,
                         grow_t *local_of_buffer, grow_t *counts_buffer, grow_t *run_buffer) {
    size_t room = (size_t)(in->n_units > n ? in->n_units : n) + 1;
    if (reserve(visit_buffer, (size_t)n + 1, 4) < 0 || reserve(local_of_buffer, (size_t)n + 1, 4) < 0
        || reserve(counts_buffer, room, 4) < 0 || reserve(run_buffer, (size_t)n + 1, 4) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    int32_t *visit = visit_buffer->data, *local_of = local_of_buffer->data, *counts = counts_buffer->data;
    int32_t *by_unit = local_of, *run = run_buffer->data; /* run: where the bucket of each class starts */
    memset(counts, 0, room * 4);
    for (Py_ssize_t c = 0; c < n; c++) {
        int64_t u = in->first_unit[c];
        if (u < 0 || u >= in->n_units) return bad_input("first_unit names a unit out of range");
        if (c > 0 && class_bucket[c] < class_bucket[c - 1]) return bad_input("class_bucket must be non-decreasing");
        counts[u + 1]++;
        run[c] = c > 0 && class_bucket[c] == class_bucket[c - 1] ? run[c - 1] : (int32_t)c;
    }
    for (Py_ssize_t u = 0; u < in->n_units; u++) counts[u + 1] += counts[u];
    for (Py_ssize_t c = 0; c < n; c++) by_unit[counts[in->first_unit[c]]++] = (int32_t)c;
    int32_t *fill = counts; /* the next place in each bucket, at its start */
    for (Py_ssize_t c = 0; c < n; c++) fill[c] = (int32_t)c;
    for (Py_ssize_t k = 0; k < n; k++) visit[fill[run[by_unit[k]]]++] = by_unit[k];
    for (Py_ssize_t p = 0; p < n; p++) local_of[visit[p]] = (int32_t)(p - run[visit[p]]);
    in->visit = visit;
    in->local_of = local_of;
    return 0;
}

/* The weight of the bucket of the n classes visit[0 .. n]: their lines' tokens plus n, at most
   2**31 (a bucket past it fails). Only reads that are in range: bucket_elements reports the rest. */
static int64_t bucket_weight(const input_t *in, const int32_t *visit, Py_ssize_t n) {
    int64_t weight = n;
    for (Py_ssize_t c = 0; c < n && weight < INT32_MAX; c++) {
        int64_t u = in->first_unit[visit[c]]; /* checked in range by visit_by_unit */
        int64_t l0 = in->unit_ptr[u], l1 = in->unit_ptr[u + 1];
        if (l0 < 0 || l0 > l1 || l1 > in->n_lines) continue;
        for (int64_t l = l0; l < l1 && weight < INT32_MAX; l++) {
            int64_t k = in->content[l];
            if (k < 0 || k >= in->n_contents) continue;
            int64_t t0 = in->token_ptr[k], t1 = in->token_ptr[k + 1];
            if (t0 >= 0 && t0 <= t1 && t1 <= in->n_token_items) weight += t1 - t0;
        }
    }
    return weight < INT32_MAX ? weight : INT32_MAX;
}

/* The buckets' search cut into parts: the buckets of two classes or more (classes bucket_lo[b] ..
   bucket_hi[b] of in->visit), weighed by the prefix sums cum (NULL: one part). */
typedef struct {
    const input_t *in;
    const Py_ssize_t *bucket_lo, *bucket_hi;
    const int64_t *cum;
    int64_t n_buckets;
    search_t *parts;
} job_t;

/* Part k of n_parts (credit_part_fn): its run of buckets into parts[k], without the GIL. */
static void search_part(void *arg, int k, int n_parts) {
    const job_t *job = arg;
    const input_t *in = job->in;
    search_t *s = &job->parts[k];
    s->in = in;
    size_t n_vocab = in->n_vocab > 0 ? (size_t)in->n_vocab : 1;
    s->copies = calloc(n_vocab, 4);
    s->local = malloc(n_vocab * 4);
    s->vocab = malloc(n_vocab * 4);
    s->most = malloc(n_vocab * 4);
    if (s->copies == NULL || s->local == NULL || s->vocab == NULL || s->most == NULL) {
        fail(s, ERR_MEMORY);
        return;
    }
    fill_minus_one(s->local, n_vocab);
    int64_t b0 = credit_part_start(job->cum, job->n_buckets, k, n_parts);
    int64_t b1 = credit_part_start(job->cum, job->n_buckets, k + 1, n_parts);
    for (int64_t b = b0; b < b1; b++) {
        Py_ssize_t lo = job->bucket_lo[b], n = job->bucket_hi[b] - lo, n_ranks;
        size_t first = s->n_pairs;
        if (bucket_elements(s, in->visit + lo, n, &n_ranks) < 0 || bucket_pairs(s, in->visit + lo, n, n_ranks, lo) < 0
            || sort_bucket_pairs(s, first, lo, n) < 0)
            return;
    }
}

/* Raise the error of a part. */
static void raise_part_error(int err) {
    switch (err) {
    case ERR_MEMORY: PyErr_NoMemory(); break;
    case ERR_UNIT_PTR: bad_input("unit_ptr not sorted inside content"); break;
    case ERR_CONTENT: bad_input("content names a line out of range"); break;
    case ERR_TOKEN_PTR: bad_input("token_ptr not sorted inside tokens"); break;
    default: bad_input("a bucket holds 2**31 elements or more"); break;
    }
}

/* Free a part's arrays. */
static void free_part(search_t *s) {
    free(s->copies);
    free(s->local);
    free(s->vocab);
    free(s->most);
    grow_t *buffers[] = {&s->start, &s->element, &s->occ, &s->freq, &s->rank, &s->holder, &s->sorted,
                         &s->counts, &s->order, &s->ptr, &s->head, &s->fill, &s->index, &s->met,
                         &s->met_i, &s->met_j, &s->candidates, &s->mark, &s->need, &s->pairs, &s->spare};
    for (size_t k = 0; k < sizeof(buffers) / sizeof(buffers[0]); k++) free(buffers[k]->data);
}

/* near_pairs(first_unit, class_bucket, unit_ptr, content, token_ptr, tokens, max_copies, threshold)
   -> bytearray of int64 (y, x) pairs: the classes (first_unit: each class's representative unit,
   class_bucket: its bucket, non-decreasing) whose token multisets pass the Dice threshold, within
   each bucket. unit_ptr (U + 1) into content, content: content ids into token_ptr (C + 1), tokens:
   token ids; all int64. */
static PyObject *near_pairs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[6];
    long long max_copies;
    double threshold;
    if (!PyArg_ParseTuple(args, "OOOOOOLd", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &max_copies,
                          &threshold))
        return NULL;
    Py_buffer views[6];
    int got = 0, n_parts = 0;
    PyObject *result = NULL;
    input_t in;
    memset(&in, 0, sizeof(in));
    grow_t visit = {NULL, 0}, local_of = {NULL, 0}, counts = {NULL, 0}, run = {NULL, 0};
    Py_ssize_t *bucket_lo = NULL, *bucket_hi = NULL;
    int64_t *cum = NULL;
    search_t *parts = NULL;
    for (; got < 6; got++) {
        if (PyObject_GetBuffer(objs[got], &views[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (views[got].itemsize != 8) {
            PyBuffer_Release(&views[got]);
            bad_input("arrays must be int64");
            goto done;
        }
    }
    const int64_t *class_bucket = views[1].buf;
    Py_ssize_t n_classes = views[0].len / 8;
    in.first_unit = views[0].buf;
    in.unit_ptr = views[2].buf;
    in.content = views[3].buf;
    in.token_ptr = views[4].buf;
    in.tokens = views[5].buf;
    in.n_units = views[2].len / 8 - 1;
    in.n_lines = views[3].len / 8;
    in.n_contents = views[4].len / 8 - 1;
    in.n_token_items = views[5].len / 8;
    in.max_copies = max_copies;
    in.scaled = threshold - 1e-12;
    if (views[1].len / 8 != n_classes || in.n_units < 0 || in.n_contents < 0) {
        bad_input("class_bucket must match first_unit, unit_ptr and token_ptr have one entry or more");
        goto done;
    }
    if (n_classes >= INT32_MAX) {
        bad_input("2**31 classes or more");
        goto done;
    }
    if (!(threshold > 0.0 && threshold <= 1.0) || max_copies < 1 || max_copies > INT32_MAX) {
        bad_input("threshold must be in (0, 1] and max_copies positive");
        goto done;
    }
    for (Py_ssize_t q = 0; q < in.n_token_items; q++) {
        if (in.tokens[q] < 0 || in.tokens[q] >= INT32_MAX) {
            bad_input("a token id out of range");
            goto done;
        }
        if (in.tokens[q] >= in.n_vocab) in.n_vocab = in.tokens[q] + 1;
    }
    if (visit_by_unit(&in, class_bucket, n_classes, &visit, &local_of, &counts, &run) < 0) goto done;
    /* the buckets of two classes or more, and (when threads may be used) their weights */
    size_t room = (size_t)n_classes / 2 + 1;
    bucket_lo = malloc(room * sizeof(Py_ssize_t));
    bucket_hi = malloc(room * sizeof(Py_ssize_t));
    int threads = credit_threads();
    if (threads > 1) cum = malloc((room + 1) * sizeof(int64_t));
    if (bucket_lo == NULL || bucket_hi == NULL || (threads > 1 && cum == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t n_buckets = 0;
    if (cum != NULL) cum[0] = 0;
    for (Py_ssize_t lo = 0, hi; lo < n_classes; lo = hi) {
        for (hi = lo + 1; hi < n_classes && class_bucket[hi] == class_bucket[lo]; hi++) {}
        if (hi - lo < 2) continue;
        bucket_lo[n_buckets] = lo;
        bucket_hi[n_buckets] = hi;
        if (cum != NULL) cum[n_buckets + 1] = cum[n_buckets] + bucket_weight(&in, in.visit + lo, hi - lo);
        n_buckets++;
    }
    n_parts = cum != NULL ? credit_parts(cum[n_buckets], MIN_PART_WORK) : 1;
    parts = calloc((size_t)n_parts, sizeof(search_t));
    if (parts == NULL) {
        n_parts = 0;
        PyErr_NoMemory();
        goto done;
    }
    job_t job = {&in, bucket_lo, bucket_hi, n_parts > 1 ? cum : NULL, n_buckets, parts};
    credit_run_parts(search_part, &job, n_parts);
    size_t n_pairs = 0;
    for (int k = 0; k < n_parts; k++) {
        if (parts[k].err != ERR_NONE) { /* the first part that failed holds the first bucket that did */
            raise_part_error(parts[k].err);
            goto done;
        }
        n_pairs += parts[k].n_pairs;
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(16 * n_pairs));
    if (result == NULL) goto done;
    char *out = PyByteArray_AS_STRING(result);
    for (int k = 0; k < n_parts; k++) {
        if (parts[k].n_pairs) memcpy(out, parts[k].pairs.data, 16 * parts[k].n_pairs);
        out += 16 * parts[k].n_pairs;
    }
done:
    for (int k = 0; k < n_parts; k++) free_part(&parts[k]);
    free(parts);
    free(bucket_lo);
    free(bucket_hi);
    free(cum);
    free(visit.data);
    free(local_of.data);
    free(counts.data);
    free(run.data);
    for (int v = 0; v < got; v++) PyBuffer_Release(&views[v]);
    return result;
}

static PyMethodDef methods[] = {
    {"near_pairs", near_pairs, METH_VARARGS,
     "near_pairs(first_unit, class_bucket, unit_ptr, content, token_ptr, tokens, max_copies, threshold) -> bytearray "
     "of int64 (y, x) pairs: the near-duplicate pairs of classes of credit/grouping.py, bucket by bucket."},
    CREDIT_LAST_PARTS_METHOD,
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._pairs", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pairs(void) { return PyModule_Create(&module); }
