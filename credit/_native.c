/* credit._native: reads token offsets given as Python lists of (start, end) pairs into int64.

numpy reads a list of 2-item lists at about 70 ns a pair however it is asked (np.array, np.fromiter
over a chain: it goes through the generic sequence and number protocols for every item); the
shared harness's paper batch holds 658k such pairs, 42 ms of a 140 ms credit.didpo call. Here each
item is read with the list and int macros: about 14 ns a pair (docs/benchmarks.md, "credit",
seventh round). Optional: credit/offsets.py falls back to its numpy reader when this is not built.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* One step's pairs into out[0 .. 2n); 0 on success, -1 when an item is not a list or tuple of two
   exact ints that fit in int64 (the caller reads that step its own way and reports what is wrong). */
static int read_step(PyObject *step, Py_ssize_t n, int64_t *out) {
    PyObject **items = PySequence_Fast_ITEMS(step);
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
        if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b)) return -1;
        int over_a = 0, over_b = 0;
        long long x = PyLong_AsLongLongAndOverflow(a, &over_a);
        long long y = PyLong_AsLongLongAndOverflow(b, &over_b);
        if (over_a || over_b || ((x == -1 || y == -1) && PyErr_Occurred())) {
            PyErr_Clear();
            return -1;
        }
        out[2 * i] = (int64_t)x;
        out[2 * i + 1] = (int64_t)y;
    }
    return 0;
}

/* read_pairs(steps, bounds, out) -> list of the indices of the steps not read.
   steps: a list of lists or tuples of pairs; bounds: int64 buffer of len(steps) + 1 pair counts
   (step k's pairs go to pairs bounds[k] .. bounds[k + 1]); out: writable int64 buffer of
   2 * bounds[-1] items. A step whose length differs from its bounds, or with an item that is not a
   pair of ints, is listed and its part of `out` left as it was. */
static PyObject *read_pairs(PyObject *self, PyObject *args) {
    PyObject *steps, *bounds_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &steps, &bounds_obj, &out_obj)) return NULL;
    Py_buffer bounds_view, out_view;
    if (PyObject_GetBuffer(bounds_obj, &bounds_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(out_obj, &out_view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&bounds_view);
        return NULL;
    }
    PyObject *failed = NULL;
    Py_ssize_t n_steps = PyList_GET_SIZE(steps);
    if (bounds_view.itemsize != 8 || out_view.itemsize != 8
        || bounds_view.len / 8 != n_steps + 1) {
        PyErr_SetString(PyExc_ValueError, "read_pairs: bounds must be int64 of len(steps) + 1, out int64");
        goto done;
    }
    const int64_t *bounds = (const int64_t *)bounds_view.buf;
    int64_t *out = (int64_t *)out_view.buf;
    Py_ssize_t capacity = out_view.len / 8;
    if (bounds[0] < 0 || 2 * bounds[n_steps] > capacity) {
        PyErr_SetString(PyExc_ValueError, "read_pairs: out holds fewer than 2 * bounds[-1] items");
        goto done;
    }
    failed = PyList_New(0);
    if (failed == NULL) goto done;
    for (Py_ssize_t k = 0; k < n_steps; k++) {
        PyObject *step = PyList_GET_ITEM(steps, k);
        int ok = (PyList_CheckExact(step) || PyTuple_CheckExact(step)) && bounds[k] >= 0 && bounds[k] <= bounds[k + 1]
                 && bounds[k + 1] <= bounds[n_steps] && PySequence_Fast_GET_SIZE(step) == bounds[k + 1] - bounds[k]
                 && read_step(step, bounds[k + 1] - bounds[k], out + 2 * bounds[k]) == 0;
        if (!ok) {
            PyObject *index = PyLong_FromSsize_t(k);
            if (index == NULL || PyList_Append(failed, index) < 0) {
                Py_XDECREF(index);
                Py_CLEAR(failed);
                goto done;
            }
            Py_DECREF(index);
        }
    }
done:
    PyBuffer_Release(&bounds_view);
    PyBuffer_Release(&out_view);
    return failed;
}

static PyMethodDef methods[] = {
    {"read_pairs", read_pairs, METH_VARARGS,
     "read_pairs(steps, bounds, out) -> indices of the steps not read: each step's (start, end) pairs "
     "into out[2 * bounds[k]:2 * bounds[k + 1]] as int64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
