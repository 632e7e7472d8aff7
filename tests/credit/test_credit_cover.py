"""cover="lines" / "edit" / "call": which characters of a step an anchor occurrence credits."""

import json

import numpy as np
import pytest
from credit_testlib import file_diff, offsets, token_mask

import credit


def str_replace_step():
    """A str_replace whose old_str and new_str both hold an unchanged line (`a = 0`)."""
    args = {"command": "str_replace", "path": "f.py", "old_str": "a = 0\nx = 1", "new_str": "a = 0\nx = 2\ny = 3"}
    call = json.dumps({"name": "str_replace_editor", "arguments": args})
    action = "I fix x.\n<tool_call>" + call + "</tool_call>"
    start = action.index(call)
    old = action.index(json.dumps(args["old_str"])) + 1
    new = action.index(json.dumps(args["new_str"])) + 1
    spans = {"call": (start, start + len(call)), "old": (old, old + len("a = 0\\nx = 1")),
             "new": (new, new + len("a = 0\\nx = 2\\ny = 3")), "name": (action.index("str_replace_editor"),) * 2}
    diff = file_diff("f.py", "@@ -1,2 +1,3 @@\n a = 0\n-x = 1\n+x = 2\n+y = 3\n")
    step = credit.Step(action, diff, token_offsets=offsets(action), calls=[spans["call"]],
                       edits=[(0, "deleted", *spans["old"]), (0, "added", *spans["new"])])
    return step, spans


def run(step, cover):
    # four rollouts make the same edit; rewards 1, 1, 0, 0: A^E = +-0.5 and A^D = +-0.5 for both anchors
    return credit.didpo([credit.Trajectory("q", [step], r) for r in (1, 1, 0, 0)], cover=cover)


def test_lines_credit_the_changed_lines_only():
    step, spans = str_replace_step()
    res = run(step, "lines")
    values, a = res.tokens[0][0], step.action
    new = spans["new"][0]
    changed = token_mask(a, (new + len("a = 0\\n"), spans["new"][1]))
    unchanged = token_mask(a, (new, new + len("a = 0")))
    np.testing.assert_allclose(values[changed], 1.0)
    np.testing.assert_allclose(values[unchanged], 0.5)


def test_edit_credits_the_whole_edit_arguments_and_call_the_whole_call():
    step, spans = str_replace_step()
    a = step.action
    edit = run(step, "edit").tokens[0][0]
    in_edits = token_mask(a, spans["new"]) | token_mask(a, spans["old"])
    np.testing.assert_allclose(edit[in_edits], 1.0)  # `a = 0` too, in both arguments
    np.testing.assert_allclose(edit[~in_edits], 0.5)  # the tool name, the keys, the thought
    call = run(step, "call").tokens[0][0]
    in_call = token_mask(a, spans["call"])
    assert in_call[token_mask(a, (spans["name"][0], spans["name"][0] + len("str_replace_editor")))].all()
    np.testing.assert_allclose(call[in_call], 1.0)
    np.testing.assert_allclose(call[~in_call], 0.5)


def test_a_sed_edit_reaches_its_call_through_line_calls():
    call = json.dumps({"name": "bash", "arguments": {"command": "sed -i 's/x = 1/x = 2/' f.py"}})
    action = "<tool_call>" + call + "</tool_call>"
    span = (len("<tool_call>"), len("<tool_call>") + len(call))
    diff = file_diff("f.py", "@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n")
    attributed = credit.Step(action, diff, token_offsets=offsets(action), calls=[span],
                             line_calls=[("f.py", "deleted", 1, 0), ("f.py", "added", 1, 0)])
    in_call = token_mask(action, span)
    # the lines' text is not in the command as a line: only the attribution places them
    np.testing.assert_allclose(run(attributed, "lines").tokens[0][0], 0.5)
    np.testing.assert_allclose(run(attributed, "call").tokens[0][0][in_call], 1.0)
    unattributed = credit.Step(action, diff, token_offsets=offsets(action), calls=[span])
    np.testing.assert_allclose(run(unattributed, "call").tokens[0][0], 0.5)


def test_without_calls_every_cover_is_lines():
    step, _ = str_replace_step()
    bare = credit.Step(step.action, step.diff, token_offsets=step.token_offsets)
    lines = run(bare, "lines").tokens[0][0]
    for cover in ("edit", "call"):
        np.testing.assert_allclose(run(bare, cover).tokens[0][0], lines)


