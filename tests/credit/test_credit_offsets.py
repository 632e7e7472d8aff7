"""List token offsets read where spans need them (`credit.offsets`): the same token advantages as
offsets given as arrays, and bad entries where they are read reported with their step."""
import itertools

import numpy as np
import pytest
from credit_testlib import load_bench, need_native

import credit
from credit.offsets import OffsetsError, token_windows


def _overlapping(pairs: np.ndarray, span) -> set[int]:
    real = pairs[:, 1] > pairs[:, 0]
    return set(np.flatnonzero(real & (pairs[:, 0] < span[1]) & (pairs[:, 1] > span[0])).tolist())


def _odd_tokens(rng, n_chars: int) -> list[list[int]]:
    """Tokens over n_chars characters with zero-width entries anywhere and byte tokens that share
    one character's span (as a byte-level BPE gives a multi-byte character)."""
    out, pos = [], 0
    while pos < n_chars:
        u = rng.random()
        if u < 0.08:
            out.append([0, 0] if rng.random() < 0.5 else [pos, pos])
        elif u < 0.14:
            out += [[pos, pos + 1]] * int(rng.integers(2, 4))
            pos += 1
        else:
            width = int(rng.integers(1, 6))
            out.append([pos, min(pos + width, n_chars)])
            pos += width
    return out + [[0, 0]]


@pytest.mark.parametrize("seed", range(20))
def test_windows_hold_every_token_a_span_overlaps(seed):
    rng = np.random.default_rng(seed)
    n_chars = int(rng.integers(20, 400))
    tokens = _odd_tokens(rng, n_chars)
    pairs = np.array(tokens)
    starts = rng.integers(0, n_chars, size=int(rng.integers(1, 8)))
    spans = np.stack([starts, np.minimum(starts + rng.integers(1, 60, size=starts.shape[0]), n_chars)], 1)
    (index, got), = token_windows([tokens], ["x" * n_chars], spans, np.zeros(spans.shape[0], np.int64))
    index = np.arange(len(tokens)) if index is None else index
    np.testing.assert_array_equal(got, pairs[index])
    for span in spans:
        assert _overlapping(pairs, span) <= set(index.tolist())


def test_list_offsets_give_the_same_advantages_as_arrays():
    bench = load_bench()
    trajectories = bench.rollouts(2, 6, 4, seed=3)
    rng = np.random.default_rng(0)
    as_lists = []
    for t in trajectories:
        steps = []
        for s in t.steps:
            pairs = s.offsets.tolist()
            for k in sorted(rng.choice(len(pairs) + 1, size=3), reverse=True):  # specials anywhere
                pairs.insert(int(k), [0, 0])
            steps.append({**s.to_dict(), "token_offsets": pairs})
        as_lists.append({**t.to_dict(), "steps": steps})
    as_arrays = [{**t, "steps": [{**s, "token_offsets": np.array(s["token_offsets"])} for s in t["steps"]]}
                 for t in as_lists]
    listed, arrays = credit.didpo(as_lists), credit.didpo(as_arrays)
    assert listed.stats["coverage"]["tokens"] > 0.1
    for a, b in zip(listed.tokens, arrays.tokens):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_a_bad_entry_where_a_span_reads_is_reported_with_its_step():
    bench = load_bench()
    batch = [t.to_dict() for t in bench.rollouts(1, 4, 3, seed=1)]
    res = credit.didpo(batch)
    row = int(res.steps.diff_row[0])
    i, t = int(res.steps.trajectory[row]), int(res.steps.index[row])
    pairs = batch[i]["steps"][t]["token_offsets"]
    hit = next(k for k in range(len(pairs)) if res.tokens[i][t][k] != res.episode[i])  # a credited token
    pairs[hit] = [pairs[hit][1], pairs[hit][0] - 1]
    with pytest.raises(ValueError, match=rf"trajectory {i} \(task .*\), step {t}: token_offsets\[{hit}\]"):
        credit.didpo(batch)
    pairs[hit] = ["a", "b"]
    with pytest.raises(ValueError, match=rf"trajectory {i} \(task .*\), step {t}: token_offsets must be"):
        credit.didpo(batch)


