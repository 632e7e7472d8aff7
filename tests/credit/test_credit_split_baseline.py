"""DiDPO's split baseline (`baseline="split"`, `credit.baselines.anchor_effect_split`): each anchor's
effect on the outcome with the task's other anchors held fixed, in units of its standard error,
split between the trajectories that make the edit and those that leave it out. Where regions add
up with uneven weights, the choice to leave a region alone gets the right sign, which the episode's
outcome (GRPO's credit) gives it only on average."""
import itertools

import numpy as np
from credit_testlib import added_hunk, code_span, file_diff, insert_call, offsets, token_mask

import credit
from credit.baselines import anchor_effect_split

REGION = {"a.py": ["def total(xs):", "    s = 0", "    for x in xs:", "        s += x", "    return s"],
          "b.py": ["def mean(xs):", "    if not xs:", "        return 0.0", "    return sum(xs) / len(xs)"]}
WEIGHT = {"a.py": 0.9, "b.py": 0.1}
SHARED = ["def clamp(x, lo, hi):", "    return max(lo, min(x, hi))"]  # region a fixes most of the tests, b one of them


def call_span(action: str) -> tuple[int, int]:
    return action.index("<tool_call>") + len("<tool_call>"), action.index("</tool_call>")


def step(path: str, fixed: bool) -> credit.Step:
    """An edit of the region in `path`, or a step that only looks at the file (no diff)."""
    if fixed:
        action = insert_call(path, REGION[path])
        return credit.Step(action, file_diff(path, added_hunk(REGION[path], 10)), token_offsets=offsets(action),
                           calls=[call_span(action)])
    action = f'Leave it.\n<tool_call>{{"name": "view", "arguments": {{"path": "{path}"}}}}</tool_call>'
    return credit.Step(action, "", token_offsets=offsets(action), calls=[call_span(action)])


def batch(copies: int = 2):
    """Every combination of fixing the two regions, `copies` times; outcome = the fixed weights."""
    trajs, made = [], []
    for fixed in itertools.product([True, False], repeat=2):
        for _ in range(copies):
            reward = sum(WEIGHT[p] for p, f in zip(REGION, fixed) if f)
            trajs.append(credit.Trajectory("q", [step(p, f) for p, f in zip(REGION, fixed)], reward))
            made.append(fixed)
    return trajs, np.array(made)


def test_split_arrays_on_additive_regions():
    # 8 trajectories, every combination twice; r = 0.9 x_a + 0.1 x_b exactly: both effects are
    # exact (no residual), so both anchors get one unit whatever their weight
    made = np.array(list(itertools.product([1, 0], repeat=2)) * 2)
    outcome = made @ np.array([0.9, 0.1])
    members = [np.flatnonzero(made[:, 0]), 8 + np.flatnonzero(made[:, 1])]
    unit_traj = np.concatenate([np.arange(8), np.arange(8)])
    shares, rest = anchor_effect_split(members, unit_traj, outcome, np.zeros(8, np.int64), outcome - outcome.mean())
    np.testing.assert_allclose(shares[0], 0.5, atol=1e-5)  # u (1 - xbar) = 1 * 0.5 (no residual)
    np.testing.assert_allclose(shares[1], 0.5, atol=1e-5)
    # left out: -u xbar per anchor left out
    np.testing.assert_allclose(rest, -0.5 * (1 - made).sum(axis=1), atol=1e-5)
    # GRPO's credit (r - mean) for leaving b out while fixing a is +0.4: the wrong sign for that choice
    a_only = (made[:, 0] == 1) & (made[:, 1] == 0)
    assert (outcome - outcome.mean())[a_only].min() > 0 > rest[a_only].max()


def test_an_anchor_without_effect_gets_less_than_a_unit_and_the_unexplained_goes_to_all_tokens():
    rng = np.random.default_rng(0)
    made = rng.integers(0, 2, (32, 2)).astype(float)
    outcome = made[:, 0] + rng.normal(0, 0.3, 32)  # only anchor 0 matters; anchor 1 is noise
    members = [np.flatnonzero(made[:, k]) for k in range(2)]
    members[1] = members[1] + 32
    unit_traj = np.concatenate([np.arange(32), np.arange(32)])
    shares, rest = anchor_effect_split(members, unit_traj, outcome, np.zeros(32, np.int64), np.zeros(32))
    mean = made.mean(axis=0)
    # every occurrence of trajectory j carries j's residual: their difference is the units' part
    both = np.flatnonzero(made.all(axis=1))
    diff = shares[0][np.searchsorted(members[0], both)] - shares[1][np.searchsorted(members[1] - 32, both)]
    u1 = ((1.0 - mean[0]) - diff) / (1.0 - mean[1])  # anchor 0's effect is clear: u0 = 1
    np.testing.assert_allclose(u1, u1[0])
    assert abs(u1[0]) < 0.5  # noise: a fraction of one unit
    # the residual (over the outcome std) is what no anchor explains: it sums to zero over the task
    none = np.flatnonzero(~made.any(axis=1))
    residual = rest[none] + (1.0 * mean[0] + u1[0] * mean[1])
    fit = np.linalg.lstsq(np.c_[np.ones(32), made], outcome, rcond=None)[0]
    expected = (outcome - np.c_[np.ones(32), made] @ fit) / outcome.std()
    np.testing.assert_allclose(residual, expected[none], atol=1e-4)


