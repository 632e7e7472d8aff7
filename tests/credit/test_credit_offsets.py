"""List token offsets read where spans need them (`credit.offsets`): the same token advantages as
offsets given as arrays, and bad entries where they are read reported with their step."""
import numpy as np
import pytest
from credit_testlib import load_bench

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


def _as_ints(entries) -> list:
    """Each entry as the pair of ints an int64 array reads from it (a bool as 0 or 1, an integral
    float as its int), or None where it holds no such pair."""
    out = []
    for p in entries:
        ok = (isinstance(p, (list, tuple)) and len(p) == 2
              and all(isinstance(x, (int, np.integer)) or (isinstance(x, float) and x.is_integer()) for x in p))
        out.append([int(x) for x in p] if ok else None)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_whatever_the_entries_windows_read_what_the_lists_hold_or_report_the_step(seed):
    """Random batches (odd tokens, broken rules, odd entries, tuples): token_windows either reports
    a step whose offsets break a rule, or gives per step the entries it read as written (whole,
    checked in full, or the numbered ones of its windows), and windows that hold every real token
    overlapping each of the step's spans."""
    from credit.offsets import checked_offsets

    rng = np.random.default_rng(seed)
    reported = read_in_windows = 0
    for _ in range(60):
        steps, actions, spans, span_step = _random_batch(rng)
        try:
            got = token_windows(steps, actions, spans, span_step)
        except OffsetsError as err:
            with pytest.raises(ValueError):
                checked_offsets(steps[err.step], actions[err.step])
            reported += 1
            continue
        for s, (index, pairs) in enumerate(got):
            ints = _as_ints(steps[s])
            if index is None:
                np.testing.assert_array_equal(pairs, checked_offsets(steps[s], actions[s]))
                continue
            read_in_windows += 1
            assert pairs.tolist() == [ints[i] for i in index.tolist()]
            if None in ints:
                continue
            try:
                whole = checked_offsets(ints, actions[s])
            except ValueError:
                continue  # a bad entry outside the windows is not read
            for span in spans[span_step == s].tolist():
                assert _overlapping(whole, span) <= set(index.tolist())
    assert reported > 0 and read_in_windows > 0


def test_windows_are_found_where_zero_width_tokens_mislead_a_search():
    """A binary search for 4 lands after [5, 5] (out of order, zero-width) and walks back to [2, 3];
    the steps are read in windows, not whole, lists and tuples alike."""
    tokens = [[0, 2], [2, 3], [5, 5], [3, 4], [4, 6], [0, 0], [6, 8], [8, 9]] + [[9 + i, 10 + i] for i in range(300)]
    spans = np.array([[4, 5], [7, 8], [100, 120], [130, 131], [300, 309]])
    got = token_windows([tokens, [tuple(p) for p in tokens]], ["x" * 309] * 2, np.concatenate([spans, spans]),
                        np.repeat([0, 1], spans.shape[0]))
    for index, pairs in got:
        assert index is not None and len(index) < len(tokens) // 2
        assert pairs.tolist() == [tokens[i] for i in index.tolist()]
    assert got[0][0][0] == 2


def test_bad_offsets_outside_windows_are_reported_when_a_window_holds_an_odd_entry():
    """Where a window holds an entry of three items, every step is read whole, in order: step 0's
    bad token outside its windows is then reported; without the odd entry it is not read."""
    good = [[i, i + 1] for i in range(200)]
    bad = [list(p) for p in good]
    bad[150] = [151, 150]
    odd = [list(p) for p in good]
    odd[10] = [10, 11, 0]
    spans, span_step = np.array([[5, 9], [5, 15]]), np.array([0, 1])
    with pytest.raises(OffsetsError) as err:
        token_windows([bad, odd], ["x" * 200] * 2, spans, span_step)
    assert err.value.step == 0 and "151, 150" in str(err.value)
    got = token_windows([bad, good], ["x" * 200] * 2, spans, span_step)
    assert [index.tolist() for index, _ in got] == [list(range(5, 9)), list(range(5, 15))]  # the overlapping tokens


def test_steps_with_no_span_read_nothing():
    tokens = [[0, 1], [1, 2]]
    got = token_windows([tokens, tokens], ["xx"] * 2, np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    assert all(index is not None and index.shape == (0,) and pairs.shape == (0, 2) for index, pairs in got)