def test_a_list_that_is_not_in_order_where_searched_is_read_whole_and_reported():
    tokens = [[0, 2], [2, 4], [4, 6], [6, 8]]
    shuffled = [tokens[0], tokens[2], tokens[1], tokens[3]]  # first and last in order, the middle not
    with pytest.raises(OffsetsError, match="not monotonic") as err:
        token_windows([tokens, shuffled], ["x" * 8] * 2, np.array([[1, 3], [1, 3]]), np.array([0, 1]))
    assert err.value.step == 1


def _mutated(rng, pairs: np.ndarray, n_chars: int) -> np.ndarray:
    """pairs with one rule of `checked_offsets` perhaps broken at a random token."""
    out = pairs.copy()
    k = int(rng.integers(0, out.shape[0]))
    u = rng.random()
    if u < 0.15:
        out[k, 0] = -1
    elif u < 0.3:
        out[k, 1] = n_chars + 1
    elif u < 0.45:
        out[k] = out[k, ::-1]
    elif u < 0.6:
        out[[k, -1]] = out[[-1, k]]
    elif u < 0.75:
        out[k] = [0, 0]
    return out


@pytest.mark.parametrize("seed", range(10))
def test_int64_arrays_are_accepted_exactly_when_the_full_checks_accept_them(seed):
    """int64 arrays take a short check (`_plainly_ordered`); it must never accept what the full
    rules (which int32 arrays still take) refuse, and whatever it refuses gets the full verdict."""
    from credit.offsets import checked_offsets

    rng = np.random.default_rng(seed)
    for _ in range(200):
        n_chars = int(rng.integers(1, 60))
        pairs = np.array(_odd_tokens(rng, n_chars) if rng.random() < 0.3 else
                         [[i, i + 1] for i in range(n_chars)], np.int64)
        pairs = _mutated(rng, pairs, n_chars)
        verdicts = []
        for dtype in (np.int64, np.int32):
            try:
                checked_offsets(pairs.astype(dtype), "x" * n_chars)
                verdicts.append("ok")
            except ValueError as err:
                verdicts.append(str(err))
        assert verdicts[0] == verdicts[1], pairs.tolist()


def _odd_entry(rng, pair: list[int]):
    """The pair as one of the entry types a caller may pass: most read natively, the rest
    (numpy ints, bools, floats, a third item, a huge int) are left to the numpy reader."""
    u = rng.random()
    if u < 0.04:
        return tuple(pair)
    if u < 0.05:
        return [np.int64(pair[0]), pair[1]]
    if u < 0.055:
        return [True, pair[1]]
    if u < 0.06:
        return [float(pair[0]), pair[1]]
    if u < 0.065:
        return pair + [0]
    if u < 0.07:
        return [pair[0], 2 ** 70]
    return pair


def _random_batch(rng):
    """Steps of list offsets as a caller may pass them (odd tokens, broken rules, odd entries, tuples),
    each past the input check of its ends, with a few spans each."""
    from credit.offsets import check_listed_offsets

    n_steps = int(rng.integers(1, 6))
    steps, actions, spans, span_step = [], [], [], []
    for s in range(n_steps):
        n_chars = int(rng.integers(1, 200))
        pairs = np.array(_odd_tokens(rng, n_chars) if rng.random() < 0.4 else
                         [[i, i + 1] for i in range(n_chars)], np.int64)
        if rng.random() < 0.3:
            pairs = _mutated(rng, pairs, n_chars)
        listed = pairs.tolist()
        if rng.random() < 0.3:
            listed = [_odd_entry(rng, p) for p in listed]
        try:  # what token_windows is given has passed the input check of its ends
            check_listed_offsets(listed, "x" * n_chars)
        except ValueError:
            listed = [[i, i + 1] for i in range(n_chars)]
        steps.append(listed if rng.random() < 0.9 else tuple(listed))
        actions.append("x" * n_chars)
        for _ in range(int(rng.integers(0 if rng.random() < 0.1 else 1, 4))):
            a = int(rng.integers(0, n_chars))
            spans.append([a, min(n_chars, a + int(rng.integers(1, 30)))])
            span_step.append(s)
    return steps, actions, np.array(spans, np.int64).reshape(-1, 2), np.array(span_step, np.int64)


# the C readers in use: both (windows in C, what they leave read whole in C), the whole reader alone
_READERS = {"windows": ("c_read_windows", "c_read_pairs"), "whole": ("c_read_pairs",)}


