"""Bad input never raises out of step(): it becomes an observation saying what to do. Bad
constructor arguments and task files fail at once, with a message that says what to pass."""
import json
from pathlib import Path

import gymnasium as gym
import pytest

from code_gym.tasks.task import TaskError, load_task
from conftest import TINY_MANIFEST, write_tiny_task

DOCS = Path(__file__).resolve().parent.parent / "docs"


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.fixture
def env(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize("action, expected", [
    ("<tool_call>{not json}</tool_call>", "not valid JSON"),
    ("no tool call here", "no tool call found"),
    (call("teleport", where="x"), "unknown tool 'teleport'"),
    (call("view"), "needs the argument 'path'"),
    (call("view", path=3), "must be string"),
    (call("insert", path="calc/ops.py", insert_line="2", new_str="x"), "must be integer"),
    (call("view", path="calc/ops.py", colour="red"), "has no argument 'colour'"),
    (call("view", path="../../etc/passwd"), "outside the repository"),
    (call("view", path="/etc/passwd"), "outside the repository"),
    (call("create", path="../escape.py", file_text="x"), "outside the repository"),
    (call("view", path="data.bin"), "binary file"),
    (call("view", path="nope.py"), "no such file"),
    (call("view", path="calc/ops.py", view_range=[5, 99]), "outside the file"),
    (call("create", path="calc/ops.py", file_text="x"), "already exists"),
    (call("str_replace", path="calc/ops.py", old_str="return", new_str="yield"), "occurs 2 times"),
    (call("str_replace", path="calc/ops.py", old_str="nothing like this", new_str="x"), "not found"),
    (call("insert", path="calc/ops.py", insert_line=99, new_str="x"), "outside 0..6"),
    ({"name": "bash", "arguments": "{broken"}, "not valid JSON"),
    (12345, "must be response text"),
])
def test_bad_action_is_an_observation(env, action, expected):
    obs, reward, terminated, truncated, info = env.step(action)
    assert expected in obs
    assert info["invalid_action"] is True
    assert not terminated and not truncated and reward == 0.0
    obs, *_ = env.step(call("view", path="calc/ops.py"))
    assert "return a - b" in obs  # the episode goes on


def test_symlink_out_of_workspace_is_refused(env):
    env.step("```bash\nln -s /etc/passwd leak.txt\n```")
    obs, *_, info = env.step(call("view", path="leak.txt"))
    assert "outside the repository" in obs and info["invalid_action"]
    obs, *_, info = env.step(call("str_replace", path="leak.txt", old_str="root", new_str="x"))
    assert "outside the repository" in obs


def test_hanging_command_times_out_and_episode_continues(env):
    obs, _, _, _, info = env.step("```bash\nsleep 60\n```")
    assert "timed out" in obs and info["invalid_action"]
    assert "limit is 5s" in obs and "background" in obs and "run_tests" in obs  # the limit, and what to do
    assert info["timings"]["tools"] < 20
    obs, *_ = env.step("```bash\necho alive\n```")
    assert "alive" in obs


def test_megabytes_of_output_are_truncated(env):
    obs, *_ = env.step("```bash\nhead -c 5000000 /dev/zero | tr '\\0' 'y'\n```")
    assert "bytes of output omitted" in obs
    assert len(obs) < 200_000


def test_absolute_sandbox_path_is_accepted(env):
    obs, *_ = env.step(call("view", path="/repo/calc/ops.py"))
    assert "return a - b" in obs


def test_empty_task_list_fails_at_construction():
    with pytest.raises(ValueError, match="tasks is empty: pass at least one task"):
        gym.make("CodeRepo-v0", tasks=[])


def test_unknown_isolation_fails_at_construction_naming_every_backend(tiny_task):
    with pytest.raises(ValueError, match="isolation must be one of") as raised:
        gym.make("CodeRepo-v0", task=tiny_task, isolation="bwarp")
    for kind in ("auto", "bwrap", "unshare", "none", "docker", "docker-fresh", "ray"):
        assert repr(kind) in str(raised.value)


def test_step_before_reset_raises_what_the_docs_say(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("x")
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.step("x")
    env.close()
    text = " ".join((DOCS / "env.md").read_text().split())
    assert "gymnasium.error.ResetNeeded" in text and "`env.unwrapped.step`" in text


@pytest.mark.parametrize("table, expected", [
    ('command = "30s"', ("command", "positive number of seconds", "'30s'")),
    ("tests = 0", ("tests", "positive number of seconds", "got 0")),
    ("command = true", ("command", "positive number of seconds", "True")),
    ("x = 5", ("unknown key 'x'", "'command' or 'tests'")),
])
def test_bad_timeouts_say_what_is_wrong(tmp_path, table, expected):
    folder = write_tiny_task(tmp_path)
    manifest = TINY_MANIFEST.replace("command = 5\ntests = 30\n", table + "\n")
    assert manifest != TINY_MANIFEST
    (folder / "task.toml").write_text(manifest)
    with pytest.raises(TaskError, match=r"\[timeouts\]") as raised:
        load_task(folder)
    assert all(word in str(raised.value) for word in expected), raised.value
