/* credit._native: reads token offsets given as Python lists of (start, end) pairs into int64, and
runs the first search of each block of changed lines in the action texts (credit/project.py).

numpy reads a list of 2-item lists at about 70 ns a pair however it is asked (np.array, np.fromiter
over a chain: it goes through the generic sequence and number protocols for every item); the
shared harness's paper batch holds 658k such pairs, 42 ms of a 140 ms credit.didpo call. Here each
item is read with the list and int macros: about 14 ns a pair (docs/benchmarks.md, "credit",
seventh round). The block search is the same loop as the Python one in credit/project.py
(`_search_blocks`' first try, `_find`, `_at_line_start`, `_at_line_end`), without the interpreter's
cost per block. Optional: credit falls back to numpy and Python when this is not built.
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
   Stops at the first block not found (its index, pos[b] = -1, the cursors as its search saw them),
   or at the end (the blocks' count). */
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
        Py_DECREF(text);
        if (found == -2) { Py_DECREF(key); goto done; }
        pos[b] = found;
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

static PyMethodDef methods[] = {
    {"read_pairs", read_pairs, METH_VARARGS,
     "read_pairs(steps, bounds, out[, lengths]) -> indices of the steps not read (with lengths: and of those "
     "read whose pairs do not plainly pass the offset checks): each step's (start, end) pairs into "
     "out[2 * bounds[k]:2 * bounds[k + 1]] as int64."},
    {"first_tries", first_tries, METH_VARARGS,
     "first_tries(actions, joined, step, kind, c0, c1, w0, w1, begin, current, cursors, pos) -> (stop, current): "
     "the first search of blocks begin.. as written (credit/project.py), up to the first not found."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
