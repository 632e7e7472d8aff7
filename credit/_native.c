/* credit._native: reads token offsets given as Python lists of (start, end) pairs into int64 (whole,
or in the windows around character spans that credit/offsets.py finds), and runs the first search
of each block of changed lines in the action texts (credit/project.py).

numpy reads a list of 2-item lists at about 70 ns a pair however it is asked (np.array, np.fromiter
over a chain: it goes through the generic sequence and number protocols for every item); the
shared harness's paper batch holds 658k such pairs, 42 ms of a 140 ms credit.didpo call. Here each
item is read with the list and int macros: about 14 ns a pair (docs/benchmarks.md, "credit",
seventh round). The block search is the same loop as the Python one in credit/project.py
(`_search_blocks`' first try, `_find`, `_at_line_start`, `_at_line_end`), without the interpreter's
cost per block. The greedy anchor pass (credit/anchors.py) and the clusters' founding loop
(credit/grouping.py) are those modules' Python loops over int lists, here over the arrays: at the
harness's large shape 101 -> 30 ms and 54 -> 7 ms. Optional: credit falls back to numpy and Python
when this is not built, with the same results (tests/credit/test_credit_*_native.py compare them).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

/* The items of a list or tuple of two items (exactly of type `type`, when given), else NULL. */
static inline PyObject **pair_items(PyObject *pair, PyTypeObject *type) {
    if (type != NULL ? Py_TYPE(pair) != type : !(PyList_CheckExact(pair) || PyTuple_CheckExact(pair))) return NULL;
    return Py_SIZE(pair) == 2 ? PySequence_Fast_ITEMS(pair) : NULL;
}

