import numpy as np
import pytest
from credit_testlib import added_hunk, code_span, file_diff, insert_call, offsets, token_mask

import credit

AREA = ["def area(w, h):", "    if w < 0 or h < 0:", "        raise ValueError('negative')", "    return w * h"]


def test_one_row_per_step_matches_the_trajectory_api():
    action = insert_call("geo.py", AREA)
    diff = file_diff("geo.py", added_hunk(AREA, 10))
    off = offsets(action)
    n = off.shape[0]
    # rows: 4 rollouts (rewards 1, 1, 0, 0); left padding of 3 and right padding of 2 in each row
    mask = np.zeros((4, n + 5), bool)
    mask[:, 3:3 + n] = True
    adv = credit.token_advantages(mask, ["q"] * 4, [10, 11, 12, 13], [0, 0, 0, 0], [1.0, 1.0, 0.0, 0.0],
                                  actions=[action] * 4, diffs=[diff] * 4, token_offsets=[off] * 4)
    assert adv.shape == mask.shape and isinstance(adv, np.ndarray)
    assert (adv[~mask] == 0).all()
    inside = token_mask(action, code_span(action, AREA))
    np.testing.assert_allclose(adv[0, 3:3 + n][inside], 1.0)
    np.testing.assert_allclose(adv[3, 3:3 + n][~inside], -0.5)
    step = credit.Step(action, diff, token_offsets=off)
    ref = credit.didpo([credit.Trajectory("q", [step], r) for r in (1, 1, 0, 0)])
    np.testing.assert_allclose(adv[2, 3:3 + n], ref.tokens[2][0])


def test_one_row_per_trajectory_with_action_ranges_and_torch():
    torch = pytest.importorskip("torch")
    # two trajectories of two steps; each row holds both steps' tokens at the given spans
    mask = torch.zeros((2, 12), dtype=torch.bool)
    mask[:, 1:5] = True
    mask[:, 7:10] = True
    spans = np.array([[1, 5], [7, 10], [1, 5], [7, 10]])
    adv, res = credit.token_advantages(
        mask, ["q"] * 4, ["a", "a", "b", "b"], [0, 1, 0, 1], [1.0, 1.0, 0.0, 0.0],
        estimator="gigpo", rows=[0, 0, 1, 1], token_spans=spans, observations=["s", "t", "s", "u"],
        gamma=0.5, return_result=True)
    assert isinstance(adv, torch.Tensor) and adv.dtype == torch.float32 and adv.shape == (2, 12)
    # trajectory a: A^E = 0.5; step 0 shares "s" with b: returns 0.5 vs 0 -> A^S = 0.25
    np.testing.assert_allclose(adv[0, 1:5].numpy(), 0.75)
    np.testing.assert_allclose(adv[0, 7:10].numpy(), 0.5)
    np.testing.assert_allclose(adv[1, 1:5].numpy(), -0.75)
    assert (adv[~mask] == 0).all()
    assert res.estimator == "gigpo"


def test_rows_may_come_in_any_order():
    mask = np.ones((4, 2), bool)
    # steps of trajectory "x" given out of order; "y" has reward 0
    adv = credit.token_advantages(mask, [0, 0, 0, 0], ["x", "y", "x", "y"], [1, 0, 0, 1], [1, 0, 1, 0],
                                  estimator="dr_grpo")
    np.testing.assert_allclose(adv, [[0.5, 0.5], [-0.5, -0.5], [0.5, 0.5], [-0.5, -0.5]])


@pytest.mark.parametrize("kwargs, message", [
    ({"rewards": [1.0, 0.0, 1.0]}, "rewards and group_ids must be the same on all its steps"),
    ({"step_ids": [0, 0, 0], "trajectory_ids": ["run-7", "run-7", "run-9"]}, "trajectory 'run-7' has repeated step_ids"),
    # two steps of one row whose token spans overlap: the later one's values overwrote the earlier's
    ({"rows": [0, 0, 1], "token_spans": [[0, 2], [1, 2], [0, 2]]}, r"token_spans of steps 0 \[0, 2\] and 1 \[1, 2\] overlap in row 0"),
    ({"token_offsets": [[(0, 1)], None, None]}, "1 token_offsets but 2 response tokens"),
    ({"diffs": ["", ""]}, "diffs has length 2"),
    ({"token_ids": [[1, 2], [3], [4, 5]]}, "1 token_ids but 2 response tokens"),
    ({"logprobs": [[-1.0, -2.0, -3.0], None, None]}, "3 logprobs but 2 response tokens"),
    ({"estimator": "ppo"}, "unknown estimator 'ppo'"),
])
def test_bad_arrays(kwargs, message):
    args = {"response_mask": np.ones((3, 2), bool), "group_ids": [0, 0, 0], "trajectory_ids": [0, 0, 1],
            "step_ids": [0, 1, 0], "rewards": [1.0, 1.0, 0.0], "actions": ["ab", "ab", "ab"]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        credit.token_advantages(**args)


def test_token_ids_and_logprobs_reach_the_estimator_on_its_steps():
    seen = []

    def estimator(trajectories, **options):
        seen.extend((s.token_ids.tolist(), s.logprobs.tolist()) for t in trajectories for s in t.steps)
        return credit.grpo(trajectories, **options)

    credit.token_advantages(np.ones((2, 2), bool), [0, 0], [0, 1], [0, 0], [1.0, 0.0], estimator=estimator,
                            token_ids=[[5, 6], [7, 8]], logprobs=[[-0.5, -1.0], [-2.0, -0.25]])
    assert seen == [([5, 6], [-0.5, -1.0]), ([7, 8], [-2.0, -0.25])]


def test_rows_must_be_given_when_steps_share_rows():
    with pytest.raises(ValueError, match="pass `rows`"):
        credit.token_advantages(np.ones((1, 4), bool), [0, 0], [0, 0], [0, 1], [1.0, 1.0])
    with pytest.raises(ValueError, match="pass token_spans"):
        credit.token_advantages(np.ones((1, 4), bool), [0, 0], [0, 0], [0, 1], [1.0, 1.0], rows=[0, 0])
