import json

import numpy as np
import pytest

import credit


def test_step_and_trajectory_round_trip_through_jsonl(tmp_path):
    step = credit.Step("abc", "", reward=0.5, token_offsets=[(0, 1), (1, 3)], provenance=[("a.py", 2, 0, 3)],
                       observation="obs")
    traj = credit.Trajectory("task", [step, {"action": "x", "diff": ""}], 1)
    path = tmp_path / "t.jsonl"
    credit.dump_jsonl([traj, traj.to_dict()], path)
    loaded = credit.load_jsonl(path)
    assert len(loaded) == 2
    assert loaded[0].to_dict() == traj.to_dict()
    assert loaded[0].steps[0].provenance == (("a.py", 2, 0, 3),)
    assert loaded[0].steps[0].offsets.tolist() == [[0, 1], [1, 3]]
    assert json.loads(path.read_text().splitlines()[0])["steps"][1]["reward"] == 0.0


def test_provenance_dicts_and_tuples_are_the_same():
    a = credit.Step("abcdef", "", provenance=[{"path": "p", "line": 1, "start": 0, "end": 2}])
    b = credit.Step("abcdef", "", provenance=[("p", 1, 0, 2)])
    assert a.provenance == b.provenance == (("p", 1, 0, 2),)


def test_zero_width_special_tokens_are_allowed_anywhere():
    step = credit.Step("abcd", "", token_offsets=np.array([[0, 2], [0, 0], [2, 4], [4, 4]]))
    assert step.offsets.shape == (4, 2)


