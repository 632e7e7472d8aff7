/* credit._native: reads token offsets given as Python lists of (start, end) pairs into int64 (whole,
or in the windows around character spans that credit/offsets.py finds), joins the changed lines,
runs the block search of the changed lines in the action texts, decides which neighbouring lines
join, and projects the spans' values onto the tokens (credit/project.py).

numpy reads a list of 2-item lists at about 70 ns a pair however it is asked (np.array, np.fromiter
over a chain: it goes through the generic sequence and number protocols for every item); the
shared harness's paper batch holds 658k such pairs, 42 ms of a 140 ms credit.didpo call. Here each
item is read with the list and int macros: about 14 ns a pair (docs/benchmarks.md, "credit",
seventh round). The block search is the Python loop of credit/project.py (`_search_blocks`,
`_forms`, `_search`, `_find`, `_escaped_sizes`) without the interpreter's cost per block; the
lines joined, the gaps between lines and the projection are credit/project.py's `_joined_lines`,
`_joins` and `project_flat` without numpy's passes over whole batches (the actions joined into one
text to read a few characters, a binary search a numpy call per step). The greedy anchor pass
(credit/anchors.py) and the clusters' founding loop (credit/grouping.py) are those modules' Python
loops over int lists, here over the arrays: at the harness's large shape 101 -> 30 ms and 54 -> 7
ms. Optional: credit falls back to numpy and Python when this is not built, with the same results
(tests/credit/test_credit_*_native.py compare them).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_threads.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* An exact int's value where it fits in one digit (every token offset below 2**30), read from the
   object itself; anything else through PyLong_AsLongLongAndOverflow. 0 on success. */
static inline int int_value(PyObject *o, int64_t *value) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        *value = (int64_t)PyUnstable_Long_CompactValue((PyLongObject *)o);
        return 0;
    }
#else
    Py_ssize_t size = Py_SIZE(o);
    if (size == 0 || size == 1) {
        *value = size ? (int64_t)((PyLongObject *)o)->ob_digit[0] : 0;
        return 0;
    }
#endif
    int over = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &over);
    if (over || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *value = (int64_t)x;
    return 0;
}

/* One step's pairs into out[0 .. 2n); 0 on success, -1 when an item is not a list or tuple of two
   exact ints that fit in int64 (the caller reads that step its own way and reports what is wrong).
   With length >= 0, *plain tells whether the pairs plainly pass credit.offsets' checks: every token
   of positive width, starts and ends non-decreasing, the first start >= 0, the last end <= length
   (steps that fail it, zero-width tokens included, get credit.offsets._bad_steps' full rules). */
static int read_step(PyObject *step, Py_ssize_t n, int64_t *out, int64_t length, int *plain) {
    PyObject **items = PySequence_Fast_ITEMS(step);
    int ok = 1;
    int64_t last_start = 0, last_end = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = items[i], *a, *b;
        if (PyList_CheckExact(pair) && PyList_GET_SIZE(pair) == 2) {
            a = PyList_GET_ITEM(pair, 0);
            b = PyList_GET_ITEM(pair, 1);
        } else if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
            a = PyTuple_GET_ITEM(pair, 0);
            b = PyTuple_GET_ITEM(pair, 1);
        } else {
            return -1;
        }
        int64_t x, y;
        if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b) || int_value(a, &x) < 0 || int_value(b, &y) < 0) return -1;
        out[2 * i] = x;
        out[2 * i + 1] = y;
        ok &= (y > x) & (i == 0 ? x >= 0 : (x >= last_start) & (y >= last_end));
        last_start = x;
        last_end = y;
    }
    if (plain != NULL) *plain = ok && (n == 0 || last_end <= length);
    return 0;
}

/* Append k to the list; -1 on failure (the error set). */
static int append_index(PyObject *list, Py_ssize_t k) {
    PyObject *index = PyLong_FromSsize_t(k);
    int bad = index == NULL || PyList_Append(list, index) < 0;
    Py_XDECREF(index);
    return bad ? -1 : 0;
}

/* read_pairs(steps, bounds, out[, lengths]) -> indices of the steps not read, or with lengths
   (not read, read but not plainly ordered).
   steps: a list of lists or tuples of pairs; bounds: int64 buffer of len(steps) + 1 pair counts
   (step k's pairs go to pairs bounds[k] .. bounds[k + 1]); out: writable int64 buffer of
   2 * bounds[-1] items; lengths: int64 buffer of len(steps) action lengths. A step whose length
   differs from its bounds, or with an item that is not a pair of ints, is listed as not read and
   its part of `out` left as it was. With lengths, a step read whose pairs do not plainly pass the
   offset checks (read_step) is listed in the second list. */
