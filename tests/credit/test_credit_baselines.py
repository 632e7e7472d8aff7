import numpy as np
import pytest

import credit


def batch(rewards, n_steps=1, task="q"):
    steps = [credit.Step("ab", "", token_offsets=[(0, 1), (1, 2)]) for _ in range(n_steps)]
    return [credit.Trajectory(task, steps, r) for r in rewards]


def test_grpo_divides_by_the_unbiased_std():
    res = credit.grpo(batch([1, 1, 0, 0]), eps=0.0)
    np.testing.assert_allclose(res.episode, np.array([0.5, 0.5, -0.5, -0.5]) / np.sqrt(1 / 3))
    np.testing.assert_allclose(res.tokens[0][0], [res.episode[0]] * 2)
    assert res.anchors == () and res.estimator == "grpo"


def test_dr_grpo_only_centres():
    res = credit.dr_grpo(batch([3, 1]))
    np.testing.assert_allclose(res.episode, [1.0, -1.0])


def test_rloo_leaves_one_out():
    # r - mean of the others: 3 - 1.5, 2 - 2, 1 - 2.5
    res = credit.rloo(batch([3, 2, 1]))
    np.testing.assert_allclose(res.episode, [1.5, 0.0, -1.5])
    np.testing.assert_allclose(credit.rloo(batch([3])).episode, [3.0])
    np.testing.assert_allclose(credit.rloo(batch([3]), singleton="zero").episode, [0.0])


def test_rloo_with_steps_counted_leaves_the_whole_trajectory_out():
    trajs = batch([1], n_steps=3) + batch([0, 0], n_steps=1)
    res = credit.rloo(trajs, count="steps")
    # trajectory 0 against 2 samples of 0; trajectory 1 against 3 samples of 1 and 1 of 0
    np.testing.assert_allclose(res.episode, [1.0, -0.75, -0.75])
    # the default counts each trajectory once: 1 - 0, 0 - 0.5, 0 - 0.5
    np.testing.assert_allclose(credit.rloo(trajs).episode, [1.0, -0.5, -0.5])


def test_steps_carry_returns_and_zero_step_advantage():
    res = credit.dr_grpo(batch([1, 0], n_steps=2), gamma=0.5)
    np.testing.assert_allclose(res.steps.returns, [0.5, 1.0, 0.0, 0.0])
    assert res.steps.advantage.tolist() == [0.0] * 4
    assert res.steps.trajectory.tolist() == [0, 0, 1, 1] and res.steps.index.tolist() == [0, 1, 0, 1]


def test_tasks_are_separate_groups():
    res = credit.dr_grpo(batch([1, 0]) + batch([5, 5], task="other"))
    np.testing.assert_allclose(res.episode, [0.5, -0.5, 0.0, 0.0])


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo"])
def test_steps_without_offsets_have_no_token_array(name):
    trajs = [credit.Trajectory("q", [credit.Step("a", "")], r) for r in (1, 0)]
    assert credit.get(name)(trajs).tokens == [[None], [None]]
