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