/* A pair's two items as int64: 0, or -1 when they are not exact ints that fit. */
static inline int pair_ints(PyObject **items, int64_t *start, int64_t *end) {
    if (!PyLong_CheckExact(items[0]) || !PyLong_CheckExact(items[1])) return -1;
    return int_value(items[0], start) < 0 || int_value(items[1], end) < 0 ? -1 : 0;
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

/* Every step's windows into win (step k's at win + 2 * first[k]), their count into n_win[k]
   (-1: left to the caller). */
static void find_windows(PyObject *steps, const int64_t *first, const int64_t *last, const int64_t *span_a,
                         const int64_t *span_b, int64_t *win, int64_t *n_win) {
    Search lanes[LANES];
    Py_ssize_t n_steps = PyList_GET_SIZE(steps), next = 0;
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

/* read_windows(steps, first, last, span_a, span_b, lengths, n_read) -> (pairs, index) bytearrays

   steps: a list of lists or tuples of pairs; first, last: int64 (len(steps)): step k's joined
   spans are span_a[first[k]:last[k]], span_b[...] (int64, as credit/offsets.py `_joined_spans`
   gives them: sorted, apart); lengths: int64 action lengths; n_read: writable int64 (len(steps)).
   Each step's windows (`_windows`) are read and checked (`_read_windows`): n_read[k] is the count
   of tokens read, the steps' one after another in pairs (int64 start, end each) and index (int64
   token numbers); -1 for a step left to the caller (no list or tuple, `_windows` gives None, an
   entry that is no pair of ints, a failed check). */
static PyObject *read_windows(PyObject *self, PyObject *args) {
    PyObject *steps, *objs[6];
    if (!PyArg_ParseTuple(args, "O!OOOOOO", &PyList_Type, &steps, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5]))
        return NULL;
    Py_ssize_t n_steps = PyList_GET_SIZE(steps);
    Py_buffer views[6];
    int got = 0;
    int64_t *win = NULL, *n_win = NULL;
    PyObject **refs = NULL;
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
    const int64_t *first = views[0].buf, *last = views[1].buf, *span_a = views[2].buf, *span_b = views[3].buf,
                  *lengths = views[4].buf;
    int64_t *n_read = views[5].buf;
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        if (first[k] < 0 || last[k] < first[k] || last[k] > n_spans) {
            PyErr_SetString(PyExc_ValueError, "read_windows: a step's spans lie outside span_a");
            goto done;
        }
    }
    win = PyMem_Malloc(sizeof(int64_t) * (2 * (size_t)n_spans + 1));
    n_win = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_steps + 1));
    if (win == NULL || n_win == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    find_windows(steps, first, last, span_a, span_b, win, n_win);
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < n_steps; k++)
        for (int64_t w = 0; w < n_win[k]; w++) total += win[2 * (first[k] + w) + 1] - win[2 * (first[k] + w)];
    pairs_obj = PyByteArray_FromStringAndSize(NULL, 16 * total);
    index_obj = PyByteArray_FromStringAndSize(NULL, 8 * total);
    refs = PyMem_Malloc(sizeof(PyObject *) * ((size_t)total + 1));
    if (pairs_obj == NULL || index_obj == NULL || refs == NULL) {
        if (refs == NULL) PyErr_NoMemory();
        goto done;
    }
    int64_t *pairs = (int64_t *)PyByteArray_AS_STRING(pairs_obj), *index = (int64_t *)PyByteArray_AS_STRING(index_obj);
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < n_steps; k++) { /* the windows' tokens, in order */
        PyObject *step = PyList_GET_ITEM(steps, k);
        const int64_t *at = win + 2 * first[k];
        if (n_win[k] > 0 && at[2 * n_win[k] - 1] > PySequence_Fast_GET_SIZE(step)) n_win[k] = -1; /* changed since */
        for (int64_t w = 0; w < n_win[k]; w++) {
            PyObject **items = PySequence_Fast_ITEMS(step);
            for (int64_t t = at[2 * w]; t < at[2 * w + 1]; t++, m++) {
                refs[m] = items[t];
                index[m] = t;
            }
        }
    }
    total = m;
    Py_ssize_t kept = 0;
    m = 0;
    for (Py_ssize_t k = 0; k < n_steps; k++) { /* read and checked; a step that fails is left out */
        n_read[k] = -1;
        if (n_win[k] < 0) continue;
        Py_ssize_t size = 0;
        for (int64_t w = 0; w < n_win[k]; w++) size += win[2 * (first[k] + w) + 1] - win[2 * (first[k] + w)];
        if (read_tokens(refs + m, size, total - m, lengths[k], pairs + 2 * kept) == 0) {
            if (kept < m) memmove(index + kept, index + m, sizeof(int64_t) * size);
            n_read[k] = size;
            kept += size;
        }
        m += size;
    }
    if (kept < total && (PyByteArray_Resize(pairs_obj, 16 * kept) < 0 || PyByteArray_Resize(index_obj, 8 * kept) < 0))
        goto done;
    result = PyTuple_Pack(2, pairs_obj, index_obj);
done:
    PyMem_Free(win);
    PyMem_Free(n_win);
    PyMem_Free(refs);
    Py_XDECREF(pairs_obj);
    Py_XDECREF(index_obj);
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    return result;
}


/* --- the block search (credit/project.py: _find, _at_line_start, _at_line_end) --------------- */

#define HEAD 48 /* characters of a long text found by str.find before comparing the rest */

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

/* The first position >= start where text stands in action whole before end, between line
   boundaries; -1 if none, -2 on an error. */
static Py_ssize_t find_line_text(PyObject *action, PyObject *text, Py_ssize_t start, Py_ssize_t end) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(action), m = PyUnicode_GET_LENGTH(text);
    if (end > n) end = n;
    if (start > end) return -1;
    PyObject *head = m > HEAD ? PyUnicode_Substring(text, 0, HEAD) : (Py_INCREF(text), text);
    if (head == NULL) return -2;
    int kind = PyUnicode_KIND(action);
    const void *data = PyUnicode_DATA(action);
    Py_ssize_t pos = PyUnicode_Find(action, head, start, end, 1);
    while (pos >= 0) {
        if (pos + m <= end) {
            int whole = m <= HEAD ? 1 : PyUnicode_Tailmatch(action, text, pos, pos + m, -1);
            if (whole < 0) { pos = -2; break; }
            if (whole && at_line_start(kind, data, pos) && at_line_end(kind, data, n, pos + m)) break;
        }
        if (pos + 1 > end) { pos = -1; break; }
        pos = PyUnicode_Find(action, head, pos + 1, end, 1);
    }
    Py_DECREF(head);
    return pos;
}