static PyObject *read_pairs(PyObject *self, PyObject *args) {
    PyObject *steps, *bounds_obj, *out_obj, *lengths_obj = NULL;
    if (!PyArg_ParseTuple(args, "O!OO|O", &PyList_Type, &steps, &bounds_obj, &out_obj, &lengths_obj)) return NULL;
    Py_buffer bounds_view, out_view, lengths_view;
    int got = 0;
    PyObject *failed = NULL, *unplain = NULL, *result = NULL;
    if (PyObject_GetBuffer(bounds_obj, &bounds_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    got = 1;
    if (PyObject_GetBuffer(out_obj, &out_view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    got = 2;
    if (lengths_obj != NULL) {
        if (PyObject_GetBuffer(lengths_obj, &lengths_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        got = 3;
    }
    Py_ssize_t n_steps = PyList_GET_SIZE(steps);
    if (bounds_view.itemsize != 8 || out_view.itemsize != 8
        || bounds_view.len / 8 != n_steps + 1) {
        PyErr_SetString(PyExc_ValueError, "read_pairs: bounds must be int64 of len(steps) + 1, out int64");
        goto done;
    }
    if (got == 3 && (lengths_view.itemsize != 8 || lengths_view.len / 8 != n_steps)) {
        PyErr_SetString(PyExc_ValueError, "read_pairs: lengths must be int64 of len(steps)");
        goto done;
    }
    const int64_t *bounds = (const int64_t *)bounds_view.buf;
    const int64_t *lengths = got == 3 ? (const int64_t *)lengths_view.buf : NULL;
    int64_t *out = (int64_t *)out_view.buf;
    Py_ssize_t capacity = out_view.len / 8;
    if (bounds[0] < 0 || 2 * bounds[n_steps] > capacity) {
        PyErr_SetString(PyExc_ValueError, "read_pairs: out holds fewer than 2 * bounds[-1] items");
        goto done;
    }
    failed = PyList_New(0);
    unplain = PyList_New(0);
    if (failed == NULL || unplain == NULL) goto done;
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        PyObject *step = PyList_GET_ITEM(steps, k);
        int plain = 1;
        int ok = (PyList_CheckExact(step) || PyTuple_CheckExact(step)) && bounds[k] >= 0 && bounds[k] <= bounds[k + 1]
                 && bounds[k + 1] <= bounds[n_steps] && PySequence_Fast_GET_SIZE(step) == bounds[k + 1] - bounds[k]
                 && read_step(step, bounds[k + 1] - bounds[k], out + 2 * bounds[k], lengths ? lengths[k] : 0,
                              lengths ? &plain : NULL) == 0;
        if (!ok ? append_index(failed, k) < 0 : (!plain && append_index(unplain, k) < 0)) goto done;
    }
    result = lengths ? PyTuple_Pack(2, failed, unplain) : Py_NewRef(failed);
done:
    Py_XDECREF(failed);
    Py_XDECREF(unplain);
    if (got >= 1) PyBuffer_Release(&bounds_view);
    if (got >= 2) PyBuffer_Release(&out_view);
    if (got >= 3) PyBuffer_Release(&lengths_view);
    return result;
}


/* --- list offsets read in windows (credit/offsets.py: _windows, _read_windows) ------------------- */

/* The windows are those of credit/offsets.py `_windows`: the same binary searches (the same probes
   in the same order, so a search in an unsorted list lands where Python's bisect lands), walks and
   merges; their tokens are checked as `_read_windows` checks them. A list's pairs lie far apart in
   memory (a list object, its item array and two ints each, each kind in its own allocator pool: the
   paper batch's 570k pairs take ~85 MB, beyond the caches), so a probe waits on four loads one after
   another, and a window read token by token on as many. The searches of LANES steps run
   interleaved instead, each advanced one load at a time after a prefetch of it, and the windows'
   tokens are read with their loads prefetched AHEAD tokens before. */

#define MAX_WALK 8 /* credit/offsets.py _MAX_WALK */
#define LANES 16
#define AHEAD 16

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((const void *)(p))
#else
#define PREFETCH(p) ((void)(p))
#endif

/* An exact int's value read from the object alone (no call into Python, so worker threads may read
   it): 0, or -1 for a value of more than two digits (2**60 and beyond; the step then goes to the
   caller, which reads it as Python does). */
static inline int plain_int_value(PyObject *o, int64_t *value) {
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)o)) return -1;
    *value = (int64_t)PyUnstable_Long_CompactValue((PyLongObject *)o);
    return 0;
#else
    Py_ssize_t size = Py_SIZE(o);
    const digit *d = ((PyLongObject *)o)->ob_digit;
    if (size < -2 || size > 2) return -1;
    int64_t v = size == 0 ? 0 : (int64_t)d[0] | (size == 2 || size == -2 ? (int64_t)d[1] << PyLong_SHIFT : 0);
    *value = size < 0 ? -v : v;
    return 0;
#endif
}

/* The items of a list or tuple of two items (exactly of type `type`, when given), else NULL. */
static inline PyObject **pair_items(PyObject *pair, PyTypeObject *type) {
    if (type != NULL ? Py_TYPE(pair) != type : !(PyList_CheckExact(pair) || PyTuple_CheckExact(pair))) return NULL;
    return Py_SIZE(pair) == 2 ? PySequence_Fast_ITEMS(pair) : NULL;
}

/* A pair's two items as int64: 0, or -1 when they are not exact ints that fit. */
static inline int pair_ints(PyObject **items, int64_t *start, int64_t *end) {
    if (!PyLong_CheckExact(items[0]) || !PyLong_CheckExact(items[1])) return -1;
    return plain_int_value(items[0], start) < 0 || plain_int_value(items[1], end) < 0 ? -1 : 0;
}

static inline int pair_values(PyObject *pair, int64_t *start, int64_t *end) {
    PyObject **items = pair_items(pair, NULL);
    return items == NULL ? -1 : pair_ints(items, start, end);
}

/* One step's windows being found: a binary search, advanced a load at a time (advance). */
typedef struct {
    Py_ssize_t step; /* its index in the steps; -1: the lane is free */
    PyObject **items;
    Py_ssize_t n;
    PyTypeObject *type;     /* of the first pair: a probe of another type ends the search */
    const int64_t *a, *b;   /* the step's joined spans */
    Py_ssize_t n_spans, span;
    int64_t *win;           /* its windows found so far, (start, end) each */
    Py_ssize_t count;       /* their count; -1: the step is left to the caller */
    int seek_end;           /* 0: searching for the span's start a; 1: for its end b */
    int stage;              /* the load awaited by the probe at mid (advance) */
    Py_ssize_t lo, hi, mid, start;
    PyObject **probed;      /* the items of the pair probed */
} Search;

/* Python's bisect_left(items, type((x,)), lo, n), a probe at a time: a pair (s, e) sorts before
   (x,) exactly when s < x. 1 when a probe awaits (its item's address prefetched), 0 when landed. */
static int probe(Search *s) {
    if (s->lo >= s->hi) return 0;
    s->mid = (Py_ssize_t)(((size_t)s->lo + (size_t)s->hi) / 2);
    s->stage = 0;
    PREFETCH(&s->items[s->mid]);
    return 1;
}

static int seek(Search *s, Py_ssize_t lo) {
    s->lo = lo;
    s->hi = s->n;
    return probe(s);
}

/* The search has landed at lo: the walk of `_windows` from there (its few pairs lie beside the
   last probes), then the next search. 0, or -1 where `_windows` gives None or a pair walked is no
   pair of ints. */
static int landed(Search *s) {
    int64_t start, end;
    Py_ssize_t at = s->lo, walked = 0;
    if (!s->seek_end) {
        while (at > 0) { /* back past tokens that end after a, to a real one that does not */
            if (pair_values(s->items[at - 1], &start, &end) < 0) return -1;
            if (end > start && end <= s->a[s->span]) break;
            at--;
            if (++walked > MAX_WALK) return -1;
        }
        s->start = at;
        s->seek_end = 1;
        return 0;
    }
    while (at < s->n) { /* on past zero-width tokens, to a real one */
        if (pair_values(s->items[at], &start, &end) < 0) return -1;
        if (end > start) {
            if (start < s->b[s->span]) return -1;
            break;
        }
        at++;
        if (++walked > MAX_WALK) return -1;
    }
    int64_t *w = s->win + 2 * (s->count - 1);
    if (s->count && s->start < w[0]) return -1; /* out of order: the list is not sorted where searched */
    if (s->count && s->start <= w[1]) {
        if (at > w[1]) w[1] = at;
    } else {
        w += 2;
        w[0] = s->start;
        w[1] = at;
        s->count++;
    }
    s->span++;
    s->seek_end = 0;
    return 0;
}

/* Advance the step's search by one load: 1 while it goes on, 0 when its windows are found
   (s->count of them, -1 where the step is left to the caller). */
static int advance(Search *s) {
    int64_t start, end;
    switch (s->stage) {
    case 0:
        s->probed = (PyObject **)s->items[s->mid];
        PREFETCH(s->probed);
        s->stage = 1;
        return 1;
    case 1:
        s->probed = pair_items((PyObject *)s->probed, s->type);
        if (s->probed == NULL) break;
        PREFETCH(s->probed);
        s->stage = 2;
        return 1;
    case 2:
        PREFETCH(s->probed[0]);
        PREFETCH(s->probed[1]);
        s->stage = 3;
        return 1;
    default:
        if (pair_ints(s->probed, &start, &end) < 0) break;
        if (start < (s->seek_end ? s->b : s->a)[s->span]) s->lo = s->mid + 1;
        else s->hi = s->mid;
        if (probe(s)) return 1;
        for (;;) { /* landed: walk, then the next search, until one awaits a load */
            if (landed(s) < 0) break;
            if (s->span == s->n_spans) return 0;
            if (seek(s, s->seek_end ? s->start : 0)) return 1;
        }
    }
    s->count = -1;
    return 0;
}

/* Start step k's search in the lane: 1 when it awaits a load, 0 when its windows are found at once
   (s->count). */
static int begin(Search *s, PyObject *step, Py_ssize_t k, const int64_t *a, const int64_t *b, Py_ssize_t n_spans,
                 int64_t *win) {
    s->step = k;
    s->count = -1;
    if (!PyList_CheckExact(step) && !PyTuple_CheckExact(step)) return 0;
    s->items = PySequence_Fast_ITEMS(step);
    s->n = PySequence_Fast_GET_SIZE(step);
    s->count = 0;
    if (s->n == 0) return 0;
    s->type = Py_TYPE(s->items[0]);
    if (s->type != &PyList_Type && s->type != &PyTuple_Type) {
        s->count = -1;
        return 0;
    }
    s->a = a;
    s->b = b;
    s->n_spans = n_spans;
    s->span = 0;
    s->win = win;
    s->seek_end = 0;
    return n_spans > 0 && seek(s, 0);
}

/* The windows of steps next .. n_steps - 1 into win (step k's at win + 2 * first[k]), their count
   into n_win[k] (-1: left to the caller). */
static void find_windows(PyObject *steps, Py_ssize_t next, Py_ssize_t n_steps, const int64_t *first,
                         const int64_t *last, const int64_t *span_a, const int64_t *span_b, int64_t *win,
                         int64_t *n_win) {
    Search lanes[LANES];
    memset(lanes, 0, sizeof(lanes));
    for (int l = 0; l < LANES; l++) lanes[l].step = -1;
    int busy;
    do {
        busy = 0;
        for (int l = 0; l < LANES; l++) {
            Search *s = &lanes[l];
            if (s->step >= 0 && !advance(s)) {
                n_win[s->step] = s->count;
                s->step = -1;
            }
            while (s->step < 0 && next < n_steps) {
                Py_ssize_t k = next++;
                if (!begin(s, PyList_GET_ITEM(steps, k), k, span_a + first[k], span_b + first[k], last[k] - first[k],
                           win + 2 * first[k])) {
                    n_win[k] = s->count;
                    s->step = -1;
                }
            }
            busy |= s->step >= 0;
        }
    } while (busy);
}

/* Read step k's tokens refs[0 .. size) (at token numbers index[0 .. size)) into pairs, checked as
   `_read_windows` checks them: 0 <= start <= end <= length, real tokens in order. The loads of
   the tokens up to refs[ahead) are prefetched on the way. 0, or -1 when a token is no pair of ints
   or fails a check. */
static int read_tokens(PyObject **refs, Py_ssize_t size, Py_ssize_t ahead, int64_t length, int64_t *pairs) {
    int64_t last_start = 0, last_end = 0;
    int any = 0;
    for (Py_ssize_t m = 0; m < size; m++) {
        if (m + 2 * AHEAD < ahead) PREFETCH(refs[m + 2 * AHEAD]);
        if (m + AHEAD < ahead && PyList_CheckExact(refs[m + AHEAD]))
            PREFETCH(((PyListObject *)refs[m + AHEAD])->ob_item);
        if (m + AHEAD / 2 < ahead) {
            PyObject **items = pair_items(refs[m + AHEAD / 2], NULL);
            if (items != NULL) {
                PREFETCH(items[0]);
                PREFETCH(items[1]);
            }
        }
        int64_t s, e;
        if (pair_values(refs[m], &s, &e) < 0 || s < 0 || e < s || e > length) return -1;
        if (e > s) {
            if (any && (s < last_start || e < last_end)) return -1;
            any = 1;
            last_start = s;
            last_end = e;
        }
        pairs[2 * m] = s;
        pairs[2 * m + 1] = e;
    }
    return 0;
}

/* The two passes of read_windows, each cut by steps into parts (credit/_threads.h) weighed by the
   spans (finding) or tokens (reading) of their steps: a step's windows, tokens and outputs are its
   own, so the parts run on threads and the result does not depend on their number. */
typedef struct {
    PyObject *steps;
    Py_ssize_t n_steps;
    const int64_t *first, *last, *span_a, *span_b, *lengths;
    int64_t *win, *n_win;
    int64_t *cum;      /* (n_steps + 1) prefix sums of each step's work in the running pass */
    int64_t *at;       /* (n_steps + 1) each step's first token in the outputs */
    PyObject **refs;   /* the tokens' pairs, in output order */
    int64_t *pairs, *index, *n_read;
} Windows;

static void find_part(void *arg, int k, int n) {
    Windows *w = arg;
    Py_ssize_t lo = credit_part_start(w->cum, w->n_steps, k, n), hi = credit_part_start(w->cum, w->n_steps, k + 1, n);
    find_windows(w->steps, lo, hi, w->first, w->last, w->span_a, w->span_b, w->win, w->n_win);
}

/* Read the windows' tokens of the part's steps, each checked as `_read_windows` checks it
   (n_read[k]: the count read, -1 where the step fails). */
static void read_part(void *arg, int k, int n) {
    Windows *w = arg;
    Py_ssize_t lo = credit_part_start(w->cum, w->n_steps, k, n), hi = credit_part_start(w->cum, w->n_steps, k + 1, n);
    for (Py_ssize_t j = lo; j < hi; j++) { /* the windows' tokens, in order */
        const int64_t *at = w->win + 2 * w->first[j];
        PyObject **items = w->n_win[j] > 0 ? PySequence_Fast_ITEMS(PyList_GET_ITEM(w->steps, j)) : NULL;
        int64_t m = w->at[j];
        for (int64_t v = 0; v < w->n_win[j]; v++) {
            for (int64_t t = at[2 * v]; t < at[2 * v + 1]; t++, m++) {
                w->refs[m] = items[t];
                w->index[m] = t;
            }
        }
    }
    int64_t end = w->at[hi];
    for (Py_ssize_t j = lo; j < hi; j++) {
        if (w->n_win[j] < 0) {
            w->n_read[j] = -1;
            continue;
        }
        int64_t m = w->at[j], size = w->at[j + 1] - m;
        w->n_read[j] = read_tokens(w->refs + m, size, end - m, w->lengths[j], w->pairs + 2 * m) == 0 ? size : -1;
    }
}

/* read_windows(steps, first, last, span_a, span_b, lengths, n_read) -> (pairs, index) bytearrays

   steps: a list of lists or tuples of pairs; first, last: int64 (len(steps)): step k's joined
   spans are span_a[first[k]:last[k]], span_b[...] (int64, as credit/offsets.py `_joined_spans`
   gives them: sorted, apart); lengths: int64 action lengths; n_read: writable int64 (len(steps)).
   Each step's windows (`_windows`) are read and checked (`_read_windows`): n_read[k] is the count
   of tokens read, the steps' one after another in pairs (int64 start, end each) and index (int64
   token numbers); -1 for a step left to the caller (no list or tuple, `_windows` gives None, an
   entry that is no pair of ints or an int of 2**60 or more, a failed check). */
static PyObject *read_windows(PyObject *self, PyObject *args) {
    PyObject *steps, *objs[6];
    if (!PyArg_ParseTuple(args, "O!OOOOOO", &PyList_Type, &steps, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5]))
        return NULL;
    Py_ssize_t n_steps = PyList_GET_SIZE(steps);
    Py_buffer views[6];
    int got = 0;
    Windows w = {0};
    PyObject *pairs_obj = NULL, *index_obj = NULL, *result = NULL;
    for (; got < 6; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 5 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &views[got], flags) < 0) goto done;
        if (views[got].itemsize != 8) {
            got++;
            PyErr_SetString(PyExc_ValueError, "read_windows: every array must be int64");
            goto done;
        }
    }
    Py_ssize_t n_spans = views[2].len / 8;
    if (views[0].len / 8 != n_steps || views[1].len / 8 != n_steps || views[3].len / 8 != n_spans
        || views[4].len / 8 != n_steps || views[5].len / 8 != n_steps) {
        PyErr_SetString(PyExc_ValueError, "read_windows: first, last, lengths and n_read must have len(steps) "
                                          "items, span_a and span_b as many as each other");
        goto done;
    }
    w.steps = steps;
    w.n_steps = n_steps;
    w.first = views[0].buf;
    w.last = views[1].buf;
    w.span_a = views[2].buf;
    w.span_b = views[3].buf;
    w.lengths = views[4].buf;
    w.n_read = views[5].buf;
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        if (w.first[k] < 0 || w.last[k] < w.first[k] || w.last[k] > n_spans) {
            PyErr_SetString(PyExc_ValueError, "read_windows: a step's spans lie outside span_a");
            goto done;
        }
    }
    w.win = PyMem_Malloc(sizeof(int64_t) * (2 * (size_t)n_spans + 1));
    w.n_win = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_steps + 1));
    w.cum = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_steps + 1));
    w.at = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_steps + 1));
    if (w.win == NULL || w.n_win == NULL || w.cum == NULL || w.at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    w.cum[0] = 0;
    for (Py_ssize_t k = 0; k < n_steps; k++) w.cum[k + 1] = w.cum[k] + 1 + (w.last[k] - w.first[k]);
    credit_run_parts(find_part, &w, credit_parts(w.cum[n_steps], 256));
    w.at[0] = 0;
    w.cum[0] = 0;
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        const int64_t *at = w.win + 2 * w.first[k];
        if (w.n_win[k] > 0 && at[2 * w.n_win[k] - 1] > PySequence_Fast_GET_SIZE(PyList_GET_ITEM(steps, k)))
            w.n_win[k] = -1; /* past the list's end */
        int64_t size = 0;
        for (int64_t v = 0; v < w.n_win[k]; v++) size += at[2 * v + 1] - at[2 * v];
        w.at[k + 1] = w.at[k] + size;
        w.cum[k + 1] = w.cum[k] + 8 + size;
    }
    Py_ssize_t total = w.at[n_steps];
    pairs_obj = PyByteArray_FromStringAndSize(NULL, 16 * total);
    index_obj = PyByteArray_FromStringAndSize(NULL, 8 * total);
    w.refs = PyMem_Malloc(sizeof(PyObject *) * ((size_t)total + 1));
    if (pairs_obj == NULL || index_obj == NULL || w.refs == NULL) {
        if (w.refs == NULL) PyErr_NoMemory();
        goto done;
    }
    w.pairs = (int64_t *)PyByteArray_AS_STRING(pairs_obj);
    w.index = (int64_t *)PyByteArray_AS_STRING(index_obj);
    credit_huge_pages(w.pairs, 16 * (size_t)total);
    credit_huge_pages(w.index, 8 * (size_t)total);
    credit_huge_pages(w.refs, sizeof(PyObject *) * (size_t)total);
    credit_run_parts(read_part, &w, credit_parts(w.cum[n_steps], 4096));
    Py_ssize_t kept = 0; /* the steps that failed left out */
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        int64_t m = w.at[k], size = w.at[k + 1] - m;
        if (w.n_read[k] < 0) continue;
        if (kept < m) {
            memmove(w.pairs + 2 * kept, w.pairs + 2 * m, 16 * size);
            memmove(w.index + kept, w.index + m, 8 * size);
        }
        kept += size;
    }
    if (kept < total && (PyByteArray_Resize(pairs_obj, 16 * kept) < 0 || PyByteArray_Resize(index_obj, 8 * kept) < 0))
        goto done;
    result = PyTuple_Pack(2, pairs_obj, index_obj);
