"""Plain dicts (the fast input path: no dataclass init per step) against Trajectory objects."""

import numpy as np
import pytest

import credit
from credit.types import _plain_step, _step_of_listed, as_trajectories
from credit_testlib import load_bench


def _as_dicts(trajectories, pair=tuple):
    """The batch as a user passes it: plain dicts, token offsets as lists of pairs."""
    out = []
    for t in trajectories:
        d = t.to_dict()
        for s in d["steps"]:
            s["token_offsets"] = [pair(p) for p in s["token_offsets"]]
        out.append(d)
    return out


def _same_result(a, b):
    np.testing.assert_array_equal(a.episode, b.episode)
    for x, y in zip(a.tokens, b.tokens, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v)
    for field in ("trajectory", "index", "returns", "advantage", "diff_row", "diff_anchor", "diff_advantage"):
        np.testing.assert_array_equal(getattr(a.steps, field), getattr(b.steps, field))
    assert len(a.anchors) == len(b.anchors) > 0
    for p, q in zip(a.anchors, b.anchors):
        assert (p.task_id, p.kind, p.gs, p.mean_lines, p.size, p.preview) == (q.task_id, q.kind, q.gs, q.mean_lines,
                                                                             q.size, q.preview)
        for field in ("rows", "trajectories", "steps", "advantage"):
            np.testing.assert_array_equal(getattr(p, field), getattr(q, field))
    timings = ("time_ms", "cpu_ms")
    assert {k: v for k, v in a.stats.items() if k not in timings} == {k: v for k, v in b.stats.items()
                                                                      if k not in timings}


@pytest.mark.parametrize("provenance", [False, True])
def test_plain_dicts_and_trajectory_objects_give_identical_results(provenance):
    trajectories = load_bench().rollouts(3, 8, 4, seed=5)
    if not provenance:  # only the keys the fast path takes (the shared harness's rollouts look so)
        trajectories = [credit.Trajectory(t.task_id, [credit.Step(s.action, s.diff, s.reward, s.token_offsets,
                                                                  observation=s.observation) for s in t.steps],
                                          t.reward) for t in trajectories]
    objects = credit.didpo(trajectories)
    for pair in (tuple, list):
        dicts = _as_dicts(trajectories, pair)
        fast = sum(_plain_step(s) is not None for t in dicts for s in t["steps"])
        assert (fast == sum(len(t.steps) for t in trajectories)) if not provenance else 0 < fast
        _same_result(credit.didpo(dicts), objects)
    assert objects.stats["coverage"]["tokens"] > 0.1


def test_the_fast_step_holds_what_the_dataclass_path_holds():
    d = {"action": "abcd", "diff": "", "reward": 2, "token_offsets": [(0, 2), (2, 4)], "observation": "o",
         "provenance": None, "token_ids": None}
    fast, slow = _plain_step(d), _step_of_listed(d)
    assert type(fast) is credit.Step and vars(fast) == vars(slow)
    assert type(fast.reward) is float and fast.offsets.tolist() == [[0, 2], [2, 4]]
    assert credit.Step.from_dict(fast) is fast and credit.Trajectory("q", [fast], 1).steps == (fast,)


@pytest.mark.parametrize("bad, message", [
    ({"reward": float("nan")}, "finite"),
    ({"reward": "1"}, "Step.reward must be a number, got str"),  # not for the fast path: the dataclass path refuses it
    ({"diff": None}, "use '' for a step that changed nothing"),
    ({"action": 3}, "response text"),
    ({"observation": 5}, "observation must be a str"),
    ({"diffs": ""}, "unknown keys"),
    ({"token_offsets": [(2, 4), (0, 2)]}, "not monotonic"),
    ({"token_offsets": [(0, 2), (2, 9)]}, "the action has 4 characters"),
    ({"token_offsets": [(-1, 2)]}, "0 <= start <= end"),
    ({"token_offsets": [(3, 2)]}, "0 <= start <= end"),
    ({"token_offsets": [(0, 2), (2, 4.0)]}, "token_offsets"),
    ({"token_offsets": [(0, 2), (2, 3, 4)]}, "token_offsets"),
    ({"token_offsets": [(0, True)]}, "token_offsets"),
])
def test_plain_dicts_are_checked_like_steps(bad, message):
    step = {"action": "abcd", "diff": "", "reward": 0.0, "token_offsets": [(0, 2), (2, 4)], **bad}
    batch = [{"task_id": "q", "steps": [step], "reward": 1.0}]
    with pytest.raises((ValueError, TypeError), match=r"trajectory 0: task 'q', step 0: .*" + message):
        as_trajectories(batch)


@pytest.mark.parametrize("task_id, reward, message", [
    (True, 1.0, "task_id must be a str or int"),
    ("q", float("inf"), "finite"),
    ([1], 1.0, "task_id must be a str or int"),
])
def test_plain_trajectories_are_checked_like_trajectories(task_id, reward, message):
    batch = [{"task_id": task_id, "steps": [{"action": "ab", "diff": "", "token_offsets": [(0, 2)]}],
              "reward": reward}]
    with pytest.raises((ValueError, TypeError), match=message):
        as_trajectories(batch)


@pytest.mark.parametrize("enabled", [True, False])
def test_didpo_puts_the_garbage_collector_back_as_it_was(enabled):
    import gc

    was = gc.isenabled()
    batch = [t.to_dict() for t in load_bench().rollouts(1, 4, 3, seed=2)]
    try:
        (gc.enable if enabled else gc.disable)()
        credit.didpo(batch)
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError):
            credit.didpo([{**batch[0], "steps": [{"action": "a", "diff": "not a diff"}]}])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