def test_didpo_split_credits_both_sides_of_each_region():
    trajs, made = batch()
    result = credit.didpo(trajs, baseline="split", cover="call")
    assert len(result.anchors) == 2
    for i, traj in enumerate(trajs):
        for k, st in enumerate(traj.steps):
            values = result.tokens[i][k]
            (a, b), off = call_span(st.action), offsets(st.action)
            call = (off[:, 0] >= a) & (off[:, 1] <= b)
            if made[i, k]:  # the edit's call, tool name included: its share of the anchor's effect
                np.testing.assert_allclose(values[call], 0.5, atol=1e-5)
            else:  # the step that left the region alone: -u xbar of each region left out
                np.testing.assert_allclose(values, -0.5 * (1 - made[i]).sum(), atol=1e-5)
    # under GRPO the step that left b alone in a trajectory that fixed a gets a positive advantage
    grpo = credit.get("grpo")(trajs)
    a_only = [i for i in range(len(trajs)) if made[i, 0] and not made[i, 1]]
    assert all(grpo.tokens[i][1].min() > 0 for i in a_only)
    assert all(result.tokens[i][1].max() < 0 for i in a_only)


def test_a_task_without_anchors_keeps_the_episode_advantage():
    trajs, _ = batch()
    alone = [credit.Trajectory("other", [step("a.py", False)], r) for r in (1.0, 0.0)]
    result = credit.didpo(trajs + alone, baseline="split", cover="call")
    episode = credit.didpo(trajs + alone).episode
    for i in (len(trajs), len(trajs) + 1):
        np.testing.assert_allclose(result.tokens[i][0], episode[i])


def test_an_edits_deleted_and_added_sides_are_one_choice():
    # a replacement gives two anchors made by the same trajectories (its old and new lines): one
    # column of the fit, and leaving the edit out costs its share once, not twice
    made = np.array(list(itertools.product([1, 0], repeat=2)) * 2)
    outcome = made @ np.array([0.9, 0.1])
    unit_traj = np.concatenate([np.arange(8)] * 3)
    old, new, other = (np.flatnonzero(made[:, k]) + 8 * j for j, k in enumerate([0, 0, 1]))
    shares, rest = anchor_effect_split([old, new, other], unit_traj, outcome, np.zeros(8, np.int64), np.zeros(8))
    _, rest_alone = anchor_effect_split([old, other], unit_traj, outcome, np.zeros(8, np.int64),
                                            np.zeros(8))
    np.testing.assert_allclose(shares[0], 0.5, atol=1e-5)
    np.testing.assert_allclose(shares[1], 0.5, atol=1e-5)
    np.testing.assert_allclose(rest, rest_alone, atol=1e-5)
    np.testing.assert_allclose(rest, -0.5 * (1 - made).sum(axis=1), atol=1e-5)


def test_two_ways_of_one_region_and_an_edit_every_trajectory_makes_keep_their_contrast():
    # trajectories 0-3 write the region one way (reward 1 .. 0.7), 4-7 another way (0.3 .. 0): the
    # two columns split the trajectories (x_b = 1 - x_a); all eight also make the same shared edit,
    # a column with no contrast. The fit has no unique answer; the ways' contrast is still clear.
    outcome = np.array([1.0, 0.9, 0.8, 0.7, 0.3, 0.2, 0.1, 0.0])
    way_a, way_b, shared = np.arange(4), np.arange(4, 8), 8 + np.arange(8)  # unit ids
    unit_traj = np.concatenate([np.arange(4), np.arange(4, 8), np.arange(8)])
    task = np.zeros(8, np.int64)
    shares, rest = anchor_effect_split([way_a, way_b, shared], unit_traj, outcome, task, np.zeros(8))
    residual = (outcome - np.where(np.arange(8) < 4, 0.85, 0.15)) / (outcome.std() + 1e-6)
    # each way: u = +-1 (a clear effect), share u (1 - xbar) = +-0.5, plus the residual
    np.testing.assert_allclose(shares[0], 0.5 + residual[:4], atol=1e-6)
    np.testing.assert_allclose(shares[1], -0.5 + residual[4:], atol=1e-6)
    np.testing.assert_allclose(shares[2], residual, atol=1e-6)  # the shared edit: no effect of its own
    # leaving out the other way: -u xbar of it
    np.testing.assert_allclose(rest, np.where(np.arange(8) < 4, 0.5, -0.5) + residual, atol=1e-6)
    # the same through didpo: each trajectory writes m.py one of two ways and the same n.py
    trajs = []
    for k, reward in enumerate(outcome):
        lines = REGION["a.py"] if k < 4 else REGION["b.py"]
        action = insert_call("m.py", lines) + insert_call("n.py", SHARED)
        diff = file_diff("m.py", added_hunk(lines, 10)) + file_diff("n.py", added_hunk(SHARED, 1))
        trajs.append(credit.Trajectory("q", [credit.Step(action, diff, token_offsets=offsets(action))], float(reward)))
    result = credit.didpo(trajs, baseline="split")
    assert sorted(a.size for a in result.anchors) == [4, 4, 8]
    for j, (values,) in enumerate(result.tokens):
        action = trajs[j].steps[0].action
        shared_lines = token_mask(action, code_span(action, SHARED))
        # the shared edit's lines: no effect of their own; the rest: the way's share (its lines) and
        # the other way's rest (every other token), both +-0.5
        np.testing.assert_allclose(values[shared_lines], residual[j], atol=1e-6)
        np.testing.assert_allclose(values[~shared_lines], (0.5 if j < 4 else -0.5) + residual[j], atol=1e-6)
