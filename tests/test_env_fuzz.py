"""Fuzzing env.step (issue 31): random and adversarial actions (malformed tool calls, huge and
deeply nested JSON, odd unicode, NUL bytes, lone surrogates, unknown tools, arguments of the wrong
type, huge strings, deep paths, invalid and catastrophic regexes, writes aimed outside the
workspace) never raise out of `step`: each step returns an observation in the observation space
that says what was wrong (`info["invalid_action"]` and an error block), the episode goes on, and
nothing on the host outside the workspace changes. The examples are derandomized (the same every
run) and bounded in number, so the suite stays fast and CI reproducible."""
import hashlib
import math
import os
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from code_gym.actions.parse import MAX_ACTION_CHARS
from code_gym.env.trajectory import RecordTrajectory

EXAMPLES = 250


def tree_digest(root: Path) -> str:
    """Names, modes and contents of everything under `root` (links as their targets)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            st_ = path.lstat()
            h.update(os.fsencode(path.relative_to(root)) + b"\0" + str(st_.st_mode).encode())
            if path.is_symlink():
                h.update(os.fsencode(os.readlink(path)))
            elif path.is_file():
                h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The env on the tiny task, and the host folders no action may change: the task folder and an
    'outside' folder that actions aim at by absolute and `..` paths."""
    from conftest import write_tiny_task
    from code_gym.tasks.task import load_task

    root = tmp_path_factory.mktemp("fuzz")
    task = load_task(write_tiny_task(root))
    outside = root / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("host file\n")
    env = RecordTrajectory(gym.make("CodeRepo-v0", task=task, max_steps=10**6))
    env.reset(seed=0)
    yield env, task, outside
    env.close()


def nested(depth: int, leaf: object = 1, kind: str = "list") -> object:
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


TOOLS = ["bash", "view", "create", "str_replace", "insert", "search"]  # submit and run_tests grade or run pytest: slow
ODD_TEXT = ["", " ", "\0", "a\0b", "\ud800", "x\udfff", "\ufeff", "\u202e", "e\u0301", "\U0001f600", "\n" * 3,
            "\\", '"', "'", "`", "$(id)", "<tool_call>", "</tool_call>", "```bash\n", "\x1b[2J", "\r\n"]


@st.composite
def paths(draw, outside: str = "/OUTSIDE") -> str:
    return draw(st.sampled_from([
        "calc/ops.py", "new.py", "calc", ".", "", "data.bin", "../outside/keep.txt", "../../outside/new.txt",
        f"{outside}/keep.txt", f"{outside}/new.txt", "/etc/passwd", "calc/../../x", "a/" * 2100 + "x",
        "d" * 300 + ".py", "x\0y", "\ud800.py", "caf\u00e9/\U0001f600.py", "-rf", "new\nline.py", "~/x",
    ]) | st.text(max_size=40))


def regexes() -> st.SearchStrategy:
    return st.sampled_from(["(", "[", "a{1", "*", "\\", "(a*)*b", "(a|a)*c", "((a+)+)+$", "(x+x+)+y", "(.*)\\1\\1",
                            "^(a?){30}a{30}$", "[[:alpha:]", "a" * 5000, "def", "return a", "\0", "\ud800"]) \
        | st.text(max_size=20)


def json_values(outside: str) -> st.SearchStrategy:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                       st.integers(min_value=2**63, max_value=2**70), st.text(max_size=20),
                       st.sampled_from(ODD_TEXT), paths(outside), st.binary(max_size=4),
                       st.builds(set), st.builds(object), st.builds(lambda: 10**5000), st.just(math.inf))
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4), max_leaves=12)


@st.composite
def arguments(draw, outside: str) -> dict:
    keys = ["command", "path", "file_text", "old_str", "new_str", "insert_line", "view_range", "pattern", "paths", "x"]
    out = draw(st.dictionaries(st.sampled_from(keys), json_values(outside), max_size=4))
    if draw(st.booleans()):  # well-typed values for the real tools, adversarial in content
        out.update({"path": draw(paths(outside)), "pattern": draw(regexes()), "file_text": draw(st.text(max_size=60)),
                    "old_str": draw(st.sampled_from(["return", "def", "\0", "\ud800", "a - b"])),
                    "new_str": draw(st.sampled_from(ODD_TEXT)), "insert_line": draw(st.integers(-5, 20)),
                    "command": draw(st.sampled_from(BASH))})
        wanted = draw(st.sets(st.sampled_from(sorted(out)), max_size=3))
        out = {k: out[k] for k in wanted}
    return out


