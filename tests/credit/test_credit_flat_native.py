"""The projection in C (`credit._native.project_flat`) and the lines joined in C
(`credit._native.joined_lines`) against the numpy code they replace, and the tokens read for the
projection one step after another (`credit.offsets.flat_token_windows`) against `token_windows`'
per-step arrays."""
import numpy as np
import pytest
from credit_testlib import need_native
from test_credit_offsets import _random_batch

import credit.offsets as offsets_module
import credit.project as project_module
from credit.offsets import OffsetsError, flat_token_windows, token_windows
from credit.project import project_flat, project_steps

_C_PROJECT = project_module.c_project_flat


def _random_projection(rng):
    """Steps of tokens (zero-width ones anywhere, sometimes out of order, some steps empty), spans
    of any width (empty, reversed, outside the text), priorities with ties, values with NaN."""
    n_steps = int(rng.integers(1, 6))
    offsets = []
    for _ in range(n_steps):
        n = int(rng.integers(0, 40))
        starts = np.cumsum(rng.integers(0, 4, size=n))
        pairs = np.stack([starts, starts + rng.integers(0, 5, size=n)], axis=1).astype(np.int64)
        if rng.random() < 0.2 and n > 1:  # out of order: the searches must probe where numpy's probe
            pairs = pairs[rng.permutation(n)]
        offsets.append(pairs.reshape(-1, 2))
    m = int(rng.integers(0, 30))
    a = rng.integers(-3, 90, size=m)
    spans = np.stack([a, a + rng.integers(-5, 40, size=m)], axis=1).astype(np.int64).reshape(-1, 2)
    span_step = rng.integers(0, n_steps, size=m).astype(np.int64)
    values = rng.normal(size=m)
    values[rng.random(m) < 0.1] = np.nan
    priority = rng.integers(0, 4, size=m).astype(np.float64)
    return offsets, spans, span_step, values, priority


@pytest.mark.parametrize("seed", range(10))
def test_the_c_projection_paints_what_numpy_paints(seed, monkeypatch):
    need_native(_C_PROJECT)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        case = _random_projection(rng)
        got = []
        for native in (_C_PROJECT, None):
            monkeypatch.setattr(project_module, "c_project_flat", native)
            got.append(project_steps(*case))
        for c, py in zip(*got):
            assert c.dtype == py.dtype
            np.testing.assert_array_equal(c, py)


def test_spans_of_steps_out_of_range_go_to_numpy(monkeypatch):
    """A span's step outside the steps: numpy's indexing decides (a negative one counts from the end)."""
    need_native(_C_PROJECT)
    offsets = [np.array([[0, 2], [2, 4]], np.int64), np.array([[0, 1]], np.int64)]
    spans = np.array([[0, 3], [0, 1]], np.int64)
    values, priority = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    for step in ([0, -1], [0, 1]):
        got = []
        for native in (_C_PROJECT, None):
            monkeypatch.setattr(project_module, "c_project_flat", native)
            got.append(project_steps(offsets, spans, np.array(step, np.int64), values, priority))
        for c, py in zip(*got):
            np.testing.assert_array_equal(c, py)
    monkeypatch.setattr(project_module, "c_project_flat", _C_PROJECT)
    with pytest.raises(IndexError):
        project_steps(offsets, spans, np.array([0, 2], np.int64), values, priority)


def test_the_c_projection_refuses_arrays_that_do_not_fit():
    need_native(_C_PROJECT)
    tokens = np.array([[0, 1], [1, 2]], np.int64)
    spans = np.array([[0, 2]], np.int64)
    args = [tokens, np.array([2], np.int64), spans, np.zeros(1, np.int64), np.ones(1), np.zeros(1, np.int64),
            np.zeros(2), np.zeros(2, bool)]
    _C_PROJECT(*args)
    assert args[6].tolist() == [1.0, 1.0] and args[7].tolist() == [True, True]
    for k, bad in [(1, np.array([3], np.int64)), (1, np.array([-1, 3], np.int64)), (3, np.ones(1, np.int64)),
                   (5, np.ones(1, np.int64)), (6, np.zeros(3)), (7, np.zeros(2, np.int64)),
                   (1, np.array([2], np.int32))]:
        with pytest.raises(ValueError):
            _C_PROJECT(*args[:k], bad, *args[k + 1:])


def _flat(windows):
    n_read = [w[1].shape[0] for w in windows]
    pairs = np.concatenate([w[1] for w in windows]).reshape(-1, 2) if windows else np.zeros((0, 2), np.int64)
    if not any(w[0] is not None for w in windows):
        return pairs, n_read, None
    return pairs, n_read, np.concatenate([np.arange(n) if w[0] is None else w[0] for w, n in zip(windows, n_read)])


