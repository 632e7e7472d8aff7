/* credit._input: a batch of plain trajectory dicts read in one pass (credit/types.py `plain_batch`).

The estimators take plain dicts {task_id, steps: [{action, diff, reward, token_offsets: a list,
observation}], reward} as JSON and the harness of docs/benchmarks.md give them. In Python each
step costs a dict lookup per key, a type check per value, the cheap checks of its list offsets
(credit/offsets.py `check_listed_offsets`) and a Step built without its __init__
(credit/types.py `_plain_step`, `_trajectory_of_dict`): about 2.9 us a step, 4.4 ms of a 43 ms
credit.didpo call at the benchmark's paper shape (1,536 steps) and 64 ms at its large shape
(20,480). And the steps are read again later for their rewards and token counts, after the rest
of the call has pushed them out of the caches (4 ms at the large shape for the counts alone).

This does the same checks in one pass and gives what those later passes read: the flat list of
Steps, each step's reward and token count, each trajectory's step count and outcome. It takes
only the fast path of the Python functions, and answers None for a whole batch where any
trajectory or step is not on it (a Mapping that is no dict, a key beyond the plain ones, a value of
another type, a reward that is not finite or no float, offsets whose first or last entry fails
the cheap checks, ...): credit/types.py then reads the batch in Python, which accepts it or raises
the error that says what to fix. Optional: credit/types.py runs Python when this is not built. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static PyObject *S_task_id, *S_steps, *S_reward, *S_action, *S_diff, *S_token_offsets, *S_observation;
static PyObject *EMPTY;
#define N_FIELDS 11
static const char *const FIELDS[N_FIELDS] = {"action",     "diff",  "reward",     "token_offsets",
                                             "provenance", "observation", "calls", "edits",
                                             "line_calls", "token_ids",   "logprobs"}; /* Step's fields */
static PyObject *FIELD_NAMES[N_FIELDS];
enum { F_ACTION, F_DIFF, F_REWARD, F_OFFSETS, F_PROVENANCE, F_OBSERVATION };

/* An exact float or int as a finite double: 0, or -1 (no error set) when it is none. */
static int finite_number(PyObject *o, double *out) {
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
    } else if (PyLong_CheckExact(o)) {
        *out = PyLong_AsDouble(o);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
    } else {
        return -1;
    }
    return isfinite(*out) ? 0 : -1;
}

/* An exact int that fits int64: 0, or -1 (no error set). */
static int exact_int(PyObject *o, int64_t *out) {
    if (!PyLong_CheckExact(o)) return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = v;
    return 0;
}

/* A pair of exact ints as a list or tuple of two: 0, or -1. */
static int plain_pair(PyObject *pair, int64_t *start, int64_t *end) {
    if (!(PyList_CheckExact(pair) || PyTuple_CheckExact(pair)) || Py_SIZE(pair) != 2) return -1;
    PyObject **items = PySequence_Fast_ITEMS(pair);
    return exact_int(items[0], start) < 0 || exact_int(items[1], end) < 0 ? -1 : 0;
}

/* check_listed_offsets' first test (the one that needs no error message): 0 when it passes. */
static int offsets_pass(PyObject *offsets, Py_ssize_t length) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(offsets);
    if (n == 0) return 0;
    PyObject **items = PySequence_Fast_ITEMS(offsets);
    int64_t s0, e0, s1, e1;
    if (plain_pair(items[0], &s0, &e0) < 0 || plain_pair(items[n - 1], &s1, &e1) < 0) return -1;
    if (!(0 <= s0 && s0 <= e0 && 0 <= s1 && s1 <= e1 && e1 <= length && e0 <= length)) return -1;
    return e0 > s0 && e1 > s1 && (s1 < s0 || e1 < e0) ? -1 : 0;
}

/* A Step (object.__new__ and object.__setattr__, in field order) of the plain step dict d, its
   reward and token count, and its action, diff and offsets (borrowed from d) in fields; NULL with
   no error set where d is not plain, NULL with an error set on failure. */
