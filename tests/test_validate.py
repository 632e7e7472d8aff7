"""`code-gym tasks validate --record`: FAIL_TO_PASS / PASS_TO_PASS from the untouched and the
reference runs, stored in the manifest, and the default reward that reads them."""
import gymnasium as gym
import pytest

from code_gym.apps.cli import main
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.tasks.task import load_task
from code_gym.grading.gates import validate_task

from conftest import BUNDLED

SUBMIT = hermes([{"name": "submit", "arguments": {}}])


def test_validate_records_the_test_lists_and_the_default_reward_reads_them(tiny_task, capsys):
    verdict = validate_task(tiny_task, runs=1)
    assert verdict.ok, verdict.problems
    assert verdict.reference_passes == 1
    assert verdict.fail_to_pass == ("tests/test_hidden_calc.py::test_add", "tests/test_hidden_calc.py::test_mul")
    assert "tests/test_calc.py::test_add_zero" in verdict.pass_to_pass
    assert set(verdict.fail_to_pass).isdisjoint(verdict.pass_to_pass)

    assert main(["tasks", "validate", "--runs", "1", "--record", str(tiny_task.root)]) == 0
    printed = capsys.readouterr()
    assert "recorded FAIL_TO_PASS / PASS_TO_PASS in 1 manifests" in printed.err
    assert "references pass 1/1" in printed.out
    recorded = load_task(tiny_task.root)
    assert recorded.fail_to_pass == verdict.fail_to_pass and recorded.pass_to_pass == verdict.pass_to_pass
    # a task that declares its lists is validated by them and not rewritten
    before = (tiny_task.root / "task.toml").read_text()
    assert main(["tasks", "validate", "--runs", "1", "--record", str(tiny_task.root)]) == 0
    assert (tiny_task.root / "task.toml").read_text() == before

    env = gym.make("CodeRepo-v0", task=recorded)
    try:
        env.reset(seed=0)
        _, untouched, *_ = env.step(SUBMIT)
        env.reset(seed=0)
        env.step(hermes(patch_to_calls(recorded.reference_patch, recorded.repo)))
        _, reference, *_ = env.step(SUBMIT)
    finally:
        env.close()
    assert (untouched, reference) == (0.0, 1.0)


def test_every_bundled_task_declares_its_lists():
    for task in BUNDLED:
        assert task.fail_to_pass, task.id
        assert set(task.fail_to_pass).isdisjoint(task.pass_to_pass), task.id


def test_runs_below_one_are_refused(tiny_task):
    """With runs=0 every reference gate passed with nothing run ("reference passes 0/0 ... ok")."""
    from code_gym.languages.python.builder.revalidate import revalidate_task

    for runs in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="runs must be an integer >= 1"):
            validate_task(tiny_task, runs=runs)
        with pytest.raises(ValueError, match="runs must be an integer >= 1"):
            revalidate_task(tiny_task, runs=runs)
