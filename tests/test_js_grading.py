"""JavaScript tasks end to end: the bundled JavaScript tasks graded with records and canaries in
the bubblewrap and Docker sandboxes (node, mocha and tape runs), an episode through
gym.make("CodeRepo-v0") whose run_tests tool reads records, and DiDPO splitting the episode's
JavaScript diffs by syntax."""
import json

import gymnasium as gym
import pytest

import credit
from code_gym import languages
from code_gym.actions.parse import ToolCall
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.actions.tools import run_tool
from code_gym.env.trajectory import RecordTrajectory
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.tasks.task import bundled_tasks
from sandbox_backends import require

JS_TASKS = [t for t in bundled_tasks() if t.language == "javascript"]
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def test_bundled_javascript_tasks_cover_node_mocha_and_tape():
    assert len(JS_TASKS) >= 4
    assert {t.test_command.split()[0] for t in JS_TASKS} >= {"node", "mocha", "tape"}


@pytest.mark.parametrize("isolation", ["bwrap", "docker"])
@pytest.mark.parametrize("task", JS_TASKS, ids=[t.id for t in JS_TASKS])
def test_untouched_fails_and_reference_passes_with_records_and_canaries(task, isolation):
    require(isolation)
    untouched = grade(task, {}, isolation=isolation)
    assert untouched.canaries and not untouched.canary and not untouched.integrity, untouched.output[-2000:]
    assert all(untouched.tests[t] in ("failed", "error") for t in task.fail_to_pass), untouched.tests
    assert all(untouched.tests[t] == "passed" for t in task.pass_to_pass), untouched.tests
    fixed = grade(task, reference_changes(task), isolation=isolation)
    assert not fixed.canary and not fixed.integrity and not fixed.tampered, fixed.output[-2000:]
    assert set(fixed.tests) == set(task.fail_to_pass + task.pass_to_pass)
    assert set(fixed.tests.values()) == {"passed"}, fixed.tests


def test_the_agents_run_tests_tool_reads_records():
    """run_tests in an episode: outcomes by test id from the records (what step shaping counts),
    the runner's own output in the observation."""
    task = JS_TASKS[0]
    env = gym.make("CodeRepo-v0", task=task)
    env.reset(seed=0)
    result = run_tool(env.unwrapped.ctx, ToolCall("run_tests", {}))
    env.close()
    visible = {t for t in task.pass_to_pass + task.fail_to_pass if t.split("::")[0] in task.visible_tests}
    assert result.records is not None and visible <= set(result.records.tests), result.output[-2000:]
    assert all(result.records.tests[t] == "passed" for t in visible & set(task.pass_to_pass))


def test_episodes_are_credited_by_javascript_syntax_units():
    """Three episodes of one JavaScript task, recorded as credit.Trajectory: the reference, the
    reference without its last file, nothing. DiDPO groups the shared sub-diffs of the first two
    (the grammar's function blocks) and credits the complete episode's occurrence above the
    partial one's."""
    task = next(t for t in JS_TASKS if t.reference_patch.count("diff --git") >= 2)
    files = ["diff --git" + part for part in task.reference_patch.split("diff --git")[1:]]
    trajectories = []
    for patch in (task.reference_patch, "".join(files[:-1]), ""):
        env = RecordTrajectory(gym.make("CodeRepo-v0", task=task))
        env.reset(seed=0)
        if patch:
            env.step(hermes(patch_to_calls(patch, task.repo)))
        env.step(SUBMIT)
        trajectories.append(env.trajectory)
        env.close()
    assert trajectories[0].reward > trajectories[1].reward > trajectories[2].reward or \
        trajectories[0].reward > trajectories[1].reward == trajectories[2].reward
    units = credit.split_diff(trajectories[0].steps[0].diff, levels=("syntax",))
    assert units.n_units >= 1 and all(p.endswith(".js") for p in units.paths)
    result = credit.didpo(trajectories)
    shared = [a for a in result.anchors if set(a.trajectories.tolist()) == {0, 1}]
    assert shared, [(a.trajectories, a.preview) for a in result.anchors]
    for anchor in shared:
        by_trajectory = dict(zip(anchor.trajectories.tolist(), anchor.advantage.tolist()))
        assert by_trajectory[0] > 0 > by_trajectory[1]


def test_a_run_whose_report_is_gone_is_void(tmp_path):
    """node --test writes junit XML beside the records: a run that left none (the code under test
    removed it, or kept the runner from writing it) must not skip the cross-check."""
    from code_gym.grading import records
    from code_gym.sandbox.base import ExecResult

    language = languages.get("javascript")
    plan = language.test_run("node --test", ("test/a.test.js",), str(tmp_path))
    assert plan.report is not None
    stream = b"".join(json.dumps({"nonce": "n", "seq": i, **r}).encode() + b"\n" for i, r in enumerate([
        {"kind": "start"}, {"kind": "report", "id": "test/a.test.js::ok", "when": "call", "outcome": "passed"},
        {"kind": "end", "exitstatus": 0}]))
    run = ExecResult("", 0, records=stream)
    outcomes, void = records.run_outcomes(language, run, "n", tmp_path, ("test/a.test.js::ok",), plan)
    assert outcomes == {"test/a.test.js::ok": "passed"}
    assert void and "only the stream records test/a.test.js::ok as passed" in void[0].message
    mocha = language.test_run("mocha", ("test/a.test.js",), str(tmp_path))
    assert mocha.report is None  # no report of its own: the records stand alone
    assert records.run_outcomes(language, run, "n", tmp_path, ("test/a.test.js::ok",), mocha)[1] == []