done:
    PyMem_Free(w.win);
    PyMem_Free(w.n_win);
    PyMem_Free(w.cum);
    PyMem_Free(w.at);
    PyMem_Free(w.refs);
    Py_XDECREF(pairs_obj);
    Py_XDECREF(index_obj);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}


/* --- the block search (credit/project.py: _search_blocks, _forms, _search, _find, _escaped_sizes) - */

static int is_open(Py_UCS4 c) { return c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '`' || c == '>'; }
static int is_close(Py_UCS4 c) { return c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '`' || c == '<'; }

/* Whether a line may start at pos: the text's start, after an opening character, or after an
   escaped line break (backslash then n or r). */
static int at_line_start(int kind, const void *data, Py_ssize_t pos) {
    if (pos == 0 || is_open(PyUnicode_READ(kind, data, pos - 1))) return 1;
    if (pos >= 2) {
        Py_UCS4 a = PyUnicode_READ(kind, data, pos - 2), b = PyUnicode_READ(kind, data, pos - 1);
        return a == '\\' && (b == 'n' || b == 'r');
    }
    return 0;
}

/* Whether a line may end at pos, trailing spaces and tabs skipped: the end, a closing character, an
   escaped line break, or one escaped twice (two backslashes then n or r). */
static int at_line_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    while (pos < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, pos);
        if (c != ' ' && c != '\t') break;
        pos++;
    }
    if (pos == n) return 1;
    Py_UCS4 c = PyUnicode_READ(kind, data, pos);
    if (is_close(c)) return 1;
    if (c != '\\' || pos + 1 >= n) return 0;
    Py_UCS4 d = PyUnicode_READ(kind, data, pos + 1);
    if (d == 'n' || d == 'r') return 1;
    if (d != '\\' || pos + 2 >= n) return 0;
    Py_UCS4 e = PyUnicode_READ(kind, data, pos + 2);
    return e == 'n' || e == 'r';
}

/* Characters a form's escape (an index into credit/project.py _ESCAPES) writes for c: 1 as written;
   JSON (1: as json.dumps with ensure_ascii=False writes it; 2: ASCII-only; 3: ASCII-only and
   HTML-safe, <, >, & and ' as \u00XX; 4: as 1 with / as \/). */
static inline Py_ssize_t escaped_width(Py_UCS4 c, int escape) {
    if (escape == 0) return 1;
    if (c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 2;
    if (c < 0x20) return 6;
    if (escape == 1) return 1;
    if (escape == 4) return c == '/' ? 2 : 1;
    if (c > '~') return c >= 0x10000 ? 12 : 6; /* ASCII-only: DEL and every non-ASCII character */
    if (escape == 3 && (c == '<' || c == '>' || c == '&' || c == '\'')) return 6;
    return 1;
}

static inline Py_ssize_t write_u(Py_UCS4 *out, Py_UCS4 c) {
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    out[1] = 'u';
    out[2] = hex[(c >> 12) & 0xf];
    out[3] = hex[(c >> 8) & 0xf];
    out[4] = hex[(c >> 4) & 0xf];
    out[5] = hex[c & 0xf];
    return 6;
}

/* text[a:b] in the form `escape` (json.JSONEncoder's encode without its quotes, then the
   translations of credit/project.py _json_html, _json_slashes), a new str; NULL on an error. */
static PyObject *escaped_form(PyObject *text, Py_ssize_t a, Py_ssize_t b, int escape) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t size = 0;
    for (Py_ssize_t k = a; k < b; k++) size += escaped_width(PyUnicode_READ(kind, data, k), escape);
    Py_UCS4 *buf = PyMem_Malloc(sizeof(Py_UCS4) * ((size_t)size + 1));
    if (buf == NULL) return PyErr_NoMemory();
    Py_ssize_t m = 0;
    for (Py_ssize_t k = a; k < b; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        Py_ssize_t w = escaped_width(c, escape);
        if (w == 1) {
            buf[m++] = c;
        } else if (w == 2) {
            buf[m++] = '\\';
            buf[m++] = c == '\b' ? 'b' : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c;
        } else if (w == 12) { /* a UTF-16 surrogate pair */
            m += write_u(buf + m, Py_UNICODE_HIGH_SURROGATE(c));
            m += write_u(buf + m, Py_UNICODE_LOW_SURROGATE(c));
        } else {
            m += write_u(buf + m, c);
        }
    }
    PyObject *out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, m);
    PyMem_Free(buf);
    return out;
}

/* The forms credit/project.py _forms gives text[a:b] (JSON-escaped: the same as its plain replace
   wherever that is used), in its order: the escape index of each into escapes, their count. */
static int form_escapes(PyObject *text, Py_ssize_t a, Py_ssize_t b, int *escapes) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int json = 0, wide = 0, html = 0, slash = 0;
    for (Py_ssize_t k = a; k < b; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c < 0x20 || c == '"' || c == '\\') json = 1;
        else if (c >= 0x80) wide = 1;
        else if (c == '<' || c == '>' || c == '&' || c == '\'') html = 1;
        else if (c == '/') slash = 1;
    }
    int n = 0;
    escapes[n++] = 0;
    if (json) escapes[n++] = 1;
    if (wide) escapes[n++] = 2;
    if (html) escapes[n++] = 3;
    if (slash) escapes[n++] = 4;
    return n;
}

/* The first place of needle[0 .. m) in hay[0 .. n), NULL if none: where SSE2 is, 16 places at a time
   whose first and last characters both match, then the rest compared (memmem prepares a table on
   every call, most of the time of a search that finds its text a few characters on). */
static inline const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0) return hay;
    if (n < m) return NULL;
    if (m == 1) return memchr(hay, needle[0], n);
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8(needle[0]), last = _mm_set1_epi8(needle[m - 1]);
    for (; i + m + 15 <= n; i += 16) { /* places i .. i + 15, their last characters below n */
        __m128i a = _mm_loadu_si128((const __m128i *)(hay + i)), b = _mm_loadu_si128((const __m128i *)(hay + i + m - 1));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(first, a), _mm_cmpeq_epi8(last, b)));
        while (mask) {
            unsigned bit = (unsigned)__builtin_ctz(mask);
            if (memcmp(hay + i + bit + 1, needle + 1, m - 2) == 0) return hay + i + bit;
            mask &= mask - 1;
        }
    }
#endif
    for (; i + m <= n; i++)
        if (hay[i] == needle[0] && hay[i + m - 1] == needle[m - 1] && memcmp(hay + i + 1, needle + 1, m - 2) == 0)
            return hay + i;
    return NULL;
}

/* The first position p with start <= p < limit, p + len(form) <= end, where form stands in action
   between line boundaries (credit/project.py _find); -1 if none, -2 on an error. */
static Py_ssize_t find_form(PyObject *action, PyObject *form, Py_ssize_t start, Py_ssize_t end, Py_ssize_t limit) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(action), m = PyUnicode_GET_LENGTH(form);
    if (end > n) end = n;
    Py_ssize_t last = end - m; /* the last position the form fits at */
    if (limit - 1 < last) last = limit - 1;
    if (start < 0 || start > last) return -1;
    int kind = PyUnicode_KIND(action);
    const void *data = PyUnicode_DATA(action);
    if (kind == PyUnicode_1BYTE_KIND && PyUnicode_KIND(form) == PyUnicode_1BYTE_KIND) {
        const char *text = data, *f = (const char *)PyUnicode_DATA(form);
        while (start <= last) {
            const char *at = find_bytes(text + start, (size_t)(last + m - start), f, (size_t)m);
            if (at == NULL) return -1;
            Py_ssize_t pos = at - text;
            if (at_line_start(kind, data, pos) && at_line_end(kind, data, n, pos + m)) return pos;
            start = pos + 1;
        }
        return -1;
    }
    while (start <= last) {
        Py_ssize_t pos = PyUnicode_Find(action, form, start, last + m, 1);
        if (pos < 0) return pos;
        if (at_line_start(kind, data, pos) && at_line_end(kind, data, n, pos + m)) return pos;
        start = pos + 1;
    }
    return -1;
}

/* A step's cursors: one per kind of line. */
typedef struct {
    int64_t *kind, *at;
    Py_ssize_t n, size;
} Cursors;

