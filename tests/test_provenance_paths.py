"""Every edit path through the real env: the step's changed lines are attributed to the call that
made them, its spans locate the written text, and credit.didpo gives those tokens the anchor's A^D."""
import json
import re

import gymnasium as gym
import numpy as np
import pytest

import credit
from code_gym.actions.parse import canonical_text, parse_action
from code_gym.actions.provenance import bash_bodies
from code_gym.env.trajectory import RecordTrajectory

FIX_ADD = {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b", "new_str": "def add(a, b):\n    return a + b"}
TOKEN_RE = re.compile(r"\w+|[^\w\s]|\s+")


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def bash(command):
    return call("bash", command=command)


def tokens(text):
    return np.array([m.span() for m in TOKEN_RE.finditer(text)], np.int64).reshape(-1, 2)


# path -> (action of a variant: "*" or "**" in the written line, the written line, cover that reaches it)
PATHS = {
    "str_replace": (lambda op: call("str_replace", path="calc/ops.py", old_str="def mul(a, b):\n    return a + b",
                                    new_str=f"def mul(a, b):\n    return a {op} b"), "    return a {op} b", "lines"),
    "create": (lambda op: call("create", path="calc/extra.py", file_text=f"def triple(x):\n    return x {op} 3\n"),
               "    return x {op} 3", "lines"),
    "insert": (lambda op: call("insert", path="calc/ops.py", insert_line=6,
                               new_str=f"\n\ndef neg(a):\n    return a {op} -1"), "    return a {op} -1", "lines"),
    "bash sed": (lambda op: bash(f"sed -i 's/return a + b/return a {op} b/' calc/ops.py"), "    return a {op} b", "call"),
    "bash heredoc": (lambda op: bash(f"cat > calc/extra.py <<'EOF'\ndef triple(x):\n    return x {op} 3\nEOF"),
                     "    return x {op} 3", "lines"),
    "bash printf": (lambda op: bash(f"printf 'def triple(x):\\n    return x {op} 3\\n' > calc/extra.py"),
                    "    return x {op} 3", "lines"),
    "python script": (lambda op: bash("python -c \"import pathlib; p = pathlib.Path('calc/ops.py'); "
                                      f"p.write_text(p.read_text().replace('return a + b', 'return a {op} b'))\""),
                      "    return a {op} b", "lines"),
    "openai dict": (lambda op: {"type": "function", "function": {"name": "str_replace", "arguments": json.dumps(
        {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b",
         "new_str": f"def mul(a, b):\n    return a {op} b"})}}, "    return a {op} b", "lines"),
    "openai tool_calls": (lambda op: {"role": "assistant", "content": "fixing mul", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
            {"command": f"cat > calc/extra.py <<'EOF'\ndef triple(x):\n    return x {op} 3\nEOF"})}}]},
        "    return x {op} 3", "lines"),
}


def play(task, actions):
    env = RecordTrajectory(gym.make("CodeRepo-v0", task=task))
    env.reset(seed=0)
    infos = [env.step(a)[4] for a in actions]
    infos.append(env.step(call("submit"))[4])
    env.close()
    traj = infos[-1]["trajectory"]
    steps = [credit.Step.from_dict(s.to_dict(), token_offsets=tokens(s.action)) for s in traj.steps]
    return credit.Trajectory(task_id=traj.task_id, steps=steps, reward=traj.reward), infos


@pytest.mark.parametrize("path", list(PATHS))
def test_edit_path_is_attributed_and_credited(tiny_task, path):
    make, line, cover = PATHS[path]
    good, good_infos = play(tiny_task, [make("*"), call("str_replace", **FIX_ADD)])
    bad, bad_infos = play(tiny_task, [make("**")])
    assert good.reward != bad.reward
    result = credit.didpo([good, bad], cover=cover)
    rows = result.steps
    for i, (traj, info, op) in enumerate(((good, good_infos[0], "*"), (bad, bad_infos[0], "**"))):
        step = traj.steps[0]
        want = line.format(op=op)
        # the written line is attributed to call 0, the step's only call, and its span locates it
        assert info["line_calls"] and {c["call"] for c in info["line_calls"]} == {0}
        [added] = [p for p in info["provenance"] if any(
            lc["kind"] == "added" and lc["line"] == p["line"] and lc["path"] == p["path"] for lc in info["line_calls"])
            and f"{op} " in step.action[p["start"]:p["end"]]]
        spanned = step.action[added["start"]:added["end"]]
        if path == "bash sed":
            assert spanned == f"return a {op} b"  # the s/old/new/ expression's new text
        else:
            assert spanned.strip() == want.strip() or json.loads(f'"{spanned}"').strip() == want.strip()
        assert info["calls"][0]["start"] <= added["start"] < added["end"] <= info["calls"][0]["end"]
        # credit: the tokens of that span carry A^E + A^D of the step's occurrence
        row = sum(len(t.steps) for t in (good, bad)[:i])
        values = rows.diff_advantage[rows.diff_row == row]
        assert values.size and np.all(values != 0)
        offsets = step.offsets
        hit = (offsets[:, 0] < added["end"]) & (offsets[:, 1] > added["start"])
        extra = np.asarray(result.tokens[i][0])[hit] - result.episode[i]
        assert hit.any() and np.all(np.isin(np.round(extra, 9), np.round(values, 9))), (path, extra, values)