def _windows_with(monkeypatch, readers, batch):
    """token_windows with the named C readers on (the others off): its result, or its error."""
    import credit.offsets as offsets_module

    for name in ("c_read_windows", "c_read_pairs"):
        monkeypatch.setattr(offsets_module, name, _NATIVE[name] if name in readers else None)
    try:
        return token_windows(*batch)
    except (OffsetsError, ValueError) as err:
        return type(err), str(err), getattr(err, "step", None)


def _assert_same_reading(c, numpy_reader, steps, actions):
    """The C readers' verdict is the numpy reader's (the same error, or none), and they read the
    same tokens under every span: the same windows, or the step whole where its offsets pass
    every check."""
    from credit.offsets import checked_offsets

    if isinstance(numpy_reader, tuple):
        assert c == numpy_reader
        return
    assert isinstance(c, list), c
    for s, ((ci, cp), (ni, npairs)) in enumerate(zip(c, numpy_reader)):
        if ci is not None or ni is None:  # the same windows, or both whole
            assert (ci is None) == (ni is None) and (ci is None or ci.tolist() == ni.tolist())
            np.testing.assert_array_equal(cp, npairs)
            continue
        # read whole by C: only offsets that pass every check are, and they read as written
        whole = checked_offsets([[int(x) for x in p] for p in steps[s]], actions[s])
        np.testing.assert_array_equal(cp, whole)
        np.testing.assert_array_equal(npairs, whole[ni])


_NATIVE = {}


@pytest.fixture
def native_readers():
    import credit.offsets as offsets_module

    for name in ("c_read_windows", "c_read_pairs"):
        need_native(getattr(offsets_module, name))
        _NATIVE[name] = getattr(offsets_module, name)