static Py_ssize_t cursor_of(const Cursors *c, int64_t kind) {
    for (Py_ssize_t k = 0; k < c->n; k++)
        if (c->kind[k] == kind) return (Py_ssize_t)c->at[k];
    return 0;
}

static int set_cursor(Cursors *c, int64_t kind, Py_ssize_t at) {
    for (Py_ssize_t k = 0; k < c->n; k++)
        if (c->kind[k] == kind) {
            c->at[k] = at;
            return 0;
        }
    if (c->n == c->size) {
        Py_ssize_t size = c->size ? 2 * c->size : 8;
        int64_t *kinds = PyMem_Realloc(c->kind, sizeof(int64_t) * (size_t)size);
        if (kinds == NULL) return -1;
        c->kind = kinds;
        int64_t *ats = PyMem_Realloc(c->at, sizeof(int64_t) * (size_t)size);
        if (ats == NULL) return -1;
        c->at = ats;
        c->size = size;
    }
    c->kind[c->n] = kind;
    c->at[c->n++] = at;
    return 0;
}

/* Search the forms of text[a:b] (their escapes, count n_forms) from max(cursor, w0), then from w0
   (credit/project.py _search), skipping the first form's first search when `skip_first` (done
   already, not found). A search from w0 looks only before where the first began: every match at
   or after it was the first search's to find. The position found (-1: none, -2: error), and in
   *form the form found (a new reference) and in *escape its escape. */
static Py_ssize_t search_forms(PyObject *action, PyObject *text, Py_ssize_t a, Py_ssize_t b, const int *escapes,
                               int n_forms, Py_ssize_t cursor, Py_ssize_t w0, Py_ssize_t w1, int skip_first,
                               PyObject **form, int *escape) {
    PyObject *forms[5] = {NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t first = cursor > w0 ? cursor : w0, found = -1;
    for (int pass = 0; pass < (cursor > w0 ? 2 : 1) && found == -1; pass++) {
        Py_ssize_t start = pass ? w0 : first, limit = pass ? first : PY_SSIZE_T_MAX;
        for (int k = 0; k < n_forms; k++) {
            if (pass == 0 && k == 0 && skip_first) continue;
            if (forms[k] == NULL) {
                forms[k] = escapes[k] == 0 && a == 0 && b == PyUnicode_GET_LENGTH(text)
                               ? (Py_INCREF(text), text)
                               : escapes[k] == 0 ? PyUnicode_Substring(text, a, b) : escaped_form(text, a, b, escapes[k]);
                if (forms[k] == NULL) {
                    found = -2;
                    break;
                }
            }
            found = find_form(action, forms[k], start, w1, limit);
            if (found != -1) {
                if (found >= 0) {
                    *form = forms[k];
                    forms[k] = NULL;
                    *escape = escapes[k];
                }
                break;
            }
        }
    }
    for (int k = 0; k < 5; k++) Py_XDECREF(forms[k]);
    return found;
}

/* Each line's length in the form `escape` of text (its lines split at line breaks, as
   credit/project.py _escaped_sizes splits them), with and without trailing whitespace: a tuple of
   two lists; NULL on an error. */
static PyObject *escaped_sizes(PyObject *text, int escape) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *sizes = PyList_New(0), *kept = PyList_New(0), *out = NULL;
    if (sizes == NULL || kept == NULL) goto done;
    Py_ssize_t start = 0;
    for (Py_ssize_t k = 0; k <= n; k++) {
        if (k < n && PyUnicode_READ(kind, data, k) != '\n') continue;
        Py_ssize_t size = 0, stripped = k; /* the line text[start:k] */
        while (stripped > start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, stripped - 1))) stripped--;
        Py_ssize_t size_kept = 0;
        for (Py_ssize_t j = start; j < k; j++) {
            Py_ssize_t w = escaped_width(PyUnicode_READ(kind, data, j), escape);
            size += w;
            if (j < stripped) size_kept += w;
        }
        PyObject *x = PyLong_FromSsize_t(size), *y = PyLong_FromSsize_t(size_kept);
        int bad = x == NULL || y == NULL || PyList_Append(sizes, x) < 0 || PyList_Append(kept, y) < 0;
        Py_XDECREF(x);
        Py_XDECREF(y);
        if (bad) goto done;
        start = k + 1;
    }
    out = PyTuple_Pack(2, sizes, kept);
done:
    Py_XDECREF(sizes);
    Py_XDECREF(kept);
    return out;
}

/* search_blocks(actions, joined, lo, hi, step, kind, c0, c1, w0, w1, at, kept, pos, escape)
   -> (recounted, alone)

   credit/project.py `_search_blocks` whole, over int64 buffers: blocks lo, hi, step, kind, c0,
   c1, w0, w1 (w1 < 0: the action's end; every w0 >= 0), pos and escape written; lines at, kept.
   Block b (lines lo[b]..hi[b]-1, text joined[c0[b]:c1[b]]) is looked for in actions[step[b]] in
   its forms, from its kind's cursor in the step, then from its window's start; found: pos[b],
   escape[b] (and in recounted, {b: (sizes, kept sizes)} where more than line breaks were escaped);
   else pos[b] = -1 and its lines are looked for one by one, those found listed in alone as (line,
   start, end). */