def _read(fn, batch):
    try:
        return fn(*batch)
    except (OffsetsError, ValueError) as err:
        return type(err), str(err), getattr(err, "step", None)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_flat_windows_are_the_windows_one_step_after_another(seed, native, monkeypatch):
    """Whatever the entries (some steps given as arrays too): the same tokens, counts and numbers,
    or the same error, as `token_windows`' per-step arrays, with the C readers and without."""
    if native:
        need_native(offsets_module.c_read_windows)
    else:
        monkeypatch.setattr(offsets_module, "c_read_windows", None)
        monkeypatch.setattr(offsets_module, "c_read_pairs", None)
    rng = np.random.default_rng(seed)
    for _ in range(60):
        steps, actions, spans, span_step = _random_batch(rng)
        if rng.random() < 0.3:  # a step given as an array (read whole)
            k = int(rng.integers(0, len(steps)))
            try:
                steps[k] = np.array(steps[k], np.int64).reshape(-1, 2)
            except (TypeError, ValueError, OverflowError):
                pass
        batch = (steps, actions, spans, span_step)
        per_step, flat = _read(token_windows, batch), _read(flat_token_windows, batch)
        if isinstance(per_step, tuple):
            assert flat == per_step
            continue
        want = _flat(per_step)
        np.testing.assert_array_equal(flat[0], want[0])
        assert flat[0].shape == want[0].shape and flat[1].tolist() == want[1]
        assert (flat[2] is None) == (want[2] is None)
        if want[2] is not None:
            np.testing.assert_array_equal(flat[2], want[2])


def test_project_flat_is_project_steps_on_the_steps_joined():
    rng = np.random.default_rng(7)
    for _ in range(50):
        offsets, spans, span_step, values, priority = _random_projection(rng)
        tokens = np.concatenate(offsets).reshape(-1, 2)
        n_tokens = np.array([len(o) for o in offsets], np.int64)
        for a, b in zip(project_flat(tokens, n_tokens, spans, span_step, values, priority),
                        project_steps(offsets, spans, span_step, values, priority)):
            np.testing.assert_array_equal(a, b)


_CHARS = ["a", " ", "\t", "\u00a0", "\u2003", "é", "✓", "😀", '"', "\\", "\x01", "\x1f", "\x7f", "\r", "\ud800", "<",
          "/", "x = 1"]


@pytest.mark.parametrize("seed", range(6))
def test_the_c_joined_lines_are_the_numpy_ones(seed):
    """Lines of any characters (whitespace of every width at their ends, escapes, surrogates),
    shorter than the skip or not, some holding a line break (Python's loop then): the same text,
    starts, sizes, kept sizes and escapes."""
    need_native(project_module.c_joined_lines)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        texts = ["".join(rng.choice(_CHARS, size=int(rng.integers(0, 8)))) for _ in range(int(rng.integers(1, 12)))]
        if rng.random() < 0.1:
            texts[int(rng.integers(0, len(texts)))] += "\n" + str(rng.choice(_CHARS))
        line = rng.integers(0, len(texts), size=int(rng.integers(0, 15))).astype(np.int64)
        skip = int(rng.integers(0, 3))
        want = project_module._joined_lines([texts[k] for k in line.tolist()], skip)
        got = project_module.joined_texts(texts, line, skip)
        assert got[0] == want[0]
        for a, b in zip(got[1:], want[1:]):
            assert a.tolist() == b.tolist()


def test_the_c_joined_lines_leave_odd_input_to_python():
    need_native(project_module.c_joined_lines)
    join = project_module.c_joined_lines
    assert join(["a", "b"], np.array([0, 2], np.int64), 0) is None  # outside texts
    assert join(["a", "b"], np.array([-1], np.int64), 0) is None  # Python counts from the end
    assert join(["a", 3], np.array([0, 1], np.int64), 0) is None  # not a str: Python's error
    assert join(["a\nb"], np.array([0], np.int64), 0) is None
    assert join(["a"], np.zeros(0, np.int64), 0) is None
    with pytest.raises(ValueError):
        join(["a"], np.zeros(1, np.int32), 0)
    with pytest.raises(TypeError):
        project_module.joined_texts(["a", 3], np.array([0, 1], np.int64), 0)
    assert project_module.joined_texts(["ab", "c"], np.array([-1, 0], np.int64), 1)[0] == "\nb"