def test_two_calls_in_one_step_each_get_their_lines(tiny_task):
    action = (call("str_replace", **FIX_ADD) + "\n" + call("view", path="calc/ops.py") + "\n"
              + bash("sed -i '6s/a + b/a * b/' calc/ops.py"))
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    info = env.step(action)[4]
    env.close()
    # line 2 (add) by call 0, line 6 (mul) by call 2; each as added in the new file, deleted in the old
    assert sorted((c["kind"], c["line"], c["call"]) for c in info["line_calls"]) == [
        ("added", 2, 0), ("added", 6, 2), ("deleted", 2, 0), ("deleted", 6, 2)]
    by_line = {p["line"]: action[p["start"]:p["end"]] for p in info["provenance"]}
    # line 6: `a * b` is not the line; no span of its own (credit puts it on the call's command)
    assert by_line[2] == "    return a + b" and 6 not in by_line
    assert [action[c["start"]:c["end"]][:11] for c in info["calls"]] == ["<tool_call>"] * 3
    edits = {(e["call"], e["kind"]): action[e["start"]:e["end"]] for e in info["edits"]}
    assert edits[(0, "added")] == json.dumps(FIX_ADD["new_str"])[1:-1]
    assert edits[(0, "deleted")] == json.dumps(FIX_ADD["old_str"])[1:-1]
    assert edits[(2, "added")].startswith("sed -i")


def test_a_line_rewritten_by_a_later_call_goes_to_that_call(tiny_task):
    action = (call("str_replace", path="calc/ops.py", old_str="return a - b", new_str="return a * b") + "\n"
              + call("str_replace", path="calc/ops.py", old_str="return a * b", new_str="return a + b"))
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    info = env.step(action)[4]
    env.close()
    assert sorted((c["kind"], c["line"], c["call"]) for c in info["line_calls"]) == [("added", 2, 1), ("deleted", 2, 0)]


def test_dict_actions_are_recorded_as_their_canonical_text(tiny_task):
    action = PATHS["openai dict"][0]("*")
    text = canonical_text(action)
    assert text.startswith("<tool_call>\n{\"name\": \"str_replace\"") and text.endswith("</tool_call>")
    assert [c.arguments for c in parse_action(action).calls] == [c.arguments for c in parse_action(text).calls]
    traj, infos = play(tiny_task, [action])
    assert traj.steps[0].action == text == infos[0]["action_text"]
    assert traj.steps[0].line_calls and traj.steps[0].calls == ((0, len(text)),)


def test_bash_bodies_decode_escapes_back_to_command_characters():
    command = "printf 'a = 1\\nb = \"x\"\\n' > f && python3 -c 'open(\"g\", \"w\").write(\"c = 2\\n\")'"
    found = {b.text: command[b.offsets[0]:b.offsets[-1]] for b in bash_bodies(command)}
    assert found["a = 1\nb = \"x\"\n"] == "a = 1\\nb = \"x\"\\n"
    assert found["c = 2\n"] == "c = 2\\n"


# paths whose step deletes `    return a + b` (line 6): where its deleted text stands in the action, per cover
DELETING = {"str_replace": "old_str", "bash sed": "sed", "python script": "literal", "openai dict": "old_str"}


