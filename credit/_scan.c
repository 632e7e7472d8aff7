/* credit._scan: credit.split._scan in C, each diff's lines read once, in order.

The numpy version (credit/split.py, `_scan_numpy`) classifies every line of a chunk of diffs in
whole-chunk passes (first bytes, running counts, a searchsorted per hunk, a regex per hunk header,
a dozen gathers for the body): about 5 ms on the benchmark's paper batch (973 diffs) and 75 ms on
its large batch (13.8k diffs in 7 chunks). This reads each diff's lines once into running counts,
reads its hunk headers as `_HUNK_HEADER` does, finds each body's end by a galloping search on the
counts, and writes the body lines of the diffs it recognises straight into the output arrays; the
strings are made by the calls the numpy version makes (str.join, str.split, str.encode with
surrogatepass): 1.6 and 21 ms, of which the lines of `source` (str.split, one str a line) take
0.8 and 13. It gives exactly the same `_Body` and the same diffs left to unidiff, including what
the numpy passes do that is not obvious (tests/credit/test_credit_scan_native.py holds both
versions equal on the benchmark's diffs, git and difflib diffs, and thousands of mutated ones):

- a header is a line that starts with "@@" and reads as `@@ -a[,b] +c[,d] @@` (counts 1 when left
  out; ASCII digits, at most 18 of them); other "@@" lines make their diff unrecognised, and are not
  counted as hunks, but every header that reads takes a hunk id, in recognised diffs or not;
- a hunk's body ends at the first line where the body's weight (2 for context, empty lines
  included, 1 for "-" and "+", 0 for "\" and anything else) reaches b + d, or at the diff's end;
  it must reach it exactly, with b old lines and no line of another kind;
- a hunk right after the previous one's body continues its file; any other opens a file, whose
  path (`_file_path`, called back) is read from the two lines above, which must be in the diff
  and not in the previous body (a file without a path makes the diff unrecognised); a header
  inside the previous body makes the diff unrecognised;
- "\" lines are skipped from the body; a body line's `start` is one past its marker (so an empty
  line's start is one past its end).

Input that is not a list (or tuple) of exact str is not read: the function returns None and
credit.split runs numpy, as it does for a chunk without any non-blank diff. Optional:
credit.split falls back to numpy when this is not built.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ADDED 1
#define DELETED (-1)
#define MAX_DIGITS 18 /* _HUNK_HEADER's numbers fit int64 */

/* per-diff scratch: each line's start, and running counts before each line (n + 1 entries) */
typedef struct {
    int64_t *start, *both, *olds, *odds;
    int64_t cap;
} Lines;

typedef struct { /* a hunk header that reads (line indices local to the diff) */
    int64_t h, e, old_start, old_count, new_start, new_count, id, prev_end;
    int opens, follows; /* follows: a header that reads came before it in the diff */
} Hunk;

typedef struct {
    Hunk *at;
    int64_t n, cap;
} Hunks;

typedef struct { /* the output arrays, as bytearrays of `cap` entries until trimmed */
    PyObject *arrays[8];
    int64_t *diff, *file, *hunk, *number, *at, *start, *end;
    int8_t *type;
    int64_t n, cap;
} Out;

static const size_t SIZES[8] = {8, 8, 8, 1, 8, 8, 8, 8}; /* diff file hunk type number at start end */

static int grow_lines(Lines *s, int64_t need) {
    if (need <= s->cap) return 0;
    int64_t cap = s->cap ? s->cap : 1024;
    while (cap < need) cap *= 2;
    int64_t **arrays[4] = {&s->start, &s->both, &s->olds, &s->odds};
    for (int k = 0; k < 4; k++) {
        int64_t *grown = realloc(*arrays[k], (size_t)cap * sizeof(int64_t));
        if (grown == NULL) return -1;
        *arrays[k] = grown;
    }
    s->cap = cap;
    return 0;
}

static Hunk *new_hunk(Hunks *hs) {
    if (hs->n == hs->cap) {
        int64_t cap = hs->cap ? hs->cap * 2 : 64;
        Hunk *grown = realloc(hs->at, (size_t)cap * sizeof(Hunk));
        if (grown == NULL) return NULL;
        hs->at = grown;
        hs->cap = cap;
    }
    return &hs->at[hs->n++];
}

/* 1 to 18 ASCII digits at p[*i] (the regex's [0-9]{1,18}, which must end before a non-digit) */
static int read_number(const uint8_t *p, int64_t *i, int64_t end, int64_t *value) {
    int64_t k = *i, v = 0;
    while (k < end && p[k] >= '0' && p[k] <= '9') {
        if (k - *i == MAX_DIGITS) return 0;
        v = v * 10 + (p[k] - '0');
        k++;
    }
    if (k == *i) return 0;
    *i = k;
    *value = v;
    return 1;
}