static PyObject *search_blocks(PyObject *self, PyObject *args) {
    PyObject *actions, *joined, *objs[14];
    if (!PyArg_ParseTuple(args, "O!UOOOOOOOOOOOO", &PyList_Type, &actions, &joined, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10],
                          &objs[11]))
        return NULL;
    Py_buffer views[12];
    Py_ssize_t n = PyObject_Length(objs[0]), n_lines = PyObject_Length(objs[8]);
    if (n < 0 || n_lines < 0) return NULL;
    const char *names[12] = {"lo", "hi", "step", "kind", "c0", "c1", "w0", "w1", "at", "kept", "pos", "escape"};
    int got = 0;
    for (; got < 12; got++) {
        if (PyObject_GetBuffer(objs[got], &views[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got >= 10 ? PyBUF_WRITABLE : 0))
            < 0)
            break;
        if (views[got].itemsize != 8 || views[got].len / 8 != (got == 8 || got == 9 ? n_lines : n)) {
            PyErr_Format(PyExc_ValueError, "search_blocks: %s must be int64 of the %s' count", names[got],
                         got == 8 || got == 9 ? "lines" : "blocks");
            PyBuffer_Release(&views[got]);
            break;
        }
    }
    PyObject *recounted = NULL, *alone = NULL, *result = NULL, *action = NULL;
    Cursors cursors = {NULL, NULL, 0, 0};
    if (got < 12) goto done;
    const int64_t *lo = views[0].buf, *hi = views[1].buf, *step = views[2].buf, *kind = views[3].buf,
                  *c0 = views[4].buf, *c1 = views[5].buf, *w0 = views[6].buf, *w1 = views[7].buf,
                  *at = views[8].buf, *kept = views[9].buf;
    int64_t *pos = views[10].buf, *escape = views[11].buf;
    Py_ssize_t n_actions = PyList_GET_SIZE(actions), n_joined = PyUnicode_GET_LENGTH(joined);
    for (Py_ssize_t b = 0; b < n; b++) {
        if (step[b] < 0 || step[b] >= n_actions || c0[b] < 0 || c1[b] < c0[b] || c1[b] > n_joined || w0[b] < 0
            || lo[b] < 0 || hi[b] < lo[b] || hi[b] > n_lines) {
            PyErr_SetString(PyExc_ValueError, "search_blocks: a block's step, lines, window or text bounds are out of "
                                              "range");
            goto done;
        }
        if (!PyUnicode_Check(PyList_GET_ITEM(actions, step[b]))) {
            PyErr_SetString(PyExc_TypeError, "search_blocks: actions must be str");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < n_lines; j++)
        if (at[j] < 0 || kept[j] < 0 || kept[j] > n_joined - at[j]) {
            PyErr_SetString(PyExc_ValueError, "search_blocks: a line's text bounds are out of range");
            goto done;
        }
    recounted = PyDict_New();
    alone = PyList_New(0);
    if (recounted == NULL || alone == NULL) goto done;
    int64_t current = -1;
    for (Py_ssize_t b = 0; b < n; b++) {
        /* held: an allocation below may run a collection, and so Python code that changes actions */
        if (step[b] >= PyList_GET_SIZE(actions) || !PyUnicode_Check(PyList_GET_ITEM(actions, step[b]))) {
            PyErr_SetString(PyExc_RuntimeError, "search_blocks: actions changed during the search");
            goto done;
        }
        Py_XSETREF(action, Py_NewRef(PyList_GET_ITEM(actions, step[b])));
        if (step[b] != current) {
            cursors.n = 0;
            current = step[b];
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(action);
        Py_ssize_t end = w1[b] < 0 ? length : (Py_ssize_t)w1[b], cursor = cursor_of(&cursors, kind[b]);
        PyObject *text = PyUnicode_Substring(joined, c0[b], c1[b]);
        if (text == NULL) goto done;
        Py_ssize_t found = find_form(action, text, cursor > w0[b] ? cursor : (Py_ssize_t)w0[b], end, PY_SSIZE_T_MAX);
        pos[b] = found;
        escape[b] = 0;
        if (found >= 0) {
            Py_DECREF(text);
            if (set_cursor(&cursors, kind[b], found + (c1[b] - c0[b])) < 0) {
                PyErr_NoMemory();
                goto done;
            }
            continue;
        }
        if (found == -2) {
            Py_DECREF(text);
            goto done;
        }
        /* the rest of the searches: the other forms, then the lines one by one */
        int escapes[5], esc = 0;
        int n_forms = form_escapes(text, 0, PyUnicode_GET_LENGTH(text), escapes);
        PyObject *form = NULL;
        found = search_forms(action, text, 0, PyUnicode_GET_LENGTH(text), escapes, n_forms, cursor, w0[b], end, 1,
                             &form, &esc);
        if (found >= 0) {
            Py_ssize_t size = PyUnicode_GET_LENGTH(form);
            Py_DECREF(form);
            pos[b] = found;
            escape[b] = esc;
            int bad = set_cursor(&cursors, kind[b], found + size) < 0;
            if (bad) PyErr_NoMemory();
            if (!bad && esc > 0 && size != PyUnicode_GET_LENGTH(text) + (hi[b] - lo[b]) - 1) {
                PyObject *sizes = escaped_sizes(text, esc), *key = PyLong_FromSsize_t(b);
                bad = sizes == NULL || key == NULL || PyDict_SetItem(recounted, key, sizes) < 0;
                Py_XDECREF(sizes);
                Py_XDECREF(key);
            }
            Py_DECREF(text);
            if (bad) goto done;
            continue;
        }
        Py_DECREF(text);
        if (found == -2) goto done;
        int narrow = w1[b] >= 0 && (w0[b] > 0 || w1[b] < length); /* a window inside the action */
        int several = hi[b] - lo[b] > 1;
        if (!several && !narrow) continue;
        for (int64_t j = lo[b]; j < hi[b]; j++) {
            if (kept[j] == 0) continue;
            Py_ssize_t a = (Py_ssize_t)at[j], e = a + (Py_ssize_t)kept[j], a_stripped = a;
            while (a_stripped < e && Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(joined, a_stripped))) a_stripped++;
            /* as written (a block's line), then without its indentation (inside a window) */
            Py_ssize_t tries[2];
            int n_tries = 0;
            if (several) tries[n_tries++] = a;
            if (narrow && a_stripped > a) tries[n_tries++] = a_stripped;
            for (int t = 0; t < n_tries; t++) {
                n_forms = form_escapes(joined, tries[t], e, escapes);
                cursor = cursor_of(&cursors, kind[b]);
                found = search_forms(action, joined, tries[t], e, escapes, n_forms, cursor, w0[b], end, 0, &form,
                                     &esc);
                if (found == -2) goto done;
                if (found >= 0) {
                    Py_ssize_t moved = found + PyUnicode_GET_LENGTH(form);
                    Py_DECREF(form);
                    PyObject *entry = Py_BuildValue("(Lnn)", (long long)j, found, moved);
                    int bad = entry == NULL || PyList_Append(alone, entry) < 0;
                    Py_XDECREF(entry);
                    if (bad) goto done;
                    if (set_cursor(&cursors, kind[b], moved) < 0) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    break;
                }
            }
        }
    }
    result = PyTuple_Pack(2, recounted, alone);
done:
    Py_XDECREF(action);
    PyMem_Free(cursors.kind);
    PyMem_Free(cursors.at);
    Py_XDECREF(recounted);
    Py_XDECREF(alone);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* --- the lines joined (credit/project.py: _joined_lines) --------------------------------------- */

/* Whether JSON writes c another way (other than a line break, which joins the lines). */
static inline int json_escaped(Py_UCS4 c) { return (c < 0x20 && c != '\n') || c == '"' || c == '\\'; }

/* Of the characters data[a .. b) of a str of kind `kind`: 1 when one is a line break, else 0, with
   *count the characters JSON escapes and *max raised to the widest (a one-byte ASCII str: its kind's
   widest, 127). When `at` is given, the escapes' positions (as at_base + their index - a) go there. */
#define SCAN_CHARS(T)                                                                                                  \
    do {                                                                                                               \
        const T *x = (const T *)data;                                                                                  \
        for (Py_ssize_t k = a; k < b; k++) {                                                                           \
            Py_UCS4 c = x[k];                                                                                          \
            if (c == '\n') return 1;                                                                                   \
            if (c > widest) widest = c;                                                                                \
            if (c < 0x20 || c == '"' || c == '\\') {                                                                   \
                if (at != NULL) at[n] = at_base + (k - a);                                                             \
                n++;                                                                                                   \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static int scan_chars(int kind, const void *data, int ascii, Py_ssize_t a, Py_ssize_t b, Py_ssize_t *count,
                      Py_UCS4 *max, int64_t *at, int64_t at_base) {
    Py_ssize_t n = 0;
    Py_UCS4 widest = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const unsigned char *x = data;
        if (b > a && memchr(x + a, '\n', (size_t)(b - a)) != NULL) return 1;
        if (ascii) widest = 127;
        for (Py_ssize_t k = a; k < b; k++) {
            unsigned char c = x[k];
            if (!ascii && c > widest) widest = c;
            if (c < 0x20 || c == '"' || c == '\\') {
                if (at != NULL) at[n] = at_base + (k - a);
                n++;
            }
        }
    } else if (kind == PyUnicode_2BYTE_KIND) {
        SCAN_CHARS(Py_UCS2);
    } else {
        SCAN_CHARS(Py_UCS4);
    }
    *count += n;
    if (b > a && widest > *max) *max = widest;
    return 0;
}

/* joined_lines' usual case, every text one byte a character: each text read once (its object is far
   from the last in memory), into a buffer that becomes the joined str; the escapes and the widest
   character read off the buffer after. 1 when some text is wider (the caller then reads them all
   twice), 0 on success with *joined and the arrays made, -1 on an error; -2 for None (a line break
   in a text, a line index outside texts, a text that is no str). */
static int joined_narrow(PyObject *texts, const int64_t *line, Py_ssize_t n, Py_ssize_t skip, PyObject **joined,
                         PyObject **arrays) {
    Py_ssize_t n_texts = PyList_GET_SIZE(texts), capacity = 64 * n + 64, total = 0;
    char *buf = PyMem_Malloc((size_t)capacity);
    int status = -1;
    for (int k = 0; k < 3; k++) arrays[k] = PyByteArray_FromStringAndSize(NULL, 8 * n);
    if (buf == NULL || arrays[0] == NULL || arrays[1] == NULL || arrays[2] == NULL) {
        if (buf == NULL) PyErr_NoMemory();
        goto done;
    }
    /* (no Python code runs from here to the str's making: the texts are read while listed) */
    int64_t *start = (int64_t *)PyByteArray_AS_STRING(arrays[0]), *size = (int64_t *)PyByteArray_AS_STRING(arrays[1]),
            *kept = (int64_t *)PyByteArray_AS_STRING(arrays[2]);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + AHEAD < n && line[i + AHEAD] >= 0 && line[i + AHEAD] < n_texts) { /* a str's head and first chars */
            PyObject *ahead = PyList_GET_ITEM(texts, line[i + AHEAD]);
            PREFETCH(ahead);
            PREFETCH((const char *)ahead + 64);
        }
        if (line[i] < 0 || line[i] >= n_texts) {
            status = -2;
            goto done;
        }
        PyObject *text = PyList_GET_ITEM(texts, line[i]);
        if (!PyUnicode_Check(text)) {
            status = -2;
            goto done;
        }
        if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
            status = 1;
            goto done;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(text), cut = length < skip ? length : skip;
        const unsigned char *data = PyUnicode_1BYTE_DATA(text);
        if (length > 0 && memchr(data, '\n', (size_t)length) != NULL) {
            status = -2;
            goto done;
        }
        if (total + length + 1 > capacity) {
            capacity = 2 * (total + length + 1);
            char *grown = PyMem_Realloc(buf, (size_t)capacity);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            buf = grown;
        }
        if (i > 0) buf[total++] = '\n';
        Py_ssize_t stripped = length;
        while (stripped > cut && Py_UNICODE_ISSPACE(data[stripped - 1])) stripped--;
        start[i] = total;
        size[i] = length - cut;
        kept[i] = stripped - cut;
        memcpy(buf + total, data + cut, (size_t)(length - cut));
        total += length - cut;
    }
    Py_ssize_t n_escaped = 0;
    unsigned char widest = 0;
    for (Py_ssize_t k = 0; k < total; k++) {
        unsigned char c = (unsigned char)buf[k];
        widest |= c;
        n_escaped += (c < 0x20 && c != '\n') || c == '"' || c == '\\';
    }
    *joined = PyUnicode_New(total, widest & 0x80 ? 0xff : 0x7f);
    arrays[3] = PyByteArray_FromStringAndSize(NULL, 8 * n_escaped);
    if (*joined == NULL || arrays[3] == NULL) goto done;
    memcpy(PyUnicode_1BYTE_DATA(*joined), buf, (size_t)total);
    int64_t *escaped = (int64_t *)PyByteArray_AS_STRING(arrays[3]);
    Py_ssize_t e = 0;
    for (Py_ssize_t k = 0; k < total && e < n_escaped; k++) {
        unsigned char c = (unsigned char)buf[k];
        if ((c < 0x20 && c != '\n') || c == '"' || c == '\\') escaped[e++] = k;
    }
    status = 0;
done:
    PyMem_Free(buf);
    return status;
}

/* joined_lines(texts, line, skip) -> (joined, start, size, kept, escaped_at) or None

   credit/project.py `_joined_lines` of texts[line[0]][skip:], texts[line[1]][skip:], ...: the lines
   joined by line breaks, each one's start in it, length and length without trailing whitespace
   (int64 bytes), and the positions of the characters JSON escapes but line breaks. None where
   Python's loop is to do it: no lines, a line index outside texts, a text that is no str or holds
   a line break itself. */
static PyObject *joined_lines(PyObject *self, PyObject *args) {
    PyObject *texts, *line_obj;
    Py_ssize_t skip;
    if (!PyArg_ParseTuple(args, "O!On", &PyList_Type, &texts, &line_obj, &skip)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(line_obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    PyObject *joined = NULL, *arrays[4] = {NULL, NULL, NULL, NULL}, *result = NULL, **held = NULL;
    Py_ssize_t n_held = 0;
    if (view.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "joined_lines: line must be int64");
        goto done;
    }
    const int64_t *line = view.buf;
    Py_ssize_t n = view.len / 8, n_texts = PyList_GET_SIZE(texts), total = n > 0 ? n - 1 : 0, n_escaped = 0;
    Py_UCS4 max = 0;
    if (n == 0 || skip < 0) goto none;
    int narrow = joined_narrow(texts, line, n, skip, &joined, arrays);
    if (narrow == 0) goto made;
    if (narrow == -1) goto done;
    if (narrow == -2) goto none;
    Py_CLEAR(joined);
    for (int k = 0; k < 4; k++) Py_CLEAR(arrays[k]);
    /* the texts, held: the allocations below may run a collection, and so Python code */
    held = PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (held == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* the lengths, the widest character, the escapes; or None */
        if (i + AHEAD < n && line[i + AHEAD] >= 0 && line[i + AHEAD] < n_texts) { /* a str's head and first chars */
            PyObject *ahead = PyList_GET_ITEM(texts, line[i + AHEAD]);
            PREFETCH(ahead);
            PREFETCH((const char *)ahead + 64);
        }
        if (line[i] < 0 || line[i] >= n_texts) goto none;
        PyObject *text = PyList_GET_ITEM(texts, line[i]);
        if (!PyUnicode_Check(text)) goto none;
        held[n_held++] = Py_NewRef(text);
        Py_ssize_t length = PyUnicode_GET_LENGTH(text), cut = length < skip ? length : skip;
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t ignored = 0;
        Py_UCS4 ignored_max = 0;
        if (scan_chars(kind, data, PyUnicode_IS_ASCII(text), 0, cut, &ignored, &ignored_max, NULL, 0)
            || scan_chars(kind, data, PyUnicode_IS_ASCII(text), cut, length, &n_escaped, &max, NULL, 0))
            goto none;
        total += length - cut;
    }
    joined = PyUnicode_New(total, max);
    for (int k = 0; k < 4; k++) arrays[k] = PyByteArray_FromStringAndSize(NULL, 8 * (k < 3 ? n : n_escaped));
    if (joined == NULL || arrays[0] == NULL || arrays[1] == NULL || arrays[2] == NULL || arrays[3] == NULL) goto done;
    int64_t *start = (int64_t *)PyByteArray_AS_STRING(arrays[0]), *size = (int64_t *)PyByteArray_AS_STRING(arrays[1]),
            *kept = (int64_t *)PyByteArray_AS_STRING(arrays[2]), *escaped = (int64_t *)PyByteArray_AS_STRING(arrays[3]);
    int out_kind = PyUnicode_KIND(joined);
    void *out = PyUnicode_DATA(joined);
    Py_ssize_t at = 0, e = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + AHEAD < n) {
            PREFETCH(held[i + AHEAD]);
            PREFETCH((const char *)held[i + AHEAD] + 64);
        }
        PyObject *text = held[i];
        Py_ssize_t length = PyUnicode_GET_LENGTH(text), cut = length < skip ? length : skip;
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        if (i > 0) PyUnicode_WRITE(out_kind, out, at++, '\n');
        start[i] = at;
        size[i] = length - cut;
        Py_ssize_t stripped = length;
        while (stripped > cut && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, stripped - 1))) stripped--;
        kept[i] = stripped - cut;
        if (kind == out_kind) {
            memcpy((char *)out + at * kind, (const char *)data + cut * kind, (size_t)(length - cut) * (size_t)kind);
        } else {
            for (Py_ssize_t k = cut; k < length; k++)
                PyUnicode_WRITE(out_kind, out, at + (k - cut), PyUnicode_READ(kind, data, k));
        }
        Py_ssize_t found = 0;
        Py_UCS4 ignored_max = 0;
        scan_chars(kind, data, PyUnicode_IS_ASCII(text), cut, length, &found, &ignored_max, escaped + e, at);
        e += found;
        at += length - cut;
    }