_GAP_PIECES = [" ", "\t", "\n", "\r", "\x0b", "\x1c", "\u00a0", "\u2003", "\\n", "\\t", "\\r", "\\", "\\x", "n", "t",
               "a", "é", "😀", "\\\\n"]


@pytest.mark.parametrize("seed", range(6))
def test_the_c_gaps_join_as_the_pattern_joins(seed, monkeypatch):
    """Gaps of every width (over and under the width numpy reads at once) of spaces of every kind,
    escapes, backslashes at a gap's ends, letters, wide characters; touching and overlapping lines:
    the same verdict with the C pass as with numpy and the pattern."""
    need_native(project_module.c_join_gaps)
    rng = np.random.default_rng(seed)
    for _ in range(100):
        actions = ["".join(rng.choice(_GAP_PIECES, size=int(rng.integers(0, 120)))) for _ in range(int(rng.integers(1, 5)))]
        n = int(rng.integers(0, 40))
        step = rng.integers(0, len(actions), size=n).astype(np.int64)
        length = np.array([len(actions[s]) for s in step.tolist()], np.int64)
        end = (rng.random(n) * (length + 1)).astype(np.int64)
        start = np.minimum(end + rng.integers(-3, 80, size=n), length)
        got = []
        for native in (project_module.c_join_gaps, None):
            monkeypatch.setattr(project_module, "c_join_gaps", native)
            got.append(project_module._joins(actions, step, end, start))
        assert got[0].dtype == got[1].dtype and got[0].tolist() == got[1].tolist()


def test_the_c_gaps_leave_odd_input_to_python():
    need_native(project_module.c_join_gaps)
    out = np.zeros(1, bool)
    one = np.ones(1, np.int64)
    assert project_module.c_join_gaps(["a  b"], np.zeros(1, np.int64), one, 3 * one, out) and out[0]
    assert not project_module.c_join_gaps(["a  b"], one, one, 3 * one, out)  # no such step
    assert not project_module.c_join_gaps(["a  b"], np.zeros(1, np.int64), one, 9 * one, out)  # past the action
    assert not project_module.c_join_gaps([3], np.zeros(1, np.int64), one, 3 * one, out)
    with pytest.raises(ValueError):
        project_module.c_join_gaps(["a"], np.zeros(1, np.int32), one, one, out)


@pytest.mark.parametrize("seed", range(4))
def test_the_c_ranges_are_numpys(seed, monkeypatch):
    """credit._util.ranges in C (int64 arrays) gives numpy's concatenated aranges: empty and
    reversed pairs, negative bounds; other input (int32, floats, strided views, 2-D, lists) is left
    to numpy, which gives the same answer as before."""
    import credit._native as native
    import credit._util as util_module

    need_native(getattr(native, "ranges", None), "credit._native")
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(0, 50))
        starts = rng.integers(-20, 100, size=n)
        ends = starts + rng.integers(-5, 30, size=n)
        cases = [(starts, ends), (starts.astype(np.int32), ends), (np.stack([starts, ends])[:, ::2][0], ends[::2]),
                 (starts.astype(np.float64).astype(np.int64), ends)]
        for a, b in cases:
            got = util_module.ranges(a, b)
            monkeypatch.setattr(util_module, "c_ranges", None)
            want = util_module.ranges(a, b)
            monkeypatch.undo()
            assert got.dtype == want.dtype == np.int64 and got.tolist() == want.tolist()
    assert native.ranges(np.zeros(2), np.ones(2)) is None and native.ranges(np.zeros((2, 2), np.int64),
                                                                             np.ones((2, 2), np.int64)) is None
    assert native.ranges(np.zeros(2, np.int64), np.ones(3, np.int64)) is None
    assert native.ranges([0], [1]) is None


