"""DiDPO's within-anchor contrast (`baseline="within"`, `credit.baselines.within_anchor_contrast`):
a right edit and its near-duplicate wrong variant share one anchor at the default similarity 0.8;
the contrast baseline gives both the same value, the within-anchor contrast separates them."""
import numpy as np
import pytest
from credit_testlib import added_hunk, code_span, file_diff, insert_call, offsets, token_mask

import credit
from credit.baselines import within_anchor_contrast
from credit.text import similarity

RIGHT = ["def area(w, h):", "    if w < 0 or h < 0:", "    raise ValueError('negative')", "    return w * h"]
WRONG = [line.replace("h < 0", "h <= 0") for line in RIGHT]  # a one-token mutation


def one_step(lines, reward, task="q"):
    action = insert_call("shop.py", lines)
    step = credit.Step(action, file_diff("shop.py", added_hunk(lines, 10)) if lines else "",
                       token_offsets=offsets(action))
    return credit.Trajectory(task, [step], reward)


def on(result, trajs, i, lines):
    action = trajs[i].steps[0].action
    return result.tokens[i][0][token_mask(action, code_span(action, lines))]


def test_near_duplicates_share_one_anchor():
    assert similarity("\n".join(RIGHT), "\n".join(WRONG)) >= 0.8


def test_contrast_gives_no_separation_the_within_anchor_contrast_does():
    trajs = [one_step(RIGHT, 1.0), one_step(RIGHT, 1.0), one_step(WRONG, 0.0), one_step(WRONG, 0.0)]
    old = credit.didpo(trajs, baseline="contrast")
    new = credit.didpo(trajs, baseline="within")
    assert len(old.anchors) == len(new.anchors) == 1 and new.anchors[0].size == 4
    # everyone made the (merged) edit: the contrast sees no effect, for either variant
    assert old.anchors[0].advantage.tolist() == [0.0] * 4
    np.testing.assert_allclose(new.anchors[0].advantage, [1.0, 1.0, -1.0, -1.0])
    for i, sign in enumerate([1, 1, -1, -1]):
        lines = RIGHT if sign > 0 else WRONG
        np.testing.assert_allclose(on(old, trajs, i, lines), 0.5 * sign)  # A^E only
        np.testing.assert_allclose(on(new, trajs, i, lines), 1.5 * sign)  # A^E + W


def test_one_variant_falls_back_to_the_contrast():
    # the edit against rollouts that did not make it: same as baseline="contrast"
    trajs = [one_step(RIGHT, 1.0), one_step(RIGHT, 0.0), one_step([], 0.0), one_step([], 0.0)]
    old = credit.didpo(trajs, baseline="contrast")
    new = credit.didpo(trajs, baseline="within")
    np.testing.assert_allclose(new.anchors[0].advantage, old.anchors[0].advantage)
    np.testing.assert_allclose(new.anchors[0].advantage, [0.5, 0.5])


def test_within_anchor_contrast_arrays():
    # one anchor of units 0-4: variants a (trajectories 0, 1), b (2), c (3, 4); task of 6 trajectories
    members = [np.array([0, 1, 2, 3, 4])]
    unit_traj = np.array([0, 1, 2, 3, 4])
    variant = np.array([7, 7, 8, 9, 9])
    outcome = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    task = np.zeros(6, np.int64)
    (w,) = within_anchor_contrast(members, unit_traj, variant, outcome, task)
    # a: 0.5 - mean(1, 0, 0); b: 1 - mean(1, 0, 0, 0); c: 0 - mean(1, 0, 1)
    np.testing.assert_allclose(w, [0.5 - 1 / 3] * 2 + [0.75] + [-2 / 3] * 2)
    (scaled,) = within_anchor_contrast(members, unit_traj, variant, outcome, task, eps=0.0, use_std=True)
    np.testing.assert_allclose(scaled, w / outcome.std())


def test_baseline_name_is_checked():
    with pytest.raises(ValueError, match="within"):
        credit.didpo([one_step(RIGHT, 1.0)], baseline="inside")