made:
    result = Py_BuildValue("OOOOO", joined, arrays[0], arrays[1], arrays[2], arrays[3]);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(joined);
    for (int k = 0; k < 4; k++) Py_XDECREF(arrays[k]);
    for (Py_ssize_t i = 0; i < n_held; i++) Py_DECREF(held[i]);
    PyMem_Free(held);
    PyBuffer_Release(&view);
    return result;
}

/* --- the gaps between lines (credit/project.py: _joins) ----------------------------------------- */

/* join_gaps(actions, step, end, start, out) -> True, or False for Python's loop to do it

   Whether the line ending at end[k] and the next starting at start[k] in actions[step[k]] join: they
   touch or overlap, or the text between them fully matches credit/project.py _GAP, (?:\s|\\[nrt])*
   (each character a space as re's \s reads it, Py_UNICODE_ISSPACE, or a backslash and the n, r or
   t after it: the two never start alike, so one pass decides it). Into out (one byte each). False,
   with nothing written, where a step is out of range, an action is no str or a gap lies outside
   its action. */
static PyObject *join_gaps(PyObject *self, PyObject *args) {
    PyObject *actions, *objs[4];
    if (!PyArg_ParseTuple(args, "O!OOOO", &PyList_Type, &actions, &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer views[4];
    int got = 0;
    Py_ssize_t n = PyObject_Length(objs[0]);
    if (n < 0) return NULL;
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(objs[got], &views[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 3 ? PyBUF_WRITABLE : 0))
            < 0)
            break;
        if (views[got].itemsize != (got == 3 ? 1 : 8) || views[got].len / views[got].itemsize != n) {
            PyErr_SetString(PyExc_ValueError, "join_gaps: step, end, start must be int64 and out one byte each, of one "
                                              "length");
            PyBuffer_Release(&views[got]);
            break;
        }
    }
    PyObject *result = NULL;
    if (got < 4) goto done;
    const int64_t *step = views[0].buf, *end = views[1].buf, *start = views[2].buf;
    char *out = views[3].buf;
    Py_ssize_t n_actions = PyList_GET_SIZE(actions);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (step[k] < 0 || step[k] >= n_actions || !PyUnicode_Check(PyList_GET_ITEM(actions, step[k]))) goto python;
        if (start[k] > end[k] && (end[k] < 0 || start[k] > PyUnicode_GET_LENGTH(PyList_GET_ITEM(actions, step[k]))))
            goto python;
    }
    for (Py_ssize_t k = 0; k < n; k++) { /* (no Python code runs here: the actions are read while listed) */
        if (start[k] <= end[k]) {
            out[k] = 1;
            continue;
        }
        PyObject *action = PyList_GET_ITEM(actions, step[k]);
        int kind = PyUnicode_KIND(action);
        const void *data = PyUnicode_DATA(action);
        Py_ssize_t i = (Py_ssize_t)end[k], e = (Py_ssize_t)start[k];
        while (i < e) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(c)) {
                i++;
            } else if (c == '\\' && i + 1 < e) {
                Py_UCS4 d = PyUnicode_READ(kind, data, i + 1);
                if (d != 'n' && d != 'r' && d != 't') break;
                i += 2;
            } else {
                break;
            }
        }
        out[k] = i == e;
    }
    result = Py_NewRef(Py_True);
    goto done;
