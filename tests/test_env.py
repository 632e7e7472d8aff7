"""CodeRepo-v0 through Gymnasium: registration, the env checker, vector envs, full episodes."""
import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import code_gym
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.util.hostfs import wait_for_cleanup

from conftest import BUNDLED

SUBMIT = hermes([{"name": "submit", "arguments": {}}])


def test_registered_and_checker_passes():
    assert "CodeRepo-v0" in gym.registry
    env = gym.make("CodeRepo-v0")
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_module_prefixed_id_imports_package():
    env = gym.make("code_gym:CodeRepo-v0", task=BUNDLED[0].id)
    obs, info = env.reset(seed=0)
    assert BUNDLED[0].statement.splitlines()[0][:40] in obs
    assert info["task_id"] == BUNDLED[0].id
    env.close()


def test_reset_prompt_has_statement_tree_and_tools():
    env = gym.make("CodeRepo-v0")
    obs, info = env.reset(seed=3)
    task = next(t for t in BUNDLED if t.id == info["task_id"])
    assert task.statement[:50] in obs
    assert task.visible_tests[0] in obs
    for tool in code_gym.TOOL_NAMES:
        assert f"- {tool}(" in obs
    assert env.observation_space.contains(obs)
    env.close()


def test_seeded_reset_draws_the_same_task():
    env = gym.make("CodeRepo-v0")
    drawn = [env.reset(seed=s)[1]["task_id"] for s in (7, 7, 8, 9, 10, 11)]
    assert drawn[0] == drawn[1]
    assert len(set(drawn)) > 1
    env.close()


@pytest.mark.parametrize("task", BUNDLED, ids=[t.id for t in BUNDLED])
def test_reference_replay_resolves_and_empty_submission_does_not(task):
    env = gym.make("CodeRepo-v0", task=task)
    env.reset(seed=0)
    calls = patch_to_calls(task.reference_patch, task.repo)
    assert {c["name"] for c in calls} <= {"str_replace", "create", "bash"}
    _, reward, terminated, _, info = env.step(hermes(calls))
    assert not terminated and not info["invalid_action"], info["tool_results"]
    assert info["diff"]
    _, reward, terminated, truncated, info = env.step(SUBMIT)
    assert terminated and not truncated
    assert reward == 1.0 and info["resolved"], info["tests"]

    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert terminated and reward == 0.0 and not info["resolved"]  # f2p: the untouched repo scores 0
    env.close()


