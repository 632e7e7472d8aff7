"""Episodes recorded as credit.Trajectory, and credit runs on them."""
import json

import gymnasium as gym

import credit
from code_gym.env.trajectory import RecordTrajectory


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def episode(task, fix_mul: bool):
    env = RecordTrajectory(gym.make("CodeRepo-v0", task=task))
    env.reset(seed=0)
    env.step(call("str_replace", path="calc/ops.py", old_str="def add(a, b):\n    return a - b",
                  new_str="def add(a, b):\n    return a + b"))
    if fix_mul:
        env.step(call("str_replace", path="calc/ops.py", old_str="return a + b\n\n\ndef mul(a, b):\n    return a + b",
                      new_str="return a + b\n\n\ndef mul(a, b):\n    return a * b"))
    *_, info = env.step(call("submit"))
    env.close()
    return info["trajectory"]


def test_recorded_trajectory_round_trips_and_feeds_didpo(tiny_task, tmp_path):
    good, bad = episode(tiny_task, True), episode(tiny_task, False)
    assert good.reward == 1.0 and bad.reward < 1.0
    assert len(good.steps) == 3 and all(s.reward == 0.0 for s in good.steps)
    first = good.steps[0]
    assert "+    return a + b" in first.diff
    [(path, line, start, end)] = first.provenance
    assert (path, line) == ("calc/ops.py", 2) and first.action[start:end] == "    return a + b"
    assert first.observation.startswith("You are working")

    credit.dump_jsonl([good, bad], tmp_path / "t.jsonl")
    loaded = credit.load_jsonl(tmp_path / "t.jsonl")
    assert [t.reward for t in loaded] == [good.reward, bad.reward]
    result = credit.didpo(loaded)
    assert result.episode[0] > 0 > result.episode[1]