python:
    result = Py_NewRef(Py_False);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* --- the projection (credit/project.py: project_steps' searches and _paint) ----------------------- */

/* The next unpainted item at or after i (items painted point past themselves), paths halved. */
static inline int64_t unpainted(int64_t *next, int64_t i) {
    while (next[i] != i) {
        next[i] = next[next[i]];
        i = next[i];
    }
    return i;
}

/* The steps of project_flat, painted in parts (credit/_threads.h): a step's tokens, spans and
   outputs are its own. */
typedef struct {
    const int64_t *tokens, *spans;
    const double *values;
    const int64_t *start, *first_span, *order;
    double *value;
    char *covered;
    Py_ssize_t n_steps;
    int64_t *cum; /* (n_steps + 1) prefix sums of the steps' work */
    int failed;   /* a part could not allocate its scratch */
} Paint;

static void paint_part(void *arg, int part, int n_parts) {
    Paint *p = arg;
    Py_ssize_t lo_step = credit_part_start(p->cum, p->n_steps, part, n_parts);
    Py_ssize_t hi_step = credit_part_start(p->cum, p->n_steps, part + 1, n_parts);
    const int64_t *tokens = p->tokens, *spans = p->spans, *start = p->start, *first_span = p->first_span,
                  *order = p->order;
    int64_t widest = 0;
    for (Py_ssize_t s = lo_step; s < hi_step; s++)
        if (first_span[s] != first_span[s + 1] && start[s + 1] - start[s] > widest) widest = start[s + 1] - start[s];
    int64_t *local = malloc(sizeof(int64_t) * (4 * (size_t)widest + 1));
    if (local == NULL) {
        p->failed = 1;
        return;
    }
    int64_t *ends = local, *starts = local + widest, *at = local + 2 * widest, *next = local + 3 * widest;
    for (Py_ssize_t s = lo_step; s < hi_step; s++) {
        if (first_span[s] == first_span[s + 1]) continue;
        int64_t r = 0;
        for (int64_t t = start[s]; t < start[s + 1]; t++) /* the step's real tokens */
            if (tokens[2 * t + 1] > tokens[2 * t]) {
                starts[r] = tokens[2 * t];
                ends[r] = tokens[2 * t + 1];
                at[r++] = t;
            }
        for (int64_t i = 0; i <= r; i++) next[i] = i;
        for (int64_t k = first_span[s]; k < first_span[s + 1]; k++) {
            int64_t x = order[k], a = 0, b = r, lo = 0, hi = r, from = spans[2 * x], to = spans[2 * x + 1];
            while (a < b) { /* #{real tokens ending at or before the span's start} (selects, not branches) */
                int64_t mid = a + (b - a) / 2, right = ends[mid] <= from;
                a = right ? mid + 1 : a;
                b = right ? b : mid;
            }
            while (lo < hi) { /* #{real tokens starting before its end} */
                int64_t mid = lo + (hi - lo) / 2, right = starts[mid] < to;
                lo = right ? mid + 1 : lo;
                hi = right ? hi : mid;
            }
            for (int64_t i = unpainted(next, a); i < lo; i = unpainted(next, i + 1)) {
                p->value[at[i]] = p->values[x];
                p->covered[at[i]] = 1;
                next[i] = i + 1;
            }
        }
    }
    free(local);
}

/* project_flat(tokens, n_tokens, spans, span_step, values, by_rank, value, covered) -> None

   credit/project.py `project_flat` after its checks: tokens (T, 2) int64, the steps' one after
   another, n_tokens[s] of step s; spans (m, 2) int64 of steps span_step (m,) int64, each in
   0 .. len(n_tokens) - 1; values (m,) float64; by_rank (m,) the spans from the lowest priority
   (of equal ones the earlier first): a permutation of 0 .. m - 1. Each real token (end > start)
   that a span covers gets, in value (T,) float64 and covered (T,) one byte each (zeros given),
   the value of the highest-ranked span covering it, and covered 1. A step at a time: its real
   tokens copied out (the searches of its spans then stay in a few cache lines), its spans from
   the highest rank down, each painting the tokens no span painted before it. */
static PyObject *project_flat(PyObject *self, PyObject *args) {
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    Py_buffer views[8];
    int got = 0;
    for (; got < 8; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got >= 6 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &views[got], flags) < 0) break;
        if (views[got].itemsize != (got == 7 ? 1 : 8)) {
            PyErr_SetString(PyExc_ValueError, "project_flat: arrays must be int64 or float64 (covered: one byte each)");
            PyBuffer_Release(&views[got]);
            break;
        }
    }
    int64_t *start = NULL, *order = NULL;
    uint8_t *seen = NULL;
    PyObject *result = NULL;
    if (got < 8) goto done;
    Py_ssize_t n_all = views[0].len / 16, n_steps = views[1].len / 8, m = views[2].len / 16;
    if (views[0].len != 16 * n_all || views[2].len != 16 * m || views[3].len / 8 != m || views[4].len / 8 != m
        || views[5].len / 8 != m || views[6].len / 8 != n_all || views[7].len != n_all) {
        PyErr_SetString(PyExc_ValueError, "project_flat: the arrays' lengths do not fit together");
        goto done;
    }
    const int64_t *tokens = views[0].buf, *n_tokens = views[1].buf, *spans = views[2].buf, *span_step = views[3].buf,
                  *by_rank = views[5].buf;
    const double *values = views[4].buf;
    double *value = views[6].buf;
    char *covered = views[7].buf;
    /* start: each step's first token, then (from n_steps + 1 on) its first span in order */
    start = PyMem_Malloc(sizeof(int64_t) * (2 * (size_t)n_steps + 3));
    order = PyMem_Malloc(sizeof(int64_t) * ((size_t)m + 1));
    seen = PyMem_Calloc((size_t)m + 1, 1);
    if (start == NULL || order == NULL || seen == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t total = 0, *first_span = start + n_steps + 1;
    for (Py_ssize_t s = 0; s < n_steps; s++) {
        if (n_tokens[s] < 0 || n_tokens[s] > n_all - total) {
            total = -1;
            break;
        }
        start[s] = total;
        total += n_tokens[s];
    }
    start[n_steps] = total;
    if (total != n_all) {
        PyErr_SetString(PyExc_ValueError, "project_flat: n_tokens does not fit the tokens");
        goto done;
    }
    memset(first_span, 0, sizeof(int64_t) * ((size_t)n_steps + 2));
    for (Py_ssize_t k = 0; k < m; k++) {
        if (by_rank[k] < 0 || by_rank[k] >= m || seen[by_rank[k]] || span_step[k] < 0 || span_step[k] >= n_steps) {
            PyErr_SetString(PyExc_ValueError, "project_flat: by_rank is no permutation of the spans, or a span's step "
                                              "is out of range");
            goto done;
        }
        seen[by_rank[k]] = 1;
        first_span[span_step[k] + 2]++;
    }
    for (Py_ssize_t s = 0; s < n_steps; s++) first_span[s + 2] += first_span[s + 1];
    for (Py_ssize_t k = m - 1; k >= 0; k--) { /* each step's spans, from the highest rank down */
        int64_t x = by_rank[k];
        order[first_span[span_step[x] + 1]++] = x;
    }
    /* first_span[s] .. first_span[s + 1]: step s's spans in order; the steps painted in parts */
    Paint paint = {tokens, spans, values, start, first_span, order, value, covered, n_steps, NULL, 0};
    paint.cum = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_steps + 1));
    if (paint.cum == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    paint.cum[0] = 0;
    for (Py_ssize_t s = 0; s < n_steps; s++) { /* a step's work: its tokens copied out, its spans' searches */
        int64_t n_spans = first_span[s + 1] - first_span[s];
        paint.cum[s + 1] = paint.cum[s] + (n_spans ? 8 + n_tokens[s] + 4 * n_spans : 0);
    }
    credit_run_parts(paint_part, &paint, credit_parts(paint.cum[n_steps], 16384));
    PyMem_Free(paint.cum);
    if (paint.failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(start);
    PyMem_Free(order);
    PyMem_Free(seen);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* --- the greedy anchor pass (credit/anchors.py: _greedy's loop over candidates) ---------------- */

/* 0 when every x[i] (i in [from, to)) lies in [0, bound); else -1 with ValueError(message). */
static int in_range(const int64_t *x, Py_ssize_t from, Py_ssize_t to, int64_t bound, const char *message) {
    for (Py_ssize_t i = from; i < to; i++)
        if (x[i] < 0 || x[i] >= bound) {
            PyErr_SetString(PyExc_ValueError, message);
            return -1;
        }
    return 0;
}

/* Whether any of lines[lo .. hi) is marked taken. */
static int any_taken(const int64_t *lines, int64_t lo, int64_t hi, const uint8_t *taken) {
    for (int64_t j = lo; j < hi; j++)
        if (taken[lines[j]]) return 1;
    return 0;
}

static void mark_taken(const int64_t *lines, int64_t lo, int64_t hi, uint8_t *taken) {
    for (int64_t j = lo; j < hi; j++) taken[lines[j]] = 1;
}

/* greedy(lines, line_ptr, member_ptr, members, tasks, contested, order, max_anchors, taken, per_task,
          is_taken, rescored) -> {candidate: [positions of the members it keeps]} for the candidates cut.

   The loop of credit/anchors.py `_greedy`, over the candidates listed in `order`, in that order:
   a candidate whose task has max_anchors anchors is skipped; a contested one that holds a line
   already taken keeps the members holding none (at least two, and rescored(their units) > 0, or
   it is skipped); each candidate taken marks the lines it keeps and counts for its task.
   lines (int64): every member's line ids, member after member; line_ptr (int64, M + 1): each
   member's part of lines; member_ptr (int64, n + 1): each candidate's part of the members;
   members (int64, M): the unit of each member; tasks (int64, n): the task of each candidate;
   contested (bool, n); order (int64): the candidates to visit; taken (bool, > every line id,
   writable): the lines taken so far; per_task (int64, > every task, writable): anchors per task so
   far; is_taken (bool, n, writable): set for each candidate taken; rescored: called with a list of
   the kept members' units, returns a float. */
static PyObject *greedy(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[11], *rescored;
    Py_ssize_t max_anchors;
    if (!PyArg_ParseTuple(args, "OOOOOOOnOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &max_anchors, &objs[7], &objs[8], &objs[9], &rescored))
        return NULL;
    static const int sizes[10] = {8, 8, 8, 8, 8, 1, 8, 1, 8, 1};
    static const int writable[10] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    static const char *names[10] = {"lines", "line_ptr", "member_ptr", "members", "tasks", "contested", "order",
                                    "taken", "per_task", "is_taken"};
    Py_buffer views[10];
    int got = 0;
    PyObject *cut = NULL;
    for (; got < 10; got++) {
        int flags = PyBUF_C_CONTIGUOUS | (writable[got] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &views[got], flags) < 0) goto done;
        if (views[got].itemsize != sizes[got]) {
            PyBuffer_Release(&views[got]);
            PyErr_Format(PyExc_ValueError, "greedy: %s must hold %d-byte items", names[got], sizes[got]);
            goto done;
        }
    }
    const int64_t *lines = views[0].buf, *line_ptr = views[1].buf, *member_ptr = views[2].buf;
    const int64_t *members = views[3].buf, *tasks = views[4].buf, *order = views[6].buf;
    const uint8_t *contested = views[5].buf;
    uint8_t *taken = views[7].buf, *is_taken = views[9].buf;
    int64_t *per_task = views[8].buf;
    Py_ssize_t n = views[4].len / 8, n_members = views[3].len / 8, n_lines = views[0].len / 8;
    Py_ssize_t n_order = views[6].len / 8, n_taken = views[7].len, n_tasks = views[8].len / 8;
    /* every index read below, checked once */
    if (views[1].len / 8 != n_members + 1 || views[2].len / 8 != n + 1 || views[5].len != n || views[9].len != n
        || member_ptr[0] < 0 || member_ptr[n] > n_members || line_ptr[0] < 0 || line_ptr[n_members] > n_lines) {
        PyErr_SetString(PyExc_ValueError, "greedy: arrays of inconsistent sizes");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        if (member_ptr[k] > member_ptr[k + 1] || tasks[k] < 0 || tasks[k] >= n_tasks) {
            PyErr_SetString(PyExc_ValueError, "greedy: member_ptr not sorted or a task out of range");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n_members; i++)
        if (line_ptr[i] > line_ptr[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "greedy: line_ptr not sorted");
            goto done;
        }
    if (in_range(lines, line_ptr[0], line_ptr[n_members], n_taken, "greedy: a line id outside taken") < 0
        || in_range(order, 0, n_order, n, "greedy: order names a candidate out of range") < 0)
        goto done;
    cut = PyDict_New();
    if (cut == NULL) goto done;
    for (Py_ssize_t q = 0; q < n_order; q++) {
        int64_t k = order[q], t = tasks[k], lo = member_ptr[k], hi = member_ptr[k + 1];
        if (per_task[t] >= max_anchors) continue;
        if (contested[k] && any_taken(lines, line_ptr[lo], line_ptr[hi], taken)) {
            PyObject *kept = PyList_New(0), *units = PyList_New(0);
            int failed = kept == NULL || units == NULL;
            for (int64_t i = lo; i < hi && !failed; i++) {
                if (any_taken(lines, line_ptr[i], line_ptr[i + 1], taken)) continue;
                PyObject *position = PyLong_FromLongLong(i), *unit = PyLong_FromLongLong(members[i]);
                failed = position == NULL || unit == NULL || PyList_Append(kept, position) < 0
                         || PyList_Append(units, unit) < 0;
                Py_XDECREF(position);
                Py_XDECREF(unit);
            }
            double score = 0.0;
            if (!failed && PyList_GET_SIZE(kept) >= 2) {
                PyObject *value = PyObject_CallOneArg(rescored, units);
                score = value == NULL ? -1.0 : PyFloat_AsDouble(value);
                failed = value == NULL || (score == -1.0 && PyErr_Occurred());
                Py_XDECREF(value);
            }
            int keep = !failed && PyList_GET_SIZE(kept) >= 2 && !(score <= 0);
            if (keep) {
                PyObject *key = PyLong_FromLongLong(k);
                failed = key == NULL || PyDict_SetItem(cut, key, kept) < 0;
                Py_XDECREF(key);
            }
            Py_XDECREF(units);
            if (failed) {
                Py_XDECREF(kept);
                Py_CLEAR(cut);
                goto done;
            }
            if (!keep) {
                Py_DECREF(kept);
                continue;
            }
            for (Py_ssize_t p = 0; p < PyList_GET_SIZE(kept); p++) {
                int64_t i = PyLong_AsLongLong(PyList_GET_ITEM(kept, p));
                mark_taken(lines, line_ptr[i], line_ptr[i + 1], taken);
            }
            Py_DECREF(kept);
        } else {
            mark_taken(lines, line_ptr[lo], line_ptr[hi], taken);
        }
        per_task[t] += 1;
        is_taken[k] = 1;
    }
done:
    for (int v = 0; v < got; v++) PyBuffer_Release(&views[v]);
    return cut;
}


/* --- representative-centred clusters (credit/grouping.py: _representative_clusters' loop) ------ */

/* founders(order, ptr, neighbours, founder) -> None: visit the classes in `order`; an unassigned
   one takes its unassigned neighbours (neighbours[ptr[c] .. ptr[c + 1]]), setting founder[other] = c,
   and is assigned itself. order, ptr (n + 1), neighbours: int64; founder: int64 (n), writable,
   holding each class's own index on entry. */
static PyObject *founders(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer views[4];
    int got = 0;
    PyObject *result = NULL;
    uint8_t *assigned = NULL;
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(objs[got], &views[got], PyBUF_C_CONTIGUOUS | (got == 3 ? PyBUF_WRITABLE : 0)) < 0) goto done;
        if (views[got].itemsize != 8) {
            PyBuffer_Release(&views[got]);
            PyErr_SetString(PyExc_ValueError, "founders: arrays must be int64");
            goto done;
        }
    }
    const int64_t *order = views[0].buf, *ptr = views[1].buf, *neighbours = views[2].buf;
    int64_t *founder = views[3].buf;
    Py_ssize_t n = views[3].len / 8, n_order = views[0].len / 8, n_neighbours = views[2].len / 8;
    if (views[1].len / 8 != n + 1) {
        PyErr_SetString(PyExc_ValueError, "founders: ptr must have one more entry than founder");
        goto done;
    }
    for (Py_ssize_t c = 0; c < n; c++)
        if (ptr[c] < 0 || ptr[c] > ptr[c + 1] || ptr[c + 1] > n_neighbours) {
            PyErr_SetString(PyExc_ValueError, "founders: ptr not sorted inside neighbours");
            goto done;
        }
    if (in_range(neighbours, 0, n_neighbours, n, "founders: a neighbour out of range") < 0
        || in_range(order, 0, n_order, n, "founders: order names a class out of range") < 0)
        goto done;
    assigned = PyMem_Calloc(n > 0 ? n : 1, 1);
    if (assigned == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t q = 0; q < n_order; q++) {
        int64_t c = order[q];
        if (assigned[c]) continue;
        for (int64_t j = ptr[c]; j < ptr[c + 1]; j++) {
            int64_t other = neighbours[j];
            if (!assigned[other]) {
                assigned[other] = 1;
                founder[other] = c;
            }
        }
        assigned[c] = 1;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(assigned);
    for (int v = 0; v < got; v++) PyBuffer_Release(&views[v]);
    return result;
}

/* --- buffer formats ------------------------------------------------------------------------------ */

/* A buffer's format letter, past any byte-order mark. */
static const char *format_letters(const Py_buffer *v) {
    const char *f = v->format == NULL ? "B" : v->format;
    return *f == '@' || *f == '=' || *f == '<' || *f == '>' || *f == '!' ? f + 1 : f;
}

/* A buffer's items are int64 (format "q" or "l" of 8 bytes). */
static int int64_format(const Py_buffer *v) {
    const char *f = format_letters(v);
    return v->itemsize == 8 && (f[0] == 'q' || f[0] == 'l') && f[1] == '\0';
}

/* A buffer's items are float64. */
static int float64_format(const Py_buffer *v) {
    const char *f = format_letters(v);
    return v->itemsize == 8 && f[0] == 'd' && f[1] == '\0';
}

/* 1-D C-contiguous views of objs[0 .. n): writable where bit k of `writable` is set, float64
   where bit k of `floats` is, else int64. Returns how many were taken: n, or fewer (no error
   set) where an object is no such buffer; the caller releases those taken either way. */
static int typed_views(PyObject **objs, int n, unsigned writable, unsigned floats, Py_buffer *views) {
    for (int k = 0; k < n; k++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable >> k & 1 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[k], &views[k], flags) < 0) {
            PyErr_Clear();
            return k;
        }
        if (views[k].ndim != 1 || !(floats >> k & 1 ? float64_format(&views[k]) : int64_format(&views[k])))
            return k + 1;
    }
    return n;
}

/* --- the projected values added to the batch's token values (credit/didpo.py: _project's extra) -- */

/* add_windows(flat, row_start, n_read, index, values) -> True, or None

   flat: writable contiguous float64 (the batch's token values); row_start, n_read: int64, one per
   projected row (its first token in flat, the tokens read of it); index (T,) int64: each read
   token's number in its row, the rows' one after another; values (T,) float64. Adds values[j] to
   flat[row_start[r] + index[j]] for the j-th token read, row r's after row r - 1's: what numpy's
   flat[np.repeat(row_start, n_read) + index] += values does. None, with flat untouched, where the
   buffers are not of that form, a place falls outside flat or a row's numbers do not increase (a
   token twice, which numpy adds once): numpy then answers, or raises. */
static PyObject *add_windows(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4])) return NULL;
    Py_buffer views[5];
    PyObject *result = NULL;
    int got = typed_views(objs, 5, 1u, 1u | 1u << 4, views); /* flat (writable) and values: float64 */
    if (got < 5) goto refuse;
    double *flat = views[0].buf;
    const int64_t *row_start = views[1].buf, *n_read = views[2].buf, *index = views[3].buf;
    const double *values = views[4].buf;
    Py_ssize_t n_flat = views[0].len / 8, n_rows = views[1].len / 8, n = views[3].len / 8;
    if (views[2].len != views[1].len || views[4].len != views[3].len) goto refuse;
    Py_ssize_t j = 0;
    for (Py_ssize_t r = 0; r < n_rows; r++) { /* every place checked before any is written */
        if (n_read[r] < 0 || n_read[r] > n - j) goto refuse;
        for (int64_t m = 0; m < n_read[r]; m++, j++) {
            int64_t at = row_start[r] + index[j];
            if (index[j] < 0 || row_start[r] < 0 || at < 0 || at >= n_flat) goto refuse;
            if (m > 0 && index[j] <= index[j - 1]) goto refuse; /* a token twice: numpy adds once */
        }
    }
    if (j != n) goto refuse;
    j = 0;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        double *row = flat + row_start[r];
        for (int64_t m = 0; m < n_read[r]; m++, j++) row[index[j]] += values[j];
    }
    result = Py_NewRef(Py_True);
    goto done;