static PyObject *plain_step(PyObject *d, PyTypeObject *step_type, double *reward, int64_t *n_tokens,
                            PyObject **fields) {
    if (!PyDict_CheckExact(d)) return NULL;
    PyObject *action = PyDict_GetItemWithError(d, S_action), *diff = PyDict_GetItemWithError(d, S_diff);
    PyObject *offsets = PyDict_GetItemWithError(d, S_token_offsets);
    PyObject *reward_obj = PyDict_GetItemWithError(d, S_reward);
    PyObject *observation = PyDict_GetItemWithError(d, S_observation);
    if (PyErr_Occurred()) return NULL;
    if (action == NULL || !PyUnicode_CheckExact(action) || diff == NULL || !PyUnicode_CheckExact(diff)
        || offsets == NULL || !(PyList_CheckExact(offsets) || PyTuple_CheckExact(offsets)))
        return NULL;
    Py_ssize_t keys = 3 + (reward_obj != NULL) + (observation != NULL);
    if (observation == Py_None) observation = NULL;
    if (observation != NULL && !PyUnicode_CheckExact(observation)) return NULL;
    if (PyDict_GET_SIZE(d) != keys) return NULL; /* a key beyond the plain ones */
    *reward = 0.0;
    if (reward_obj != NULL && finite_number(reward_obj, reward) < 0) return NULL;
    if (offsets_pass(offsets, PyUnicode_GET_LENGTH(action)) < 0) return NULL;
    *n_tokens = PySequence_Fast_GET_SIZE(offsets);
    fields[0] = action; /* borrowed from d */
    fields[1] = diff;
    fields[2] = offsets;
    PyObject *step = PyBaseObject_Type.tp_new(step_type, EMPTY, NULL);
    if (step == NULL) return NULL;
    PyObject *value_of[N_FIELDS] = {action, diff, NULL, offsets, Py_None, observation ? observation : Py_None,
                                    Py_None, Py_None, Py_None, Py_None, Py_None};
    value_of[F_REWARD] = PyFloat_FromDouble(*reward);
    if (value_of[F_REWARD] == NULL) goto fail;
    for (int f = 0; f < N_FIELDS; f++) {
        if (PyObject_GenericSetAttr(step, FIELD_NAMES[f], value_of[f]) < 0) {
            Py_DECREF(value_of[F_REWARD]);
            goto fail;
        }
    }
    Py_DECREF(value_of[F_REWARD]);
    return step;
fail:
    Py_DECREF(step);
    return NULL;
}

/* Set the attributes of a new Trajectory; -1 on failure. */
static int set_trajectory(PyObject *traj, PyObject *task_id, PyObject *steps, double outcome) {
    PyObject *reward = PyFloat_FromDouble(outcome);
    if (reward == NULL) return -1;
    int bad = PyObject_GenericSetAttr(traj, S_task_id, task_id) < 0 || PyObject_GenericSetAttr(traj, S_steps, steps) < 0
              || PyObject_GenericSetAttr(traj, S_reward, reward) < 0;
    Py_DECREF(reward);
    return bad ? -1 : 0;
}

/* The number of a non-empty diff among the distinct ones (`diffs`, numbered by first appearance,
   `seen` mapping each to its number); -1 for "", -2 on failure. */
static int64_t diff_number(PyObject *seen, PyObject *diffs, PyObject *diff) {
    if (PyUnicode_GET_LENGTH(diff) == 0) return -1;
    PyObject *number = PyDict_GetItemWithError(seen, diff);
    if (number != NULL) return PyLong_AsLongLong(number);
    if (PyErr_Occurred()) return -2;
    number = PyLong_FromSsize_t(PyList_GET_SIZE(diffs));
    int bad = number == NULL || PyDict_SetItem(seen, diff, number) < 0 || PyList_Append(diffs, diff) < 0;
    Py_XDECREF(number);
    return bad ? -2 : PyList_GET_SIZE(diffs) - 1;
}

typedef struct {
    PyObject *bytes;
    Py_ssize_t size, cap; /* in items of 8 bytes */
} Column;

static int push(Column *c, const void *value) {
    if (c->size == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 1024;
        if (c->bytes == NULL ? (c->bytes = PyByteArray_FromStringAndSize(NULL, 8 * cap)) == NULL
                             : PyByteArray_Resize(c->bytes, 8 * cap) < 0)
            return -1;
        c->cap = cap;
    }
    memcpy(PyByteArray_AS_STRING(c->bytes) + 8 * c->size++, value, 8);
    return 0;
}

static int trimmed(Column *c) {
    if (c->bytes == NULL) return (c->bytes = PyByteArray_FromStringAndSize(NULL, 0)) == NULL ? -1 : 0;
    return PyByteArray_Resize(c->bytes, 8 * c->size);
}

/* plain_batch(trajectories, Step, Trajectory) -> (trajectories, steps, n_steps, outcome, reward,
   n_tokens, actions, offsets, diff_of, diffs) or None

   trajectories: a list of dicts; Step, Trajectory: the classes of credit/types.py. Returns the
   Trajectory objects and all their Steps (lists), as bytearrays int64 n_steps and float64 outcome
   per trajectory, float64 reward and int64 n_tokens per step, the steps' actions and token offsets
   (lists), each step's diff as a number (int64 bytearray, -1: "") among the distinct non-empty
   diffs (a list, in order of first appearance); None when a trajectory or a step is not plain (see
   the top of this file). */