def test_unknown_cover():
    step, _ = str_replace_step()
    with pytest.raises(ValueError, match="cover must be one of"):
        run(step, "snippet")


def test_token_advantages_pass_the_call_fields_through():
    step, spans = str_replace_step()
    n = len(step.token_offsets)
    mask = np.ones((4, n), bool)
    out = credit.token_advantages(mask, ["q"] * 4, [0, 1, 2, 3], [0] * 4, [1, 1, 0, 0], actions=[step.action] * 4,
                                  diffs=[step.diff] * 4, token_offsets=[step.token_offsets] * 4,
                                  calls=[step.calls] * 4, edits=[step.edits] * 4, cover="call")
    np.testing.assert_allclose(out[0], run(step, "call").tokens[0][0])


def sed_step():
    call = json.dumps({"name": "bash", "arguments": {"command": "sed -i 's/x = 1/x = 2/' f.py"}})
    action = "I edit f.py.\n<tool_call>" + call + "</tool_call>"
    start = action.index(call)
    command = action.index("sed -i")
    command = (command, command + len("sed -i 's/x = 1/x = 2/' f.py"))
    diff = file_diff("f.py", "@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n")
    step = credit.Step(action, diff, token_offsets=offsets(action), calls=[(start, start + len(call))],
                       edits=[(0, "deleted", *command), (0, "added", *command)],
                       line_calls=[("f.py", "deleted", 1, 0), ("f.py", "added", 1, 0)])
    return step, command


def test_lines_put_a_line_with_no_text_of_its_own_on_its_edit_argument():
    step, command = sed_step()
    values = run(step, "lines").tokens[0][0]
    in_command = token_mask(step.action, command)
    np.testing.assert_allclose(values[in_command], 1.0)  # the command made both lines
    np.testing.assert_allclose(values[~in_command], 0.5)  # the thought and the call's markup: A^E only


def test_every_cover_leaves_each_anchor_its_own_lines_tokens():
    # deleted `x = 1` is in old_str; the added `x = 2 if y else 1` is not written as a line (new_str
    # holds a part of it): it goes to new_str, below the own spans of every line
    args = {"path": "f.py", "old_str": "x = 1", "new_str": "x = 2"}
    call = json.dumps({"name": "str_replace", "arguments": args})
    action = "<tool_call>" + call + "</tool_call>"
    old = action.index('"x = 1"') + 1
    new = action.index('"x = 2"') + 1
    diff = file_diff("f.py", "@@ -1,1 +1,1 @@\n-x = 1\n+x = 2 if y else 1\n")
    step = credit.Step(action, diff, token_offsets=offsets(action), calls=[(0, len(action))],
                       edits=[(0, "deleted", old, old + 5), (0, "added", new, new + 5)],
                       line_calls=[("f.py", "deleted", 1, 0), ("f.py", "added", 1, 0)])
    # the deleted line in four rollouts, the added one in two: other A^D values
    other = credit.Step(action.replace("x = 2", "x = 3"), diff.replace("+x = 2 if y else 1", "+z = [9]"),
                        token_offsets=offsets(action), calls=[(0, len(action))],
                        edits=[(0, "deleted", old, old + 5), (0, "added", new, new + 5)],
                        line_calls=[("f.py", "deleted", 1, 0), ("f.py", "added", 1, 0)])
    trajectories = [credit.Trajectory("q", [s], r) for s, r in ((step, 1), (other, 1), (step, 0), (other, 0.5))]
    for cover in ("lines", "edit", "call"):
        res = credit.didpo(trajectories, cover=cover)
        values = res.tokens[0][0] - res.episode[0]
        [deleted] = [a for a in res.anchors if a.kind == "deleted"]
        [added] = [a for a in res.anchors if a.kind == "added" and 0 in a.trajectories]
        assert deleted.gs > added.gs and not np.isclose(deleted.advantage[0], added.advantage[0])
        # the deleted line keeps its text in old_str; the added one, placed on new_str, keeps new_str
        # although the higher-scored deleted anchor covers the whole call too with cover="call"
        np.testing.assert_allclose(values[token_mask(action, (old, old + 5))], deleted.advantage[0])
        np.testing.assert_allclose(values[token_mask(action, (new, new + 5))], added.advantage[0])