@pytest.mark.parametrize("bad, message", [
    ({"action": "x"}, "missing 'diff'"),
    ({"diff": ""}, "missing 'action'"),
    ({"action": "x", "diff": "", "diffs": ""}, "unknown keys"),
    ({"action": "x", "diff": None}, "use '' for a step that changed nothing"),
    ({"action": "abcd", "diff": "", "token_offsets": [(2, 4), (0, 2)]}, "not monotonic"),
    ({"action": "ab", "diff": "", "token_offsets": [(0, 5)]}, "the action has 2 characters"),
    ({"action": "ab", "diff": "", "token_offsets": [0, 1]}, r"shape \(n_tokens, 2\)"),
    ({"action": "ab", "diff": "", "provenance": [("p", 0, 0, 1)]}, "need line >= 1"),
    ({"action": "ab", "diff": "", "provenance": [{"path": "p", "line": 1}]}, "lacks key"),
    ({"action": "ab", "diff": "", "reward": float("nan")}, "finite"),
    ({"action": "ab", "diff": "", "reward": "1"}, "Step.reward must be a number, got str '1'"),  # float() took it
])
def test_bad_steps_say_what_is_wrong(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        credit.Step.from_dict(bad)


def test_errors_name_the_trajectory_and_step():
    trajs = [{"task_id": "q", "steps": [{"action": "a", "diff": ""}], "reward": 1},
             {"task_id": "q", "steps": [{"action": "a", "diff": ""}, {"action": "b"}], "reward": 0}]
    with pytest.raises(ValueError, match=r"trajectory 1: task 'q', step 1: step is missing 'diff'"):
        credit.didpo(trajs)


def test_load_jsonl_reports_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good, bad = json.dumps({"task_id": "q", "steps": [], "reward": 1}), json.dumps({"task_id": "q"})
    path.write_text(good + "\n\n" + bad + "\n")
    with pytest.raises(ValueError, match="line 3: trajectory is missing"):
        credit.load_jsonl(path)


def test_a_single_trajectory_is_not_a_batch():
    with pytest.raises(TypeError, match="list of trajectories"):
        credit.grpo(credit.Trajectory("q", [], 1.0))


def _batch(offsets_per_step, actions=None):
    actions = actions or ["abcdef"] * len(offsets_per_step)
    return [{"task_id": "q", "reward": 1.0, "steps": [
        {"action": a, "diff": "", "token_offsets": o} for a, o in zip(actions, offsets_per_step)]}]


def test_list_offsets_of_a_batch_are_kept_as_lists_and_counted():
    from credit.types import as_trajectories
    offsets = [[[0, 2], [2, 6]], [[0, 0], [0, 3]], []]
    trajs = as_trajectories(_batch(offsets))
    assert [s.token_offsets for s in trajs[0].steps] == offsets
    assert [len(t) for t in credit.grpo(_batch(offsets)).tokens[0]] == [2, 2, 0]


@pytest.mark.parametrize("offsets, message", [
    ([[0, 2], [2, 4]], None),
    ([[0, 2], [1, 2, 3]], "token_offsets"),
    ([[0, 2], [4, "x"]], "token_offsets"),
    ([[0, 2], [4, 9]], "the action has 6 characters"),
    ([[2, 4], [0, 2]], "not monotonic"),
    ([[-1, 2]], "0 <= start <= end"),
    ([[3, 2]], "0 <= start <= end"),
])
def test_batch_offset_checks_name_the_step_like_the_per_step_check(offsets, message):
    batch = _batch([[[0, 1]], offsets])
    if message is None:
        assert credit.grpo(batch).tokens[0][1].shape == (2,)
        return
    with pytest.raises((ValueError, TypeError), match=r"trajectory 0: task 'q', step 1: .*" + message):
        credit.grpo(batch)


def test_a_bad_entry_inside_list_offsets_is_counted_where_no_span_reads_it():
    # documented: list offsets are checked in full only where the estimators read them
    batch = _batch([[[0, 2], [4, "x"], [1, 0], [2, 6]]])
    assert credit.grpo(batch).tokens[0][0].shape == (4,)


def test_token_ids_and_logprobs_round_trip_through_jsonl(tmp_path):
    step = credit.Step("abc", "", token_offsets=[(0, 1), (1, 3)], token_ids=[17, 4], logprobs=[-0.25, -1.5])
    assert step.token_ids.dtype == np.int64 and step.logprobs.tolist() == [-0.25, -1.5]
    path = tmp_path / "t.jsonl"
    credit.dump_jsonl([credit.Trajectory("q", [step], 1.0)], path)
    back = credit.load_jsonl(path)[0].steps[0]
    assert back.token_ids.tolist() == [17, 4] and back.logprobs.tolist() == [-0.25, -1.5]
    assert json.loads(path.read_text())["steps"][0]["token_ids"] == [17, 4]


@pytest.mark.parametrize("fields, message", [
    ({"token_ids": [1]}, "token_ids has 1 entries but token_offsets has 2"),
    ({"logprobs": [-1.0, -2.0, -3.0]}, "logprobs has 3 entries but token_offsets has 2"),
    ({"token_ids": [1.5, 2.0]}, "token_ids must be integers"),
    ({"logprobs": [-1.0, float("nan")]}, "logprobs must be finite"),
    ({"token_ids": [[1, 2]]}, "token_ids must be 1-D"),
])
def test_bad_token_ids_and_logprobs_say_what_is_wrong(fields, message):
    step = {"action": "abc", "diff": "", "token_offsets": [[0, 1], [1, 3]], **fields}
    with pytest.raises(ValueError, match=message):
        credit.Step.from_dict(step)
    if "entries" in message or "finite" in message:  # the batch path, which keeps lists, checks them too
        with pytest.raises(ValueError, match=r"trajectory 0: task 'q', step 0: " + message):
            credit.grpo([{"task_id": "q", "reward": 1.0, "steps": [step]}])


def test_calls_edits_and_line_calls_round_trip_and_accept_dicts(tmp_path):
    action = '<tool_call>{"name": "edit", "arguments": {"old_str": "a", "new_str": "b"}}</tool_call>'
    step = credit.Step(action, "", calls=[{"start": 11, "end": len(action) - 12}],
                       edits=[(0, "deleted", 54, 55), {"call": 0, "kind": "added", "start": 70, "end": 71}],
                       line_calls=[("f.py", "added", 3, 0)])
    assert step.calls == ((11, len(action) - 12),)
    assert step.edits == ((0, "deleted", 54, 55), (0, "added", 70, 71))
    assert step.line_calls == (("f.py", "added", 3, 0),)
    path = tmp_path / "t.jsonl"
    credit.dump_jsonl([credit.Trajectory("q", [step], 1.0)], path)
    back = credit.load_jsonl(path)[0].steps[0]
    assert (back.calls, back.edits, back.line_calls) == (step.calls, step.edits, step.line_calls)


@pytest.mark.parametrize("fields, message", [
    ({"calls": [(0, 9)]}, "len\\(action\\) = 2"),
    ({"edits": [(0, "added", 0, 1)]}, "not an index into the step's 0 calls"),
    ({"calls": [(0, 2)], "edits": [(0, "new", 0, 1)]}, "kind must be one of"),
    ({"calls": [(0, 2)], "line_calls": [("p", "added", 0, 0)]}, "line >= 1"),
    ({"calls": [{"start": 0}]}, "lacks key 'end'"),
])
def test_bad_call_fields_say_what_is_wrong(fields, message):
    with pytest.raises(ValueError, match=message):
        credit.Step("ab", "", **fields)