/* `_HUNK_HEADER.match` of the line p[i:end]: start, count, start, count (counts 1 when left out) */
static int read_header(const uint8_t *p, int64_t i, int64_t end, int64_t out[4]) {
    if (end - i < 4 || memcmp(p + i, "@@ -", 4) != 0) return 0;
    i += 4;
    for (int side = 0; side < 2; side++) {
        if (!read_number(p, &i, end, &out[2 * side])) return 0;
        out[2 * side + 1] = 1;
        if (i < end && p[i] == ',') {
            i++;
            if (!read_number(p, &i, end, &out[2 * side + 1])) return 0;
        }
        const char *next = side == 0 ? " +" : " @@";
        int64_t size = side == 0 ? 2 : 3;
        if (end - i < size || memcmp(p + i, next, (size_t)size) != 0) return 0;
        i += size;
    }
    return 1;
}

/* the first i in [lo, n] with both[i] >= target, else n (a galloping search: bodies are short) */
static int64_t body_end(const int64_t *both, int64_t lo, int64_t n, int64_t target) {
    if (both[lo] >= target) return lo;
    int64_t step = 1, hi;
    for (;;) { /* both[lo] < target */
        if (n - lo <= step) {
            if (both[n] < target) return n;
            hi = n;
            break;
        }
        if (both[lo + step] >= target) {
            hi = lo + step;
            break;
        }
        lo += step;
        step *= 2;
    }
    while (hi - lo > 1) { /* both[lo] < target <= both[hi] */
        int64_t mid = lo + (hi - lo) / 2;
        if (both[mid] >= target)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* One diff: its n lines from byte p0 (each ends with a line break), global line base g. Reads
   the lines into s, the headers into hs; returns 1 when the diff is recognised, 0 when not, -1
   on error. Every header that reads takes the next hunk id from *hunk_id. */
static int read_diff(const uint8_t *buf, int64_t p0, int64_t p1, Lines *s, Hunks *hs, int64_t *hunk_id,
                     int64_t *n_lines) {
    int64_t n = 0, both = 0, olds = 0, odds = 0;
    int ok = 1;
    hs->n = 0;
    if (grow_lines(s, 1) < 0) return -1;
    for (int64_t p = p0; p < p1; n++) {
        const uint8_t *nl = memchr(buf + p, '\n', (size_t)(p1 - p));
        if (nl == NULL) return -1; /* every diff ends with a line break: checked by the caller */
        if (grow_lines(s, n + 2) < 0) return -1;
        uint8_t first = buf[p];
        int old = first == ' ' || first == '-' || first == '\n';
        int new = first == ' ' || first == '+' || first == '\n';
        s->start[n] = p;
        s->both[n] = both;
        s->olds[n] = olds;
        s->odds[n] = odds;
        both += old + new;
        olds += old;
        odds += !(old || new || first == '\\');
        if (first == '@' && buf[p + 1] == '@') { /* p + 1 <= the line break */
            int64_t fields[4];
            if (!read_header(buf, p, nl - buf, fields)) {
                ok = 0;
            } else {
                Hunk *k = new_hunk(hs);
                if (k == NULL) return -1;
                *k = (Hunk){.h = n, .old_start = fields[0], .old_count = fields[1], .new_start = fields[2],
                            .new_count = fields[3], .id = (*hunk_id)++};
            }
        }
        p = nl - buf + 1;
    }
    s->start[n] = p1;
    s->both[n] = both;
    s->olds[n] = olds;
    s->odds[n] = odds;
    *n_lines = n;
    if (hs->n == 0) return 0;
    for (int64_t j = 0; j < hs->n; j++) {
        Hunk *k = &hs->at[j];
        int64_t b0 = k->h + 1, target = s->both[b0] + k->old_count + k->new_count;
        k->e = body_end(s->both, b0, n, target);
        ok &= s->both[k->e] == target && s->olds[k->e] - s->olds[b0] == k->old_count && s->odds[k->e] == s->odds[b0];
        k->follows = j > 0;
        k->prev_end = j > 0 ? hs->at[j - 1].e : -1;
        k->opens = !(k->follows && k->prev_end == k->h);
        if (k->follows && k->prev_end > k->h) ok = 0;
    }
    return ok;
}

/* the file paths of a recognised diff's files, appended to paths; 0 when one has none (the
   diff is then not recognised and paths is as before), -1 on error */
static int read_paths(PyObject *lines, int64_t g, const Hunks *hs, PyObject *file_path, PyObject *paths) {
    Py_ssize_t before = PyList_GET_SIZE(paths);
    for (int64_t j = 0; j < hs->n; j++) {
        const Hunk *k = &hs->at[j];
        if (!k->opens) continue;
        int64_t h = k->h;
        int found = 0;
        if (h >= 2 && (!k->follows || k->prev_end <= h - 2)) {
            PyObject *path = PyObject_CallFunctionObjArgs(file_path, PyList_GET_ITEM(lines, g + h - 2),
                                                          PyList_GET_ITEM(lines, g + h - 1), NULL);
            if (path == NULL) return -1;
            found = path != Py_None;
            int failed = found && PyList_Append(paths, path) < 0;
            Py_DECREF(path);
            if (failed) return -1;
        }
        if (!found) return PyList_SetSlice(paths, before, PY_SSIZE_T_MAX, NULL) < 0 ? -1 : 0;
    }
    return 1;
}

/* a recognised diff's body lines, "\" lines left out */
static int write_body(Out *o, const uint8_t *buf, const Lines *s, const Hunks *hs, int64_t d, int64_t g,
                      int64_t file) {
    for (int64_t j = 0; j < hs->n; j++) {
        const Hunk *k = &hs->at[j];
        file += k->opens;
        int64_t b0 = k->h + 1, olds0 = s->olds[b0], news0 = s->both[b0] - olds0;
        if (o->n + (k->e - b0) > o->cap) return -1; /* bodies of a recognised diff do not overlap */
        for (int64_t i = b0; i < k->e; i++) {
            uint8_t first = buf[s->start[i]];
            if (first == '\\') continue;
            int8_t type = first == '+' ? ADDED : first == '-' ? DELETED : 0;
            int64_t r = o->n++;
            o->diff[r] = d;
            o->file[r] = file;
            o->hunk[r] = k->id;
            o->type[r] = type;
            o->number[r] = type == DELETED ? k->old_start + s->olds[i] - olds0
                                           : k->new_start + (s->both[i] - s->olds[i]) - news0;
            o->at[r] = g + i;
            o->start[r] = s->start[i] + 1;
            o->end[r] = s->start[i + 1] - 1;
        }
    }
    return 0;
}

/* the non-blank diffs (as `text.strip()`), each with a line break at its end, joined; their
   indices and UTF-8 sizes (lone surrogates as surrogatepass writes them) into todo and sizes */
static PyObject *join_diffs(PyObject *const *items, Py_ssize_t n_items, int64_t *todo, int64_t *sizes,
                            Py_ssize_t *n_todo) {
    Py_ssize_t m = 0, total = 0;
    Py_UCS4 maxchar = 0;
    for (Py_ssize_t d = 0; d < n_items; d++) {
        PyObject *text = items[d];
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t i = 0;
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i == n) continue;
        int64_t size = n;
        if (!PyUnicode_IS_ASCII(text)) {
            size = 0;
            for (i = 0; i < n; i++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, i);
                size += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            }
        }
        int newline = PyUnicode_READ(kind, data, n - 1) == '\n';
        todo[m] = d;
        sizes[m++] = size + !newline;
        total += n + !newline;
        Py_UCS4 top = PyUnicode_MAX_CHAR_VALUE(text);
        if (top > maxchar) maxchar = top;
    }
    *n_todo = m;
    if (m == 0) return NULL;
    PyObject *joined = PyUnicode_New(total, maxchar);
    if (joined == NULL) return NULL;
    int kind = PyUnicode_KIND(joined);
    void *data = PyUnicode_DATA(joined);
    Py_ssize_t at = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *text = items[todo[j]];
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        if (PyUnicode_CopyCharacters(joined, at, text, 0, n) < 0) {
            Py_DECREF(joined);
            return NULL;
        }
        at += n;
        if (PyUnicode_READ_CHAR(text, n - 1) != '\n') PyUnicode_WRITE(kind, data, at++, '\n');
    }
    return joined;
}