static PyObject *plain_batch(PyObject *self, PyObject *args) {
    PyObject *trajectories;
    PyTypeObject *step_type, *traj_type;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &trajectories, &PyType_Type, &step_type, &PyType_Type,
                          &traj_type))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(trajectories);
    PyObject *trajs = PyList_New(n), *all_steps = PyList_New(0), *actions = PyList_New(0), *offsets = PyList_New(0);
    PyObject *diffs = PyList_New(0), *seen = PyDict_New(), *result = NULL;
    Column n_steps = {0}, outcome = {0}, reward = {0}, n_tokens = {0}, diff_of = {0};
    if (trajs == NULL || all_steps == NULL || actions == NULL || offsets == NULL || diffs == NULL || seen == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(trajectories, i);
        if (!PyDict_CheckExact(d) || PyDict_GET_SIZE(d) != 3) goto plain_no;
        PyObject *task_id = PyDict_GetItemWithError(d, S_task_id), *steps = PyDict_GetItemWithError(d, S_steps);
        PyObject *reward_obj = PyDict_GetItemWithError(d, S_reward);
        if (PyErr_Occurred()) goto done;
        if (task_id == NULL || !(PyUnicode_CheckExact(task_id) || PyLong_CheckExact(task_id)) || steps == NULL
            || !(PyList_CheckExact(steps) || PyTuple_CheckExact(steps)) || reward_obj == NULL)
            goto plain_no;
        double r;
        if (finite_number(reward_obj, &r) < 0) goto plain_no;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(steps);
        PyObject *own = PyTuple_New(m);
        if (own == NULL) goto done;
        for (Py_ssize_t t = 0; t < m; t++) {
            double step_reward;
            int64_t count;
            PyObject *fields[3];
            PyObject *step = plain_step(PySequence_Fast_GET_ITEM(steps, t), step_type, &step_reward, &count, fields);
            if (step == NULL) {
                Py_DECREF(own);
                if (PyErr_Occurred()) goto done;
                goto plain_no;
            }
            PyTuple_SET_ITEM(own, t, step);
            int64_t which = diff_number(seen, diffs, fields[1]);
            if (which < -1 || PyList_Append(all_steps, step) < 0 || PyList_Append(actions, fields[0]) < 0
                || PyList_Append(offsets, fields[2]) < 0 || push(&reward, &step_reward) < 0
                || push(&n_tokens, &count) < 0 || push(&diff_of, &which) < 0) {
                Py_DECREF(own);
                goto done;
            }
        }
        PyObject *traj = PyBaseObject_Type.tp_new(traj_type, EMPTY, NULL);
        int64_t size = m;
        if (traj == NULL || set_trajectory(traj, task_id, own, r) < 0) {
            Py_XDECREF(traj);
            Py_DECREF(own);
            goto done;
        }
        Py_DECREF(own);
        PyList_SET_ITEM(trajs, i, traj);
        if (push(&n_steps, &size) < 0 || push(&outcome, &r) < 0) goto done;
    }
    if (trimmed(&n_steps) < 0 || trimmed(&outcome) < 0 || trimmed(&reward) < 0 || trimmed(&n_tokens) < 0
        || trimmed(&diff_of) < 0)
        goto done;
    result = PyTuple_Pack(10, trajs, all_steps, n_steps.bytes, outcome.bytes, reward.bytes, n_tokens.bytes, actions,
                          offsets, diff_of.bytes, diffs);
    goto done;
plain_no:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(trajs);
    Py_XDECREF(all_steps);
    Py_XDECREF(n_steps.bytes);
    Py_XDECREF(outcome.bytes);
    Py_XDECREF(reward.bytes);
    Py_XDECREF(n_tokens.bytes);
    Py_XDECREF(diff_of.bytes);
    Py_XDECREF(actions);
    Py_XDECREF(offsets);
    Py_XDECREF(diffs);
    Py_XDECREF(seen);
    return result;
}

static PyMethodDef methods[] = {
    {"plain_batch", plain_batch, METH_VARARGS,
     "plain_batch(trajectories, Step, Trajectory) -> (trajectories, steps, n_steps, outcome, reward, n_tokens, "
     "actions, offsets, diff_of, diffs) "
     "or None: a batch of plain trajectory dicts read in one pass (None where one is not plain)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "credit._input", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__input(void) {
    const char *names[] = {"task_id", "steps", "reward", "action", "diff", "token_offsets", "observation"};
    PyObject **slots[] = {&S_task_id, &S_steps, &S_reward, &S_action, &S_diff, &S_token_offsets, &S_observation};
    for (int k = 0; k < 7; k++)
        if ((*slots[k] = PyUnicode_InternFromString(names[k])) == NULL) return NULL;
    for (int f = 0; f < N_FIELDS; f++)
        if ((FIELD_NAMES[f] = PyUnicode_InternFromString(FIELDS[f])) == NULL) return NULL;
    if ((EMPTY = PyTuple_New(0)) == NULL) return NULL;
    return PyModule_Create(&module);
}