def deleted_region(action, info, how, cover):
    """The characters that should carry the deleted line's A^D, worked out from the action's text."""
    call_span = (info["calls"][0]["start"], info["calls"][0]["end"])
    if cover == "call":
        return call_span
    old = "    return a + b"
    if how == "old_str":  # the JSON-escaped old_str holds the line whole: lines credit it, edit the argument
        arg = json.dumps("def mul(a, b):\n" + old)[1:-1]
        start = action.index(arg, *call_span)
        return (start + arg.index(old), start + len(arg)) if cover == "lines" else (start, start + len(arg))
    command = action.index('"command": "', *call_span) + len('"command": "')
    if how == "literal" and cover == "lines":  # the script's old string holds the text without its indentation
        start = action.index("'return a + b'", command) + 1
        return start, start + len("return a + b")
    if how == "sed":  # the s/old/new/ expression's old text, for lines and edit alike
        start = action.index("s/return a + b/", command) + 2
        return start, start + len("return a + b")
    if how == "literal":  # edit: the python -c script, the string holding the old text
        start = action.index('\\"', command) + 2
        return start, action.index('\\"', start)
    raise AssertionError(how)


@pytest.mark.parametrize("cover", ["lines", "edit", "call"])
@pytest.mark.parametrize("path", list(DELETING))
def test_deleted_line_is_attributed_and_credited_in_its_call(tiny_task, path, cover):
    make = PATHS[path][0]
    good, good_infos = play(tiny_task, [make("*"), call("str_replace", **FIX_ADD)])
    bad, bad_infos = play(tiny_task, [make("**")])
    # a third episode deletes the line too but writes something unlike the others: the deleted
    # anchor (3 rows) then has other A^D values than the added one (2 rows), so tokens tell them apart
    other, _ = play(tiny_task, [call("str_replace", path="calc/ops.py", old_str="    return a + b",
                                     new_str="    raise NotImplementedError")])
    result = credit.didpo([good, bad, other], cover=cover)
    deleted = [k for k, a in enumerate(result.anchors) if a.kind == "deleted" and set(a.trajectories) == {0, 1, 2}]
    assert deleted, "all episodes delete `return a + b`: one deleted anchor"
    added = {v for r, a, v in zip(result.steps.diff_row, result.steps.diff_anchor, result.steps.diff_advantage)
             if result.anchors[a].kind == "added"}
    rows = result.steps
    for i, (traj, info) in enumerate(((good, good_infos[0]), (bad, bad_infos[0]))):
        step = traj.steps[0]
        assert {(c["kind"], c["line"], c["call"]) for c in info["line_calls"]} >= {("deleted", 6, 0)}
        lo, hi = deleted_region(step.action, info, DELETING[path], cover)
        row = sum(len(t.steps) for t in (good, bad)[:i])
        value = rows.diff_advantage[(rows.diff_row == row) & np.isin(rows.diff_anchor, deleted)]
        assert value.size == 1 and value[0] != 0 and not np.isclose(list(added), value[0]).any()
        offsets = step.offsets
        hit = (offsets[:, 0] < hi) & (offsets[:, 1] > lo)
        extra = np.asarray(result.tokens[i][0]) - result.episode[i]
        assert hit.any() and np.isclose(extra[hit], value[0]).any(), (path, cover, step.action[lo:hi])
        if cover == "lines" and DELETING[path] != "command":
            # the line's own text carries it whole; tokens outside the call carry nothing
            assert np.allclose(extra[hit & (offsets[:, 0] >= lo) & (offsets[:, 1] <= hi)], value[0])
        outside = (offsets[:, 1] <= info["calls"][0]["start"]) | (offsets[:, 0] >= info["calls"][0]["end"])
        assert np.allclose(extra[outside], 0)


def test_a_deleted_line_quoted_in_the_thought_is_credited_in_old_str_only(tiny_task):
    old, new = "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a {} b"
    thought = "The bug is here:\n    return a + b\nit adds.\n"  # the deleted line, as written, before the call
    good, good_infos = play(tiny_task, [thought + call("str_replace", path="calc/ops.py", old_str=old,
                                                       new_str=new.format("*")), call("str_replace", **FIX_ADD)])
    bad, _ = play(tiny_task, [thought + call("str_replace", path="calc/ops.py", old_str=old, new_str=new.format("**"))])
    result = credit.didpo([good, bad], cover="lines")
    step = good.steps[0]
    extra = np.asarray(result.tokens[0][0]) - result.episode[0]
    in_thought = step.offsets[:, 1] <= len(thought)
    assert np.allclose(extra[in_thought], 0)  # the quote in the thought is not the deleted text
    start = step.action.index(json.dumps(old)[1:-1]) + len("def mul(a, b):\\n")
    in_old = (step.offsets[:, 0] >= start) & (step.offsets[:, 1] <= start + len("    return a + b"))
    assert in_old.any() and np.all(extra[in_old] != 0)