BASH = ["echo hi", "cat > /OUTSIDE/new.txt <<'EOF'\nx\nEOF", "echo x >> /OUTSIDE/keep.txt", "rm -rf /OUTSIDE",
        "touch ../escape", "printf 'a\\0b' > nul.txt", "cat <<EOF > big.txt\n" + "}\n" * 2000 + "EOF",
        "python3 -c 'print(\"\\\\'\"'\"'\" * 3)'", "sed -i 's/" + "\\\\" * 40 + "x/y/' calc/ops.py", "ls -la /",
        "ln -s /OUTSIDE out && echo y > out/keep.txt", "echo \udcff", "a\0b"]


@st.composite
def actions(draw, outside: str):
    name = draw(st.sampled_from(TOOLS) | st.sampled_from(ODD_TEXT) | st.text(max_size=12))
    args = draw(arguments(outside))
    kind = draw(st.sampled_from(["hermes", "dict", "openai", "string-args", "fence", "text", "deep", "huge", "many",
                                 "sampled", "other"]))
    import json
    if kind == "hermes":
        try:
            body = json.dumps({"name": name, "arguments": args})
        except (TypeError, ValueError):  # not JSON (a set, an int of 5,000 digits): a broken call
            body = '{"name": "bash", "arguments": ' + type(args).__name__ + "}"
        cut = draw(st.integers(0, len(body)))
        return "thought " + "<tool_call>" + (body if draw(st.booleans()) else body[:cut]) + "</tool_call>"
    if kind == "dict":
        return {"name": name, "arguments": args}
    if kind == "openai":
        return {"content": draw(st.text(max_size=10)), "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": draw(st.sampled_from(
                ["{}", "{", "[]", "null", '"x"', "[" * draw(st.integers(0, 3000)) + "]" * 5]))}}]}
    if kind == "string-args":
        return {"name": name, "arguments": draw(st.text(max_size=30))}
    if kind == "fence":
        return "```bash\n" + draw(st.sampled_from(BASH)) + "\n```"
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "deep":
        depth, shape = draw(st.integers(0, 5000)), draw(st.sampled_from(["list", "dict"]))
        if draw(st.booleans()):
            return {"name": "bash", "arguments": {"command": nested(depth, "ls", shape)}}
        opening, closing = ("[", "]") if shape == "list" else ('{"a": ', "}")
        return '<tool_call>{"name": "bash", "arguments": {"command": ' + opening * depth + "1" + closing * depth + "}}</tool_call>"
    if kind == "huge":
        size = draw(st.sampled_from([10_000, 300_000, MAX_ACTION_CHARS + 1]))
        return '<tool_call>{"name": "create", "arguments": {"path": "huge.txt", "file_text": "' + "x" * size + '"}}</tool_call>'
    if kind == "many":
        return '<tool_call>{"name": "view", "arguments": {"path": "calc"}}</tool_call>' * draw(st.integers(30, 200))
    if kind == "sampled":
        return {"text": draw(st.text(max_size=30)), "logprobs": draw(st.none() | st.lists(st.floats(max_value=0), max_size=3)
                                                                      | json_values(outside))}
    return draw(st.sampled_from([None, 12, 1.5, b"bytes", ["x"], [{"name": 3}], {"tool_calls": "x"}, {"tool_calls": [[]]},
                                 set()]) | st.builds(lambda: nested(3000, {"name": "bash"})))


def _resolve_outside(action, outside: str, depth: int = 0):
    """The action with /OUTSIDE replaced by the outside folder's path (the first levels only)."""
    if isinstance(action, str):
        return action.replace("/OUTSIDE", outside)
    if depth < 8 and isinstance(action, dict):
        return {k: _resolve_outside(v, outside, depth + 1) for k, v in action.items()}
    if depth < 8 and isinstance(action, list):
        return [_resolve_outside(v, outside, depth + 1) for v in action]
    return action


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_step_never_raises_and_says_what_was_wrong(world, data):
    env, task, outside = world
    before = (tree_digest(task.root), tree_digest(outside))
    action = _resolve_outside(data.draw(actions(str(outside))), str(outside))
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and env.observation_space.contains(obs)
    assert math.isfinite(reward) and not terminated and not truncated
    if info["invalid_action"]:
        assert "error" in obs
        assert all(r["output"].strip() for r in info["tool_results"] if r["error"]), info["tool_results"]
    assert (tree_digest(task.root), tree_digest(outside)) == before, "an action changed the host outside the workspace"
    obs, *_ = env.step('<tool_call>{"name": "view", "arguments": {"path": "."}}</tool_call>')
    assert "calc/ops.py" in obs  # the episode goes on