static int new_out(Out *o, int64_t cap) {
    o->n = 0;
    o->cap = cap;
    for (int k = 0; k < 8; k++) {
        o->arrays[k] = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(cap * (int64_t)SIZES[k]));
        if (o->arrays[k] == NULL) return -1;
    }
    int64_t **wide[7] = {&o->diff, &o->file, &o->hunk, &o->number, &o->at, &o->start, &o->end};
    const int which[7] = {0, 1, 2, 4, 5, 6, 7};
    for (int k = 0; k < 7; k++) *wide[k] = (int64_t *)PyByteArray_AS_STRING(o->arrays[which[k]]);
    o->type = (int8_t *)PyByteArray_AS_STRING(o->arrays[3]);
    return 0;
}

/* scan(diffs, file_path) */
static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *diffs, *file_path;
    if (!PyArg_ParseTuple(args, "OO:scan", &diffs, &file_path)) return NULL;
    if (!PyList_CheckExact(diffs) && !PyTuple_CheckExact(diffs)) Py_RETURN_NONE;
    PyObject *seq = PySequence_Fast(diffs, "diffs");
    if (seq == NULL) return NULL;
    Py_ssize_t n_items = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t d = 0; d < n_items; d++) {
        if (!PyUnicode_CheckExact(items[d])) {
            Py_DECREF(seq);
            Py_RETURN_NONE; /* numpy reads it (or raises its error) */
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(items[d]) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
#endif
    }
    PyObject *result = NULL, *joined = NULL, *lines = NULL, *encoded = NULL, *paths = NULL, *bad = NULL;
    Out out = {.n = 0};
    Lines s = {0};
    Hunks hs = {0};
    int64_t *todo = malloc((size_t)(n_items ? n_items : 1) * 2 * sizeof(int64_t));
    if (todo == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *sizes = todo + n_items;
    Py_ssize_t m;
    joined = join_diffs(items, n_items, todo, sizes, &m);
    if (joined == NULL) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_None); /* nothing to scan */
        goto done;
    }
    PyObject *newline = PyUnicode_FromOrdinal('\n');
    if (newline == NULL) goto done;
    lines = PyUnicode_Split(joined, newline, -1);
    Py_DECREF(newline);
    if (lines == NULL) goto done;
    encoded = PyUnicode_AsEncodedString(joined, "utf-8", "surrogatepass");
    if (encoded == NULL) goto done;
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(encoded);
    int64_t size = PyBytes_GET_SIZE(encoded), n_lines = PyList_GET_SIZE(lines) - 1, sum = 0;
    for (Py_ssize_t j = 0; j < m; j++) sum += sizes[j];
    if (sum != size) {
        PyErr_SetString(PyExc_SystemError, "credit._scan: the diffs' UTF-8 sizes do not add up");
        goto done;
    }
    if (new_out(&out, n_lines) < 0 || (paths = PyList_New(0)) == NULL || (bad = PyList_New(0)) == NULL) goto done;
    int64_t p = 0, g = 0, hunk_id = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        int64_t n = 0, p1 = p + sizes[j];
        if (buf[p1 - 1] != '\n') {
            PyErr_SetString(PyExc_SystemError, "credit._scan: a diff does not end with a line break");
            goto done;
        }
        int ok = read_diff(buf, p, p1, &s, &hs, &hunk_id, &n);
        if (ok < 0 || g + n > n_lines) {
            if (ok >= 0) PyErr_SetString(PyExc_SystemError, "credit._scan: the diffs' lines do not add up");
            else PyErr_NoMemory();
            goto done;
        }
        int64_t file = PyList_GET_SIZE(paths) - 1;
        if (ok) ok = read_paths(lines, g, &hs, file_path, paths);
        if (ok < 0) goto done;
        if (ok && write_body(&out, buf, &s, &hs, todo[j], g, file) < 0) {
            PyErr_SetString(PyExc_SystemError, "credit._scan: hunk bodies overlap");
            goto done;
        }
        if (!ok) {
            PyObject *index = PyLong_FromLongLong(todo[j]);
            if (index == NULL || PyList_Append(bad, index) < 0) {
                Py_XDECREF(index);
                goto done;
            }
            Py_DECREF(index);
        }
        p = p1;
        g += n;
    }
    if (g != n_lines) {
        PyErr_SetString(PyExc_SystemError, "credit._scan: the diffs' lines do not add up");
        goto done;
    }
    for (int k = 0; k < 8; k++)
        if (PyByteArray_Resize(out.arrays[k], (Py_ssize_t)(out.n * (int64_t)SIZES[k])) < 0) goto done;
    PyObject *arrays = PyTuple_New(8);
    if (arrays == NULL) goto done;
    for (int k = 0; k < 8; k++) {
        PyTuple_SET_ITEM(arrays, k, out.arrays[k]);
        out.arrays[k] = NULL;
    }
    PyObject *cr = PyBool_FromLong(memchr(buf, '\r', (size_t)size) != NULL);
    result = Py_BuildValue("(NOOONO)", arrays, lines, encoded, paths, cr, bad);
done:
    for (int k = 0; k < 8; k++) Py_XDECREF(out.arrays[k]);
    free(s.start);
    free(s.both);
    free(s.olds);
    free(s.odds);
    free(hs.at);
    free(todo);
    Py_XDECREF(joined);
    Py_XDECREF(lines);
    Py_XDECREF(encoded);
    Py_XDECREF(paths);
    Py_XDECREF(bad);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(diffs, file_path) -> ((diff, file, hunk, type, number, at, start, end) as bytearrays of int64 (type: "
     "int8), source lines, UTF-8 data, file paths, carriage returns, diffs left to unidiff), or None: "
     "credit.split._scan (None where the input is not a list of str, or no diff is non-blank)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