/* Whether joined[c0:c1] is one line that credit/project.py `_forms` gives in its written form
   alone: ASCII, no line break or other control character, nothing that a JSON escape (with or
   without ASCII escapes, HTML-safe, with / escaped) writes another way. */
static int one_form(PyObject *joined, Py_ssize_t c0, Py_ssize_t c1) {
    int kind = PyUnicode_KIND(joined);
    const void *data = PyUnicode_DATA(joined);
    for (Py_ssize_t k = c0; k < c1; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c == '\'' || c == '/')
            return 0;
    }
    return c1 > c0;
}

static int int64_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != 8 || view->len / 8 != n) {
        PyErr_Format(PyExc_ValueError, "first_tries: %s must be int64 of the blocks' count", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* first_tries(actions, joined, step, kind, c0, c1, w0, w1, begin, current, cursors, pos) -> stop

   Blocks begin, begin + 1, ... (int64 buffers of one length: step, kind, c0, c1, w0, w1 with w1 < 0
   for the action's end; pos is written): block b's text joined[c0[b]:c1[b]] is searched in
   actions[step[b]] from max(cursor of its kind, w0[b]) to w1[b], as written. Found: pos[b] is where,
   and the cursor of its kind moves past it. A new step starts with no cursors (`cursors`, a dict
   kind -> cursor, holds the step `current`'s, and is cleared in place when the step changes).
   A block not found that has no other form to look for (one_form), and is no window's indented
   line, gets the rest of credit/project.py's searches here (its text from its window's start, when
   the cursor was past it), since there is no other: found, as above; else pos[b] = -1 and on.
   Stops at the first other block not found (its index, pos[b] = -1, the cursors as its search saw
   them), or at the end (the blocks' count). */
static PyObject *first_tries(PyObject *self, PyObject *args) {
    PyObject *actions, *joined, *objs[7], *cursors;
    Py_ssize_t begin, current;
    if (!PyArg_ParseTuple(args, "O!UOOOOOOnnO!O", &PyList_Type, &actions, &joined, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &begin, &current, &PyDict_Type, &cursors, &objs[6]))
        return NULL;
    Py_buffer views[7];
    Py_ssize_t n = PyObject_Length(objs[0]);
    if (n < 0) return NULL;
    const char *names[7] = {"step", "kind", "c0", "c1", "w0", "w1", "pos"};
    int got = 0;
    for (; got < 7; got++)
        if (int64_buffer(objs[got], &views[got], n, got == 6, names[got]) < 0) break;
    Py_ssize_t stop = -1;
    if (got < 7) goto done;
    const int64_t *step = views[0].buf, *kind = views[1].buf, *c0 = views[2].buf, *c1 = views[3].buf,
                  *w0 = views[4].buf, *w1 = views[5].buf;
    int64_t *pos = views[6].buf;
    Py_ssize_t n_actions = PyList_GET_SIZE(actions), n_joined = PyUnicode_GET_LENGTH(joined);
    for (Py_ssize_t b = begin < 0 ? 0 : begin; b < n; b++) {
        if (step[b] < 0 || step[b] >= n_actions || c0[b] < 0 || c1[b] < c0[b] || c1[b] > n_joined) {
            PyErr_SetString(PyExc_ValueError, "first_tries: a block's step or text bounds are out of range");
            goto done;
        }
        PyObject *action = PyList_GET_ITEM(actions, step[b]);
        if (!PyUnicode_Check(action)) {
            PyErr_SetString(PyExc_TypeError, "first_tries: actions must be str");
            goto done;
        }
        if (step[b] != current) {
            PyDict_Clear(cursors);
            current = step[b];
        }
        PyObject *key = PyLong_FromLongLong(kind[b]);
        if (key == NULL) goto done;
        PyObject *at = PyDict_GetItemWithError(cursors, key); /* borrowed */
        Py_ssize_t cursor = 0;
        if (at != NULL) {
            cursor = PyLong_AsSsize_t(at);
            if (cursor == -1 && PyErr_Occurred()) { Py_DECREF(key); goto done; }
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            goto done;
        }
        Py_ssize_t start = cursor > w0[b] ? cursor : (Py_ssize_t)w0[b];
        Py_ssize_t end = w1[b] < 0 ? PyUnicode_GET_LENGTH(action) : (Py_ssize_t)w1[b];
        PyObject *text = PyUnicode_Substring(joined, c0[b], c1[b]);
        if (text == NULL) { Py_DECREF(key); goto done; }
        Py_ssize_t found = find_line_text(action, text, start, end);
        int alone = found == -1 && one_form(joined, c0[b], c1[b]);
        if (alone && cursor > w0[b]) found = find_line_text(action, text, w0[b], end); /* then from the start */
        Py_DECREF(text);
        if (found == -2) { Py_DECREF(key); goto done; }
        pos[b] = found;
        /* not found in its only form: the rest of the searches (credit/project.py `rest`) has nothing
           to try, but for a window's indented line without its indentation */
        if (found < 0 && alone && !(w1[b] >= 0 && (w0[b] > 0 || w1[b] < PyUnicode_GET_LENGTH(action))
                                    && PyUnicode_READ_CHAR(joined, c0[b]) == ' ')) {
            Py_DECREF(key);
            continue;
        }
        if (found < 0) {
            Py_DECREF(key);
            stop = b;
            break;
        }
        PyObject *moved = PyLong_FromSsize_t(found + (c1[b] - c0[b]));
        int bad = moved == NULL || PyDict_SetItem(cursors, key, moved) < 0;
        Py_XDECREF(moved);
        Py_DECREF(key);
        if (bad) goto done;
    }
    if (stop < 0) stop = n;
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("nn", stop, current);
}

/* --- the greedy anchor pass (credit/anchors.py: _greedy's loop over candidates) ---------------- */

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
    for (Py_ssize_t j = line_ptr[0]; j < line_ptr[n_members]; j++)
        if (lines[j] < 0 || lines[j] >= n_taken) {
            PyErr_SetString(PyExc_ValueError, "greedy: a line id outside taken");
            goto done;
        }
    for (Py_ssize_t q = 0; q < n_order; q++)
        if (order[q] < 0 || order[q] >= n) {
            PyErr_SetString(PyExc_ValueError, "greedy: order names a candidate out of range");
            goto done;
        }
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
    for (Py_ssize_t j = 0; j < n_neighbours; j++)
        if (neighbours[j] < 0 || neighbours[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "founders: a neighbour out of range");
            goto done;
        }
    for (Py_ssize_t q = 0; q < n_order; q++)
        if (order[q] < 0 || order[q] >= n) {
            PyErr_SetString(PyExc_ValueError, "founders: order names a class out of range");
            goto done;
        }
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

static PyMethodDef methods[] = {
    {"read_pairs", read_pairs, METH_VARARGS,
     "read_pairs(steps, bounds, out[, lengths]) -> indices of the steps not read (with lengths: and of those "
     "read whose pairs do not plainly pass the offset checks): each step's (start, end) pairs into "
     "out[2 * bounds[k]:2 * bounds[k + 1]] as int64."},
    {"read_windows", read_windows, METH_VARARGS,
     "read_windows(steps, first, last, span_a, span_b, lengths, n_read) -> (pairs, index): the tokens of each "
     "step's windows around its spans (credit/offsets.py _windows), read and checked; n_read[k] = -1 for a step "
     "left to the caller."},
    {"first_tries", first_tries, METH_VARARGS,
     "first_tries(actions, joined, step, kind, c0, c1, w0, w1, begin, current, cursors, pos) -> (stop, current): "
     "the first search of blocks begin.. as written (credit/project.py), up to the first not found that has "
     "other searches to try."},
    {"greedy", greedy, METH_VARARGS,
     "greedy(lines, line_ptr, member_ptr, members, tasks, contested, order, max_anchors, taken, per_task, is_taken, "
     "rescored) -> {candidate: kept member positions}: the greedy anchor pass of credit/anchors.py."},
    {"founders", founders, METH_VARARGS,
     "founders(order, ptr, neighbours, founder) -> None: the founding loop of credit/grouping.py's clusters."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