@pytest.mark.parametrize("readers", list(_READERS))
@pytest.mark.parametrize("seed", range(8))
def test_the_c_reader_gives_what_the_numpy_reader_gives(seed, readers, native_readers, monkeypatch):
    """credit._native reads list offsets in windows (the same binary searches as `_windows`, the
    same checks), or whole; steps it cannot read or whose offsets fail a check go on to the next
    reader. Whatever the entries, the verdict (the same error, or none) and the tokens under every
    span are those of the numpy reader alone."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        batch = _random_batch(rng)
        c = _windows_with(monkeypatch, _READERS[readers], batch)
        _assert_same_reading(c, _windows_with(monkeypatch, (), batch), *batch[:2])


def test_the_c_windows_are_the_windows_of_the_numpy_reader(native_readers, monkeypatch):
    """Plain steps are read in windows by C, exactly where the numpy reader reads, also where
    zero-width tokens mislead a binary search (it lands where Python's bisect lands)."""
    tokens = [[0, 2], [2, 3], [5, 5], [3, 4], [4, 6], [0, 0], [6, 8], [8, 9]] + [[9 + i, 10 + i] for i in range(300)]
    spans = np.array([[4, 5], [7, 8], [100, 120], [130, 131], [300, 309]])
    batch = ([tokens, [tuple(p) for p in tokens]], ["x" * 309] * 2, np.concatenate([spans, spans]),
             np.repeat([0, 1], spans.shape[0]))
    c, numpy_reader = _windows_with(monkeypatch, _READERS["windows"], batch), _windows_with(monkeypatch, (), batch)
    for (ci, cp), (ni, npairs) in zip(c, numpy_reader):
        assert ci is not None and ci.tolist() == ni.tolist() and len(ci) < len(tokens) // 2
        np.testing.assert_array_equal(cp, npairs)
    assert c[0][0][0] == 2  # the search for 4 lands after [5, 5], walks back to [2, 3]


def test_bad_offsets_outside_windows_are_reported_as_the_numpy_reader_reports_them(native_readers, monkeypatch):
    """Where a window holds an entry of three items, the numpy reader reads every step whole, and
    reports step 0's bad token outside its windows: so do the C readers."""
    good = [[i, i + 1] for i in range(200)]
    bad = [list(p) for p in good]
    bad[150] = [151, 150]
    odd = [list(p) for p in good]
    odd[10] = [10, 11, 0]
    spans, span_step = np.array([[5, 9], [5, 15]]), np.array([0, 1])
    for steps in ([bad, odd], [bad, good]):
        batch = (steps, ["x" * 200] * 2, spans, span_step)
        numpy_reader = _windows_with(monkeypatch, (), batch)
        assert isinstance(numpy_reader, tuple) == (steps[1] is odd)
        for readers in _READERS.values():
            _assert_same_reading(_windows_with(monkeypatch, readers, batch), numpy_reader, *batch[:2])


_BREAKS = {  # a way to break step offsets at token k
    "negative start": lambda t, k: t.__setitem__(k, [-1, 3]),
    "end before start": lambda t, k: t.__setitem__(k, [40, 39]),
    "past the action": lambda t, k: t.__setitem__(k, [40, 201]),
    "start back": lambda t, k: t.__setitem__(k, [30, 31]),
    "end back": lambda t, k: t.__setitem__(k, [k, k + 5]),
    "three items": lambda t, k: t.__setitem__(k, [0, 0, 0]),
    "a float": lambda t, k: t.__setitem__(k, [40.0, 41]),
    "zero-width ahead": lambda t, k: t.insert(k, [50, 50]),
}


@pytest.mark.parametrize("how", list(_BREAKS))
def test_a_bad_token_in_a_window_or_beside_it_gets_the_numpy_readers_verdict(how, native_readers, monkeypatch):
    """Each broken rule (start < 0, end < start, past the action, out of order; an odd entry; a
    zero-width token that misleads the search) at every place around a window: the C readers
    report it, or read around it, exactly where the numpy reader does."""
    for k, b in itertools.product(range(30, 50), range(40, 46)):
        steps = [[[i, i + 1] for i in range(200)] for _ in range(2)]
        _BREAKS[how](steps[1], k)
        batch = (steps, ["x" * 200] * 2, np.array([[38, b], [38, b]]), np.array([0, 1]))
        numpy_reader = _windows_with(monkeypatch, (), batch)
        for readers in _READERS.values():
            _assert_same_reading(_windows_with(monkeypatch, readers, batch), numpy_reader, *batch[:2])


@pytest.mark.parametrize("n_zero", range(6, 12))
def test_zero_width_tokens_at_a_window_edge_are_walked_as_the_numpy_reader_walks(n_zero, native_readers,
                                                                              monkeypatch):
    """Runs of zero-width tokens before and after a span: walked past up to _MAX_WALK, beyond it the
    step read whole, in C as in Python."""
    tokens = [[i, i + 1] for i in range(100)]
    before = tokens[:40] + [[40, 40]] * n_zero + tokens[40:]
    after = tokens[:45] + [[0, 0]] * n_zero + tokens[45:]
    straddling = tokens[:38] + [[38, 41]] + [[41, 41]] * n_zero + tokens[41:]
    batch = ([before, after, straddling], ["x" * 100] * 3, np.array([[40, 45]] * 3), np.arange(3))
    c = _windows_with(monkeypatch, _READERS["windows"], batch)
    _assert_same_reading(c, _windows_with(monkeypatch, (), batch), *batch[:2])


@pytest.mark.parametrize("seed", range(4))
def test_lists_out_of_order_in_places_get_the_numpy_readers_verdict(seed, native_readers, monkeypatch):
    """Tokens with a few stretches moved elsewhere, spans far apart: the searches land, walk and
    find windows out of order (the step then read whole) as the numpy reader's do."""
    rng = np.random.default_rng(seed)
    for _ in range(100):
        tokens = [[i, i + 1] for i in range(600)]
        for _ in range(int(rng.integers(1, 4))):
            a, width, to = int(rng.integers(0, 580)), int(rng.integers(1, 200)), int(rng.integers(0, 580))
            moved = tokens[a:a + width]
            del tokens[a:a + width]
            tokens[to:to] = moved
        tokens[0], tokens[-1] = [0, 1], [599, 600]
        starts = np.sort(rng.choice(np.arange(0, 560, 140), size=int(rng.integers(2, 5)), replace=False))
        spans = np.stack([starts, starts + rng.integers(1, 40, size=starts.shape[0])], 1)
        batch = ([tokens], ["x" * 600], spans, np.zeros(starts.shape[0], np.int64))
        numpy_reader = _windows_with(monkeypatch, (), batch)
        for readers in _READERS.values():
            _assert_same_reading(_windows_with(monkeypatch, readers, batch), numpy_reader, *batch[:2])


def test_steps_with_no_span_read_nothing():
    tokens = [[0, 1], [1, 2]]
    got = token_windows([tokens, tokens], ["xx"] * 2, np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    assert all(index is not None and index.shape == (0,) and pairs.shape == (0, 2) for index, pairs in got)


def test_the_c_window_reader_refuses_arrays_that_do_not_fit(native_readers):
    read = _NATIVE["c_read_windows"]
    i64 = lambda *x: np.array(x, np.int64)  # noqa: E731
    n_read = np.zeros(1, np.int64)
    pairs, index = read([[[0, 2], [2, 4], [4, 6]]], i64(0), i64(1), i64(2), i64(3), i64(6), n_read)
    assert n_read.tolist() == [1] and np.frombuffer(pairs, np.int64).tolist() == [2, 4]
    assert np.frombuffer(index, np.int64).tolist() == [1]
    with pytest.raises(ValueError, match="int64"):
        read([[[0, 2]]], i64(0), i64(1), i64(0), i64(1), np.array([2], np.int32), n_read)
    with pytest.raises(ValueError, match="len\\(steps\\)"):
        read([[[0, 2]]], i64(0, 0), i64(1, 1), i64(0), i64(1), i64(2), n_read)
    with pytest.raises(ValueError, match="outside"):
        read([[[0, 2]]], i64(0), i64(2), i64(0), i64(1), i64(2), n_read)


def test_the_c_reader_refuses_bounds_that_do_not_fit():
    from credit.offsets import c_read_pairs

    need_native(c_read_pairs)
    out = np.zeros(4, np.int64)
    assert c_read_pairs([[[1, 2]], [[3, 4]]], np.array([0, 1, 2], np.int64), out) == []
    assert out.tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="fewer than"):
        c_read_pairs([[[1, 2]], [[3, 4]]], np.array([0, 1, 3], np.int64), out)
    with pytest.raises(ValueError, match="int64"):
        c_read_pairs([[[1, 2]]], np.array([0, 1], np.int32), out)
    out[:] = 7  # a step whose bounds do not match its length, or lie below zero, is left alone
    assert c_read_pairs([[[1, 2]], [[3, 4]]], np.array([0, 2, 2], np.int64), out) == [0, 1]
    assert c_read_pairs([[[1, 2]], [[3, 4]]], np.array([0, -1, 1], np.int64), out) == [0, 1]
    assert out.tolist() == [7, 7, 7, 7]
    assert c_read_pairs([[[1, 2]], [[3, 4.0]]], np.array([0, 1, 2], np.int64), out) == [1]
    assert out.tolist() == [1, 2, 7, 7]


@pytest.mark.parametrize("seed", range(3))
def test_the_c_window_reader_reads_the_same_with_any_number_of_threads(seed, native_readers, monkeypatch):
    """read_windows cuts its steps into parts read on threads (CREDIT_THREADS): the same tokens,
    numbers and steps left to Python, whatever the parts, on a batch of every kind of step (odd
    tokens, broken rules, odd entries and huge ints among them)."""
    import credit._native as native
    import credit.offsets as offsets_module
    from credit.offsets import flat_token_windows

    rng = np.random.default_rng(seed)
    steps, actions, spans, span_step = [], [], [], []
    while sum(len(s) for s in steps) < 60_000:
        s, a, p, q = _random_batch(rng)
        span_step.append(q + len(steps))
        steps += s
        actions += a
        spans.append(p)
    batch = (steps, actions, np.concatenate(spans), np.concatenate(span_step))
    calls = []
    monkeypatch.setattr(offsets_module, "c_read_windows", lambda *args: calls.append(args) or _NATIVE["c_read_windows"](*args))
    try:
        flat_token_windows(*batch)
    except (OffsetsError, ValueError):
        pass
    args = calls[0]
    got = {}
    for threads in (1, 2, 3, 4):
        monkeypatch.setenv("CREDIT_THREADS", str(threads))
        n_read = args[-1].copy()
        pairs, index = _NATIVE["c_read_windows"](*args[:-1], n_read)
        assert native.last_parts() == threads
        got[threads] = (bytes(pairs), bytes(index), n_read.tolist())
    assert got[1] == got[2] == got[3] == got[4]
    assert -1 in got[1][2] and len(got[1][1]) > 0  # steps left to Python among those read
