"""DiDPO's nested baseline (`baseline="nested"`): the choice to edit a region and the choice of how
to edit it get their own contrasts. The call's tokens around the changed lines (tool name, command,
path) get the anchor's Delta (rollouts that made the edit against those that did not), the lines
the within-anchor W (each exact variant against the anchor's other members)."""
import numpy as np
import pytest
from credit_testlib import code_span, token_mask
from test_credit_within import RIGHT, WRONG, one_step

import credit


def with_call(trajectory):
    """The trajectory with its one step's tool-call span given (as the env records it)."""
    (step,) = trajectory.steps
    start, end = step.action.index("<tool_call>") + len("<tool_call>"), step.action.index("</tool_call>")
    calls = [(start, end)] if step.diff else []
    return credit.Trajectory(trajectory.task_id, [credit.Step(step.action, step.diff, token_offsets=step.token_offsets,
                                                              calls=calls)], trajectory.reward)


# two right edits (resolved), one wrong variant (failed), three rollouts that did not edit (failed)
TRAJS = [with_call(t) for t in [one_step(RIGHT, 1.0), one_step(RIGHT, 1.0), one_step(WRONG, 0.0),
                                one_step([], 0.0), one_step([], 0.0), one_step([], 0.0)]]
A_E = np.array([2, 2, -1, -1, -1, -1]) / 3  # r - mean r


def parts(result, i):
    """(tokens of the changed lines, tokens of the call outside them) of trajectory i."""
    step = TRAJS[i].steps[0]
    lines = token_mask(step.action, code_span(step.action, RIGHT if i < 2 else WRONG))
    call = token_mask(step.action, step.calls[0]) & ~lines
    return result.tokens[i][0][lines], result.tokens[i][0][call]


@pytest.mark.parametrize("cover", ["call", "edit"])
def test_the_choice_to_edit_gets_delta_the_choice_of_edit_gets_w(cover):
    nested = credit.didpo(TRAJS, baseline="nested", cover=cover)
    within = credit.didpo(TRAJS, baseline="within", cover=cover)
    contrast = credit.didpo(TRAJS, baseline="contrast", cover=cover)
    (anchor,) = nested.anchors
    assert anchor.size == 3
    w = np.array([1.0, 1.0, -1.0])  # right: 1 - 0; wrong: 0 - 1
    delta = 2 / 3 - 0.0  # editors' mean outcome against the three that did not edit
    np.testing.assert_allclose(anchor.advantage, w)
    np.testing.assert_allclose(within.anchors[0].advantage, w)
    np.testing.assert_allclose(contrast.anchors[0].advantage, [delta] * 3)
    for i in range(3):
        lines, call = parts(nested, i)
        np.testing.assert_allclose(lines, A_E[i] + w[i])
        np.testing.assert_allclose(parts(within, i)[0], lines)
        if cover == "call":  # the tool name, command and path: the decision to edit at all
            assert call.size > 5
            np.testing.assert_allclose(call, A_E[i] + delta)
            np.testing.assert_allclose(parts(contrast, i)[1], call)
            np.testing.assert_allclose(parts(within, i)[1], A_E[i] + w[i])  # within: W all over the call
        else:  # the edit argument adds only its quotes and newline around the lines: outside them, A^E
            np.testing.assert_allclose(call[:3], A_E[i])
    for i in range(3, 6):  # no edit, no anchor: A^E
        np.testing.assert_allclose(nested.tokens[i][0], A_E[i])


def test_with_lines_cover_nested_is_within():
    np.testing.assert_array_equal(np.concatenate([t[0] for t in credit.didpo(TRAJS, baseline="nested").tokens]),
                                  np.concatenate([t[0] for t in credit.didpo(TRAJS, baseline="within").tokens]))


def test_the_tool_name_follows_the_choice_to_edit_even_when_most_edits_are_wrong():
    # one right edit among three wrong ones; editing at all still helps (the three that did not
    # edit failed, one editor resolved). Under within, the wrong editors' call tokens are pushed
    # down (W < 0) more than the right one's are pushed up; nested pushes every editor's call up
    trajs = [with_call(t) for t in [one_step(RIGHT, 1.0), one_step(WRONG, 0.0), one_step(WRONG, 0.0),
                                    one_step(WRONG, 0.0), one_step([], 0.0), one_step([], 0.0)]]
    mean = 1 / 6
    for baseline, net_sign in [("within", -1), ("nested", 1)]:
        result = credit.didpo(trajs, baseline=baseline, cover="call")
        call_extra = []
        for i in range(4):
            step = trajs[i].steps[0]
            name = step.action.index('"name"')
            first = token_mask(step.action, (name, name + 6))  # the tool name's key token
            call_extra.append(result.tokens[i][0][first].mean() - ((1.0 if i == 0 else 0.0) - mean))
        assert np.sign(sum(call_extra)) == net_sign, (baseline, call_extra)
