"""The plain-dict batch read in C (`credit._input.plain_batch`, via `credit.types.plain_batch`)
against the Python path it replaces (`as_trajectories` and the passes of `step_table`): the same
Steps and Trajectories, the same arrays, and every batch off the fast path handed back to Python,
which accepts it or raises its own error."""
import copy
import dataclasses
import math
import random
import sys
from collections import OrderedDict

import numpy as np
import pytest
from credit_testlib import assert_didpo_unchanged_without, load_bench, need_native, through_c

import credit
import credit.types as types_module
from credit._common import step_table
from credit.types import as_trajectories, plain_batch

_C = types_module.c_plain_batch


def _batch(pair=list):
    out = []
    for t in load_bench().rollouts(3, 8, 4, seed=5):
        d = t.to_dict()
        d["steps"] = [{"action": s["action"], "diff": s["diff"], "reward": s["reward"],
                       "token_offsets": [pair(p) for p in s["token_offsets"]], "observation": s["observation"]}
                      for s in d["steps"]]
        out.append(d)
    return out


def _python(batch):
    """What the Python path reads: the trajectories, step_table's arrays and the columns."""
    trajs = as_trajectories(batch)
    steps = [s for t in trajs for s in t.steps]
    numbers: dict = {}
    diff_of = [numbers.setdefault(s.diff, len(numbers)) if s.diff else -1 for s in steps]
    return (trajs, steps, np.array([len(t.steps) for t in trajs]), np.array([t.reward for t in trajs]),
            np.array([s.reward for s in steps]), _n_tokens(steps), [s.action for s in steps],
            [s.token_offsets for s in steps], np.array(diff_of, np.int64), list(numbers))


def _n_tokens(steps):
    return np.array([0 if s.token_offsets is None else len(s.token_offsets) for s in steps])


def _assert_same(got, want):
    trajs, steps = got[0], got[1]
    assert len(trajs) == len(want[0]) and len(steps) == len(want[1])
    for a, b in zip(trajs, want[0]):
        assert type(a) is credit.Trajectory and (a.task_id, a.reward) == (b.task_id, b.reward)
        assert type(a.reward) is float and type(a.steps) is tuple
    for a, b in zip(steps, want[1]):
        assert type(a) is credit.Step and vars(a) == vars(b)
        assert list(vars(a)) == [f.name for f in dataclasses.fields(credit.Step)]
        assert a.token_offsets is b.token_offsets  # the caller's list, kept as given
    assert [s for t in trajs for s in t.steps] == steps
    for x, y in zip(got[2:6], want[2:6]):
        np.testing.assert_array_equal(x, y)
    if len(got) > 6:  # the columns
        assert got[6] == want[6] and all(a is b for a, b in zip(got[7], want[7])) and len(got[7]) == len(want[7])
        np.testing.assert_array_equal(got[8], want[8])
        assert got[9] == want[9]


@pytest.mark.parametrize("pair", [list, tuple])
def test_the_c_batch_reads_what_python_reads(pair):
    need_native(_C, "credit._input")
    batch = _batch(pair)
    got = plain_batch(batch)
    assert got is not None
    _assert_same(got, _python(batch))
    assert got[2].dtype == np.int64 and got[3].dtype == np.float64 and got[5].dtype == np.int64
    assert got[8].dtype == np.int64 and (got[8] == -1).any() and len(got[9]) < (got[8] >= 0).sum()


def test_didpo_reads_plain_dicts_through_c_and_gives_what_python_gives(monkeypatch):
    need_native(_C, "credit._input")
    batch = _batch()
    through_c(types_module, "c_plain_batch", lambda: credit.didpo(batch), "the plain batch")
    assert_didpo_unchanged_without(monkeypatch, types_module, "c_plain_batch")