@pytest.mark.parametrize("seed", range(4))
def test_the_c_window_add_is_numpys_scatter_add(seed):
    """credit._native.add_windows adds each read token's value at its place in the batch, as numpy's
    flat[np.repeat(row_start, n_read) + index] += values; where a place falls outside the batch (or
    the buffers are not int64/float64 vectors) it answers None and leaves the batch as it was."""
    import credit._native as native

    need_native(getattr(native, "add_windows", None), "credit._native")
    rng = np.random.default_rng(seed)
    for _ in range(300):
        sizes = rng.integers(0, 30, size=int(rng.integers(0, 8)))
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = np.flatnonzero(rng.random(sizes.shape[0]) < 0.7).astype(np.int64)
        index = [np.sort(rng.choice(sizes[r], size=int(rng.integers(0, sizes[r] + 1)), replace=False))
                 for r in rows.tolist()]
        n_read = np.array([i.shape[0] for i in index], np.int64)
        index = np.concatenate(index).astype(np.int64) if index else np.zeros(0, np.int64)
        values = rng.normal(size=index.shape[0])
        flat = rng.normal(size=int(starts[-1]))
        want = flat.copy()
        want[np.repeat(starts[rows], n_read) + index] += values
        assert native.add_windows(flat, starts[rows], n_read, index, values) is True
        np.testing.assert_array_equal(flat, want)
        if index.shape[0]:
            bad = index.copy()
            bad[-1] = sizes.sum() + 5  # outside the batch
            before = flat.copy()
            assert native.add_windows(flat, starts[rows], n_read, bad, values) is None
            np.testing.assert_array_equal(flat, before)
            assert native.add_windows(flat, starts[rows], n_read + 1, index, values) is None
            if (n_read > 1).any():  # a token read twice in its row
                twice = index.copy()
                k = int(np.cumsum(n_read)[np.flatnonzero(n_read > 1)[0]]) - 1
                twice[k] = twice[k - 1]
                assert native.add_windows(flat, starts[rows], n_read, twice, values) is None
            assert native.add_windows(flat.astype(np.float32), starts[rows], n_read, index, values) is None
            assert native.add_windows(flat, starts[rows].astype(np.int32), n_read, index, values) is None
            np.testing.assert_array_equal(flat, before)


@pytest.mark.parametrize("seed", range(3))
def test_the_c_projection_paints_the_same_in_any_number_of_parts(seed, monkeypatch):
    """project_flat paints its steps in parts on threads (CREDIT_THREADS): the same values and
    coverage whatever the parts, on a batch big enough to be cut (zero-width and unordered tokens,
    spans of any width, ties of priority among them)."""
    import credit._native as native

    need_native(_C_PROJECT)
    rng = np.random.default_rng(seed)
    cases = [_random_projection(rng) for _ in range(1500)]
    offsets = [o for case in cases for o in case[0]]
    shift = np.cumsum([0] + [len(case[0]) for case in cases[:-1]])
    spans = np.concatenate([case[1] for case in cases])
    span_step = np.concatenate([case[2] + k for case, k in zip(cases, shift)])
    values = np.concatenate([case[3] for case in cases])
    priority = np.concatenate([case[4] for case in cases])
    n_tokens = np.array([len(o) for o in offsets], np.int64)
    tokens = np.concatenate(offsets).reshape(-1, 2)
    got = {}
    for threads in (1, 2, 3, 4):
        monkeypatch.setenv("CREDIT_THREADS", str(threads))
        value, covered = project_flat(tokens, n_tokens, spans, span_step, values, priority)
        assert native.last_parts() == threads
        got[threads] = (value.tobytes(), covered.tobytes())
    assert got[1] == got[2] == got[3] == got[4]
    monkeypatch.setattr(project_module, "c_project_flat", None)
    value, covered = project_flat(tokens, n_tokens, spans, span_step, values, priority)
    assert (value.tobytes(), covered.tobytes()) == got[1]


def test_credit_threads_is_read_as_a_count_or_left_to_the_default(monkeypatch):
    """CREDIT_THREADS: a positive count is used (1: no thread started); anything else (empty, 0,
    negative, not a number) leaves the default, the CPUs the process may use, at most 4."""
    import os

    import credit._native as native

    need_native(_C_PROJECT)
    rng = np.random.default_rng(9)
    cases = [_random_projection(rng) for _ in range(1500)]
    offsets = [o for case in cases for o in case[0]]
    shift = np.cumsum([0] + [len(case[0]) for case in cases[:-1]])
    args = (np.concatenate(offsets).reshape(-1, 2), np.array([len(o) for o in offsets], np.int64),
            np.concatenate([case[1] for case in cases]), np.concatenate([case[2] + k for case, k in zip(cases, shift)]),
            np.concatenate([case[3] for case in cases]), np.concatenate([case[4] for case in cases]))
    default = min(len(os.sched_getaffinity(0)), 4)
    for value, parts in (("1", 1), ("3", 3), ("", default), ("0", default), ("-2", default), ("two", default),
                         ("2x", default)):
        monkeypatch.setenv("CREDIT_THREADS", value)
        project_flat(*args)
        assert native.last_parts() == parts, value
    monkeypatch.delenv("CREDIT_THREADS")
    project_flat(*args)
    assert native.last_parts() == default
