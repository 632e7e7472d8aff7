import math

import numpy as np

import credit


def traj(observations, reward, task="q"):
    steps = [credit.Step("ab", "", token_offsets=[(0, 1), (1, 2)], observation=o) for o in observations]
    return credit.Trajectory(task, steps, reward)


def test_step_advantage_over_identical_observations():
    trajs = [traj(["start", "A"], 1), traj(["start", "B"], 0), traj(["start", "A"], 0)]
    res = credit.gigpo(trajs, gamma=0.5)
    # returns: [0.5, 1], [0, 0], [0, 0]; "start" group [0.5, 0, 0]; "A" group [1, 0]; "B" alone
    np.testing.assert_allclose(res.steps.returns, [0.5, 1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(res.steps.advantage, [1 / 3, 0.5, -1 / 6, 0.0, -1 / 6, -0.5])
    e = 1 / 3 * 2  # A^E of trajectory 0: 1 - mean(1, 0, 0)
    np.testing.assert_allclose(res.tokens[0][0], [e + 1 / 3] * 2)
    assert sorted(a.size for a in res.anchors) == [2, 3]
    assert all(a.kind == "observation" and math.isnan(a.gs) for a in res.anchors)


def test_omega_and_tasks_and_missing_observations():
    trajs = [traj(["s"], 1), traj(["s"], 0), traj(["s"], 1, task="other"), traj([None], 0, task="other")]
    res = credit.gigpo(trajs, omega=2.0)
    # "s" in task q: returns [1, 0] -> A^S [0.5, -0.5]; "s" in task other is alone -> 0; None -> 0
    np.testing.assert_allclose(res.steps.advantage, [1.0, -1.0, 0.0, 0.0])
    np.testing.assert_allclose(res.tokens[1][0], [-0.5 - 1.0] * 2)


def test_mean_std_norm():
    trajs = [traj(["s"], r) for r in (1, 0, 0)]
    res = credit.gigpo(trajs, mode="mean_std_norm", eps=0.0)
    g = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(res.steps.advantage, (g - g.mean()) / g.std(ddof=1))