def test_truncation_grades_at_max_steps(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, max_steps=2, reward="fraction")
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step("```bash\nsed -i 's/a - b/a + b/' calc/ops.py\n```")
    assert not (terminated or truncated) and reward == 0.0
    _, reward, terminated, truncated, info = env.step("```bash\ntrue\n```")
    assert truncated and not terminated
    assert info["tests_total"] == 3 and info["tests_passed"] == 2
    assert reward == pytest.approx(2 / 3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(SUBMIT)
    env.close()


def _reference_and_submit(task_id: str) -> str:
    task = next(t for t in BUNDLED if t.id == task_id)
    return hermes(patch_to_calls(task.reference_patch, task.repo) + [{"name": "submit", "arguments": {}}])


def test_async_vector_env_with_gymnasiums_defaults_runs_four_episodes():
    """Gymnasium's defaults (shared memory): before AnyText had its own flat form, the first reset
    raised KeyError on a character outside the sample charset; Gymnasium's Text reader would also
    have returned the construction-time buffer forever."""
    task_ids = [t.id for t in BUNDLED[:4]]
    envs = gym.vector.AsyncVectorEnv([lambda tid=tid: gym.make("CodeRepo-v0", task=tid) for tid in task_ids])
    try:
        obs, infos = envs.reset(seed=0)
        assert len(obs) == len(task_ids) and all("## Issue" in o for o in obs)
        obs, _, _, _, _ = envs.step(tuple('```bash\necho "héllo → 🙂"\n```' for _ in task_ids))
        assert all("héllo → 🙂" in o for o in obs), obs[0][:200]
        obs, rewards, terminated, truncated, infos = envs.step(tuple(_reference_and_submit(t) for t in task_ids))
        assert list(terminated) == [True] * len(task_ids)
        assert list(rewards) == [1.0] * len(task_ids)
        assert all("Episode over" in o for o in obs)
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_runs_episodes(mode):
    task_id = BUNDLED[0].id
    envs = gym.make_vec("CodeRepo-v0", num_envs=2, vectorization_mode=mode, task=task_id)
    try:
        obs, _ = envs.reset(seed=0)
        assert all(BUNDLED[0].statement[:40] in o for o in obs)
        _, rewards, terminated, _, _ = envs.step((_reference_and_submit(task_id), SUBMIT))
        assert list(terminated) == [True, True] and rewards[0] == 1.0 and rewards[1] < 1.0
    finally:
        envs.close()


def test_time_limit_wrapper_ends_with_a_graded_reward(tiny_task):
    """Before the env read the spec's limit, TimeLimit truncated step 3 of 30 with no grade at all."""
    env = gym.make("CodeRepo-v0", task=tiny_task, max_episode_steps=3, reward="fraction")
    env.reset(seed=0)
    env.step("```bash\nsed -i 's/a - b/a + b/' calc/ops.py\n```")
    obs, _, terminated, truncated, _ = env.step("```bash\ntrue\n```")
    assert not (terminated or truncated) and "(1 steps left)" in obs
    _, reward, terminated, truncated, info = env.step("```bash\ntrue\n```")
    assert truncated and not terminated
    assert info["tests_total"] == 3 and info["tests_passed"] == 2 and reward == pytest.approx(2 / 3)
    env.close()


def test_graders_ignore_changes_to_tests(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    cheat = "```bash\necho 'def test_ok(): pass' > tests/test_calc.py && rm -rf tests/ && mkdir tests\n```"
    env.step(cheat)
    _, reward, _, _, info = env.step(SUBMIT)
    assert "tests/test_calc.py" in info["ignored_changes"]
    assert info["tests_total"] == 3 and reward < 1.0
    env.close()


def _mounted(path) -> bool:
    return any(line.split()[1] == str(path) for line in open("/proc/mounts"))


def test_close_removes_workspaces_mounts_and_processes(tiny_task):
    import subprocess
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    first = env.unwrapped.ws
    env.step("```bash\nexec -a code-gym-leak-probe sleep 1000 > /dev/null 2>&1 &\necho bg\n```")
    env.reset(seed=1)  # a new episode releases the previous one (files removed in the background)
    second = env.unwrapped.ws
    assert not _mounted(first.root)
    wait_for_cleanup()
    assert not first.base.exists() and not _mounted(first.root)
    env.step(SUBMIT)
    env.close()
    assert not second.base.exists() and not _mounted(second.root)
    assert subprocess.run(["pgrep", "-f", "code-gym-leak-probe"], capture_output=True).stdout == b""


def test_any_text_flattens_every_str_and_back():
    from gymnasium.spaces.utils import flatten, flatten_space, unflatten

    space = code_gym.AnyText(16)
    for text in ("", "plain", "tab\there\n", "héllo → 🙂", "\ud800 lone surrogate"[:16]):
        flat = flatten(space, text)
        assert flat.shape == (16,) and flatten_space(space).contains(flat)
        assert unflatten(space, flat) == text
    with pytest.raises(ValueError, match="does not fit"):
        flatten(space, "x" * 17)


def test_a_fifo_in_the_repository_does_not_hang_the_host(tiny_task):
    """The red team's `mkfifo calc/pipe.py`: the host's scan after the step opened the FIFO, which
    no one writes to, and env.step never returned (a trainer's worker hung for good). The scan
    and the editor now take regular files and links only."""
    import os
    import threading

    env = gym.make("CodeRepo-v0", task=tiny_task)
    seen = {}

    def episode():
        env.reset(seed=0)
        seen["ls"] = env.step("```bash\nmkfifo calc/pipe.py calc/data && ls calc\n```")[0]
        seen["view"] = env.step(hermes([{"name": "view", "arguments": {"path": "calc/pipe.py"}}]))[0]
        seen["submit"] = env.step(SUBMIT)

    worker = threading.Thread(target=episode, daemon=True)
    worker.start()
    worker.join(120)
    try:
        if worker.is_alive():  # let the host go: a writer for each FIFO it waits on
            root = env.unwrapped.ws.root
            for name in ("pipe.py", "data"):
                try:
                    os.close(os.open(root / "calc" / name, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            worker.join(30)
            pytest.fail(f"the host blocked on a FIFO after {list(seen)}")
        assert "pipe.py" in seen["ls"]
        assert "calc/pipe.py: is not a regular file" in seen["view"]
        _, _, terminated, _, info = seen["submit"]
        assert terminated and info["tests_total"] == 3
    finally:
        env.close()


def test_a_tree_deeper_than_path_max_does_not_make_the_step_raise(tiny_task):
    """The host's scan walked into a path longer than PATH_MAX and env.step raised ENAMETOOLONG."""
    deep = ("```bash\npython3 -c \"import os\nfor i in range(450): os.mkdir('d' * 9); os.chdir('d' * 9)\n"
            "open('f.py', 'w').write('x = 1')\"\n```")
    env = gym.make("CodeRepo-v0", task=tiny_task)
    try:
        env.reset(seed=0)
        env.step(deep)
        _, _, terminated, _, info = env.step(SUBMIT)
        assert terminated and info["tests_total"] == 3
    finally:
        env.close()