refuse:
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}


/* --- ranges (credit/_util.py: ranges) ------------------------------------------------------------ */

/* ranges(starts, ends) -> int64 bytearray, or None

   The concatenation of range(starts[k], ends[k]) for each k (empty where ends[k] <= starts[k]),
   as credit/_util.py `ranges` gives it with numpy; starts and ends: 1-D contiguous int64 buffers
   of one length. None for anything else (numpy then answers) or a total past 2**62 items. */
static PyObject *ranges(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    if (!PyArg_ParseTuple(args, "OO", &objs[0], &objs[1])) return NULL;
    Py_buffer views[2];
    PyObject *result = NULL;
    int got = typed_views(objs, 2, 0, 0, views);
    if (got < 2 || views[0].len != views[1].len) goto refuse;
    const int64_t *a = views[0].buf, *b = views[1].buf;
    Py_ssize_t n = views[0].len / 8;
    uint64_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (b[k] > a[k]) {
            uint64_t m = (uint64_t)b[k] - (uint64_t)a[k];
            if (m > ((uint64_t)1 << 62) || (total += m) > ((uint64_t)1 << 62)) goto refuse;
        }
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(8 * total));
    if (result == NULL) goto done;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(result);
    credit_huge_pages(out, 8 * (size_t)total);
    for (Py_ssize_t k = 0; k < n; k++)
        for (int64_t x = a[k]; x < b[k]; x++) *out++ = x;
    goto done;
refuse:
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}


/* --- sequences of strings numbered by their first appearance (credit/split.py: sequence_ids) -- */

/* Two exact strs equal (same kind, length and code units). */
static inline int same_str(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    if (n != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b)) return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
}

/* A str's hash from its code units, 8 bytes at a time (the strs are fresh: Python's own hash,
   SipHash over every byte and cached, would be computed for this alone). */
static inline uint64_t str_hash(PyObject *text) {
    size_t n = (size_t)PyUnicode_GET_LENGTH(text) * PyUnicode_KIND(text);
    const unsigned char *p = PyUnicode_DATA(text);
    uint64_t h = 0xCBF29CE484222325ULL ^ ((uint64_t)n << 2 | (uint64_t)PyUnicode_KIND(text));
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

/* sequence_ids(texts, at, ptr) -> int64 bytearray, or None

   texts: a list of exact strs; at: int64 indices into texts; ptr: int64 (n + 1,) non-decreasing
   pointers into at: sequence k is texts[at[ptr[k]]], ..., texts[at[ptr[k + 1] - 1]]. Returns each
   sequence's number, sequences numbered 0, 1, ... by first appearance and equal sequences (equal
   strs, in order) numbered alike: what a dict keyed by the tuples of strs gives. None where the
   input is not of that form (an index out of range, a text that is no exact str). */
static PyObject *sequence_ids(PyObject *self, PyObject *args) {
    PyObject *texts, *objs[2];
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &texts, &objs[0], &objs[1])) return NULL;
    Py_buffer views[2];
    PyObject *result = NULL, *out = NULL;
    int64_t *slots = NULL;
    uint64_t *hashes = NULL;
    int got = typed_views(objs, 2, 0, 0, views);
    if (got < 2) goto refuse;
    const int64_t *at = views[0].buf, *ptr = views[1].buf;
    Py_ssize_t n_at = views[0].len / 8, n = views[1].len / 8 - 1, n_texts = PyList_GET_SIZE(texts);
    if (n < 0 || ptr[0] < 0 || ptr[n] > n_at) goto refuse;
    for (Py_ssize_t k = 0; k < n; k++)
        if (ptr[k + 1] < ptr[k]) goto refuse;
    for (Py_ssize_t i = 0; i < n_at; i++)
        if (at[i] < 0 || at[i] >= n_texts || !PyUnicode_CheckExact(PyList_GET_ITEM(texts, at[i]))) goto refuse;
    out = PyByteArray_FromStringAndSize(NULL, 8 * n);
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2;
    slots = PyMem_Malloc(cap * sizeof(int64_t)); /* a sequence (its first k) per slot, -1: free */
    hashes = PyMem_Malloc(((size_t)n + 1) * sizeof(uint64_t));
    if (out == NULL || slots == NULL || hashes == NULL) {
        if (out != NULL) PyErr_NoMemory();
        goto done;
    }
    int64_t *ids = (int64_t *)PyByteArray_AS_STRING(out), n_ids = 0;
    for (size_t j = 0; j < cap; j++) slots[j] = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(ptr[k + 1] - ptr[k]);
        for (int64_t i = ptr[k]; i < ptr[k + 1]; i++) {
            h = (h ^ str_hash(PyList_GET_ITEM(texts, at[i]))) * 0x100000001B3ULL;
            h ^= h >> 29;
        }
        hashes[k] = h;
        size_t j = (size_t)h & (cap - 1);
        for (;; j = (j + 1) & (cap - 1)) {
            int64_t o = slots[j];
            if (o < 0) {
                slots[j] = k;
                ids[k] = n_ids++;
                break;
            }
            if (hashes[o] != h || ptr[o + 1] - ptr[o] != ptr[k + 1] - ptr[k]) continue;
            int64_t m = ptr[k + 1] - ptr[k], i = 0;
            while (i < m && same_str(PyList_GET_ITEM(texts, at[ptr[o] + i]), PyList_GET_ITEM(texts, at[ptr[k] + i]))) i++;
            if (i == m) {
                ids[k] = ids[o];
                break;
            }
        }
    }
    result = out;
    out = NULL;
    goto done;
refuse:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(slots);
    PyMem_Free(hashes);
    Py_XDECREF(out);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}


static PyMethodDef methods[] = {
    CREDIT_LAST_PARTS_METHOD,
    {"add_windows", add_windows, METH_VARARGS,
     "add_windows(flat, row_start, n_read, index, values) -> True or None: flat[row_start[r] + index[j]] += "
     "values[j] for the tokens read of each row (None, flat untouched, where a place falls outside flat)."},
    {"ranges", ranges, METH_VARARGS,
     "ranges(starts, ends) -> int64 bytearray or None: range(starts[k], ends[k]) for each k, concatenated "
     "(None unless both are 1-D contiguous int64 of one length)."},
    {"sequence_ids", sequence_ids, METH_VARARGS,
     "sequence_ids(texts, at, ptr) -> int64 bytearray or None: sequences of strs texts[at[ptr[k]:ptr[k + 1]]] "
     "numbered by first appearance, equal ones alike (None where the input is not of that form)."},
    {"read_pairs", read_pairs, METH_VARARGS,
     "read_pairs(steps, bounds, out[, lengths]) -> indices of the steps not read (with lengths: and of those "
     "read whose pairs do not plainly pass the offset checks): each step's (start, end) pairs into "
     "out[2 * bounds[k]:2 * bounds[k + 1]] as int64."},
    {"read_windows", read_windows, METH_VARARGS,
     "read_windows(steps, first, last, span_a, span_b, lengths, n_read) -> (pairs, index): the tokens of each "
     "step's windows around its spans (credit/offsets.py _windows), read and checked; n_read[k] = -1 for a step "
     "left to the caller."},
    {"search_blocks", search_blocks, METH_VARARGS,
     "search_blocks(actions, joined, lo, hi, step, kind, c0, c1, w0, w1, at, kept, pos, escape) -> (recounted, "
     "alone): credit/project.py's block search (_search_blocks) whole: the blocks' positions and escapes into pos "
     "and escape; {block: (sizes, kept sizes)} where more than line breaks were escaped; the lines found alone, "
     "(line, start, end)."},
    {"joined_lines", joined_lines, METH_VARARGS,
     "joined_lines(texts, line, skip) -> (joined, start, size, kept, escaped_at) or None: texts[line[i]][skip:] "
     "joined by line breaks, with each line's start, length and length without trailing whitespace, and where "
     "JSON escapes a character (credit/project.py _joined_lines); None for Python's loop to do it."},
    {"join_gaps", join_gaps, METH_VARARGS,
     "join_gaps(actions, step, end, start, out) -> bool: whether each pair of lines joins (credit/project.py "
     "_joins) into out; False, with nothing written, for Python to decide them."},
    {"project_flat", project_flat, METH_VARARGS,
     "project_flat(tokens, n_tokens, spans, span_step, values, by_rank, value, covered) -> None: each real token's "
     "value of the highest-ranked span covering it (credit/project.py project_flat), into value and covered."},
    {"greedy", greedy, METH_VARARGS,
     "greedy(lines, line_ptr, member_ptr, members, tasks, contested, order, max_anchors, taken, per_task, is_taken, "
     "rescored) -> {candidate: kept member positions}: the greedy anchor pass of credit/anchors.py."},
    {"founders", founders, METH_VARARGS,
     "founders(order, ptr, neighbours, founder) -> None: the founding loop of credit/grouping.py's clusters."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