def test_a_step_built_in_c_is_a_frozen_step():
    need_native(_C, "credit._input")
    step = plain_batch(_batch())[1][0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.action = "x"
    assert credit.Step.from_dict(step.to_dict()).to_dict() == step.to_dict()
    assert credit.Step.from_dict(step) is step


class _Mapping(OrderedDict):
    pass


# every way off the fast path: valid input the dataclass path reads, or input it refuses
_OFF = [
    ("step", {"provenance": None}),                 # a key beyond the plain ones, None
    ("step", {"calls": [(0, 2)]}),                  # and given
    ("step", {"reward": True}),
    ("step", {"reward": np.float64(0.5)}),
    ("step", {"reward": float("nan")}),
    ("step", {"reward": 10 ** 400}),
    ("step", {"reward": "1"}),
    ("step", {"diff": None}),
    ("step", {"action": 3}),
    ("step", {"observation": 5}),
    ("step", {"diffs": ""}),
    ("step", {"token_offsets": [(2, 4), (0, 2)]}),
    ("step", {"token_offsets": [(0, 2), (2, 9)]}),
    ("step", {"token_offsets": [(-1, 2)]}),
    ("step", {"token_offsets": [(3, 2)]}),
    ("step", {"token_offsets": [(0, 2), (2, 4.0)]}),
    ("step", {"token_offsets": [(0, 2), (2, 3, 4)]}),
    ("step", {"token_offsets": [(0, True)]}),
    ("step", {"token_offsets": [(0, np.int64(2))]}),
    ("step", {"token_offsets": [(0, 2 ** 70)]}),
    ("step", {"token_offsets": np.array([[0, 2], [2, 4]])}),
    ("step", {"token_offsets": None}),
    ("step", "mapping"),
    ("step", "object"),
    ("traj", {"task_id": True}),
    ("traj", {"task_id": [1]}),
    ("traj", {"reward": float("inf")}),
    ("traj", {"reward": None}),
    ("traj", {"extra": 1}),
    ("traj", "mapping"),
    ("traj", "object"),
]


def _off(batch, where, change, rng):
    batch = copy.deepcopy(batch)
    plain = [k for k, d in enumerate(batch) if type(d) is dict]  # (a fuzzed batch may hold others)
    if not plain:
        return batch
    t = rng.choice(plain)
    if where == "traj":
        if change == "mapping":
            batch[t] = _Mapping(batch[t])
        elif change == "object":
            batch[t] = credit.Trajectory.from_dict(batch[t])
        else:
            batch[t].update(change)
        return batch
    plain = [k for k, d in enumerate(batch[t]["steps"]) if type(d) is dict]
    if not plain:
        return batch
    s = rng.choice(plain)
    step = batch[t]["steps"][s]
    if change == "mapping":
        batch[t]["steps"][s] = _Mapping(step)
    elif change == "object":
        batch[t]["steps"][s] = credit.Step.from_dict(step)
    else:
        step.update({"action": "abcd", "token_offsets": [(0, 2), (2, 4)]} if "token_offsets" in change
                    and change["token_offsets"] is not None else {})
        step.update(change)
    return batch


def _outcome(read, batch):
    try:
        return "ok", read(batch)
    except Exception as err:  # noqa: BLE001 - the error itself is compared
        return type(err), str(err)


@pytest.mark.parametrize("where, change", _OFF)
def test_every_batch_off_the_fast_path_goes_to_python(where, change, monkeypatch):
    need_native(_C, "credit._input")
    rng = random.Random(repr(change))
    batch = _off(_batch(), where, change, rng)
    assert _C(batch, credit.Step, credit.Trajectory) is None
    with_c = _outcome(step_table, batch)
    monkeypatch.setattr(types_module, "c_plain_batch", None)
    without = _outcome(step_table, batch)
    assert with_c[0] == without[0]
    if with_c[0] == "ok":  # read by Python both times
        _assert_same((with_c[1].trajectories, with_c[1].steps, with_c[1].n_steps, with_c[1].outcome,
                      with_c[1].reward, _n_tokens(with_c[1].steps)),
                     (without[1].trajectories, without[1].steps, without[1].n_steps, without[1].outcome,
                      without[1].reward, _n_tokens(without[1].steps)))
        assert with_c[1].columns is None
    else:
        assert with_c == without


def test_plain_values_the_fast_path_takes():
    """Int rewards, tuple steps, int task ids, no reward or observation keys: read in C, as Python reads them."""
    need_native(_C, "credit._input")
    batch = [{"task_id": 7, "steps": ({"action": "abcd", "diff": "", "token_offsets": []},
                                      {"action": "ab", "diff": "", "reward": 3, "token_offsets": ((0, 1), (1, 2)),
                                       "observation": None}), "reward": 2}]
    got = plain_batch(batch)
    assert got is not None
    _assert_same(got, _python(batch))
    assert got[0][0].reward == 2.0 and got[1][1].reward == 3.0 and got[5].tolist() == [0, 2]


def test_a_batch_left_to_python_keeps_no_reference():
    """The Steps built before a step off the path are freed (no reference to the caller's strings kept)."""
    need_native(_C, "credit._input")
    batch = _batch()
    action = batch[0]["steps"][0]["action"]
    batch[-1]["steps"][-1]["reward"] = math.nan
    before = sys.getrefcount(action)
    for _ in range(3):
        assert _C(batch, credit.Step, credit.Trajectory) is None
    assert sys.getrefcount(action) == before
    batch[-1]["steps"][-1]["reward"] = 0.0
    got = _C(batch, credit.Step, credit.Trajectory)
    assert sys.getrefcount(action) == before + 2  # held by the Step and by the actions column
    del got
    assert sys.getrefcount(action) == before


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_batches_read_in_c_or_left_to_python(seed, monkeypatch):
    """Random batches with random changes: where C reads one, Python reads the same."""
    need_native(_C, "credit._input")
    rng = random.Random(seed)
    base = _batch()[:6]
    for _ in range(40):
        batch = copy.deepcopy(base)
        for _ in range(rng.randint(0, 2)):
            where, change = rng.choice(_OFF + [("step", {"reward": 1}), ("step", {"observation": "o"})])
            batch = _off(batch, where, change, rng)
        got = _C(batch, credit.Step, credit.Trajectory)
        monkeypatch.setattr(types_module, "c_plain_batch", None)
        want = _outcome(_python, batch)
        monkeypatch.setattr(types_module, "c_plain_batch", _C)
        if got is not None:
            assert want[0] == "ok"
            _assert_same(plain_batch(batch), want[1])
