"""Training the built-in policy through the real environment: grade cache, credit -> branch
advantages, learning, curves, the `code-gym train` command."""
import csv

import numpy as np
import pytest

import credit
from code_gym.apps.cli import main
from code_gym.apps.policy import build_decisions
from code_gym.apps.train import (TrainConfig, Trainer, UpdateStats, branch_advantages, estimator, make_env, play,
                                 updates_to_reach, verify_decisions, whiten, write_curves)
from code_gym.grading.grade import GradeCache
from conftest import BUNDLED

LEDGER = next(t for t in BUNDLED if t.id == "ledger-allocation")


@pytest.fixture(scope="module")
def ledger_env():
    cache = GradeCache()
    env = make_env([LEDGER], cache)
    yield env, cache
    env.close()


def test_identical_final_files_are_graded_once(ledger_env):
    env, cache = ledger_env
    decisions = build_decisions(LEDGER, variants=1)
    before = cache.misses
    first = play(env, LEDGER, decisions, [0, 0])
    second = play(env, LEDGER, decisions, [0, 0])
    assert first.resolved and second.resolved and first.reward == second.reward == 1.0
    assert cache.misses == before + 1 and cache.hits >= 1
    untouched = play(env, LEDGER, decisions, [0, len(decisions[1].candidates) - 1])
    assert not untouched.resolved and cache.misses == before + 2


def test_episodes_are_real_trajectories_with_tokens_and_provenance(ledger_env):
    env, _ = ledger_env
    decisions = build_decisions(LEDGER, variants=1)
    episode = play(env, LEDGER, decisions, [0, 0])
    steps = episode.trajectory.steps
    assert len(steps) == 3 and steps[-1].diff == ""
    assert "+    return allocate(total, [1] * parts)" in steps[0].diff
    assert steps[0].provenance and steps[0].offsets.shape[1] == 2
    path, line, start, end = steps[0].provenance[0]
    assert steps[0].action[start:end] == "    return allocate(total, [1] * parts)"


@pytest.mark.parametrize("regions_per_step", [0, 2])
def test_several_regions_per_step_pack_the_decisions_into_one_response(ledger_env, regions_per_step):
    env, _ = ledger_env
    decisions = build_decisions(LEDGER, variants=1)
    wrong = len(decisions[1].candidates) - 2  # a wrong variant of the second region
    episode = play(env, LEDGER, decisions, [0, wrong], regions_per_step)
    steps = episode.trajectory.steps
    assert len(steps) == 2 and steps[-1].diff == ""  # both regions in one response, then submit
    assert {path for path, *_ in steps[0].provenance} == {d.path for d in decisions}
    assert episode.placement[0] == (0, 0) and episode.placement[1][0] == 0
    for d, c in enumerate(episode.choices):
        step, start = episode.place(d)
        candidate = decisions[d].candidates[c].action
        assert steps[step].action[start:start + len(candidate)] == candidate
    both_right = play(env, LEDGER, decisions, [0, 0], regions_per_step)
    assert both_right.resolved and not episode.resolved
    # each branch point reads the token at its own place in the packed response
    result = credit.didpo([episode.trajectory, both_right.trajectory])
    values = branch_advantages(result, [episode, both_right], {LEDGER.id: decisions})
    tokens = result.tokens[0][0]
    for d, branch_values in enumerate(values[0]):
        step, start = episode.place(d)
        for n, branch in enumerate(decisions[d].branches):
            if branch.way(episode.choices[d]) is not None:
                at = next(k for k, (a, b) in enumerate(steps[step].offsets) if a <= start + branch.position < b)
                assert branch_values[n] == tokens[at]


def test_verification_drops_wrong_variants_that_pass(ledger_env):
    env, _ = ledger_env
    decisions = build_decisions(LEDGER, variants=1)
    assert decisions[0].labels == ("reference", "off-by-one", "untouched")  # [2] * parts: the same split
    kept, dropped = verify_decisions(env, LEDGER, decisions)
    assert kept[0].labels == ("reference", "untouched") and "off-by-one passes the tests" in dropped[0]
    assert kept[1].labels == decisions[1].labels


def test_branch_advantages_read_each_estimators_token_credit(ledger_env):
    env, _ = ledger_env
    decisions = {LEDGER.id: build_decisions(LEDGER, variants=1)}
    plan = [(0, 0), (0, 1), (2, 0), (0, 2), (2, 2), (0, 0)]
    episodes = [play(env, LEDGER, decisions[LEDGER.id], c) for c in plan]
    trajectories = [e.trajectory for e in episodes]
    grpo = branch_advantages(credit.grpo(trajectories), episodes, decisions)
    result = credit.grpo(trajectories)
    for i, rows in enumerate(grpo):
        for values in rows:
            finite = values[np.isfinite(values)]
            np.testing.assert_allclose(finite, result.episode[i])  # outcome-only: every token has A^E
    didpo = credit.didpo(trajectories)
    values = branch_advantages(didpo, episodes, decisions)
    # the money.py edits differ inside the edited lines: DiDPO's diff credit reaches that branch
    reference_branch = [v[1][-1] for v, e in zip(values, episodes) if e.choices[1] == 0]
    assert any(abs(v - didpo.episode[i]) > 1e-9 for i, v in zip([0, 2, 5], reference_branch))


def test_whiten_scales_all_arrays_by_one_std():
    a, b = np.array([[1.0, np.nan], [-1.0, 3.0]]), np.array([[-3.0]])
    out = whiten([a, b])
    std = np.std([1.0, -1.0, 3.0, -3.0])
    np.testing.assert_allclose(out[0][1], [-1.0 / std, 3.0 / std])
    assert np.isnan(out[0][0, 1])
    same = whiten([np.zeros((2, 1))])
    np.testing.assert_array_equal(same[0], 0.0)


def test_estimator_names_include_didpos_presets():
    assert callable(estimator("didpo-contrast")) and callable(estimator("didpo-split", lambda_=0.5))
    with pytest.raises(ValueError, match=r"estimator 'didpo-split': cover must be one of \('lines', 'edit', 'call'\)"):
        estimator("didpo-split", cover="tokens")
    with pytest.raises(ValueError, match="valid names"):
        estimator("ppo")


def test_training_with_didpo_raises_the_success_probability():
    trainer = Trainer([LEDGER], TrainConfig(estimator="didpo", updates=8, group_size=6, variants=1, seed=0))
    try:
        history = trainer.run()
    finally:
        trainer.close()
    start, end = history[0].success_probability, history[-1].success_probability
    assert start == pytest.approx(1 / 6)  # 2 candidates x 3 candidates, after verification
    assert end > 0.6 and end > start
    assert history[-1].mean_reward > history[1].mean_reward or history[-1].success_rate > 0.5
    assert trainer.episodes == 8 * 6 and trainer.grade_cache.hits > trainer.grade_cache.misses
    assert updates_to_reach(history, start) == 0 and updates_to_reach(history, 1.01) is None


def test_curves_are_written_as_csv_and_png(tmp_path):
    history = [UpdateStats(0, 0, 0.1, float("nan"), float("nan"), 0.0, {"a": 0.1}),
               UpdateStats(1, 8, 0.5, 0.25, 0.6, 1.0, {"a": 0.5})]
    write_curves({"didpo": history, "grpo": history}, tmp_path / "c.csv", tmp_path / "c.png")
    rows = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert [(r["run"], r["update"], r["p:a"]) for r in rows][:2] == [("didpo", "0", "0.100000"), ("didpo", "1", "0.500000")]
    assert len(rows) == 4
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_command_writes_curves_and_policies(tmp_path, capsys):
    task = next(t for t in BUNDLED if t.id == "lru-memoize-keys")
    code = main(["train", "--estimator", "grpo", "didpo-contrast", "didpo-split", "--tasks", str(task.root),
                 "--updates", "2", "-G", "2", "--variants", "0", "--out", str(tmp_path)])
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "curves.csv").open()))
    assert {r["run"] for r in rows} == {"grpo", "didpo-contrast", "didpo-split"} and len(rows) == 9
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert (tmp_path / "policy-grpo.json").exists()
    out = capsys.readouterr().out
    assert "updates to 0.9" in out and "grades from the cache" in out


def test_train_command_packs_every_region_into_one_step(tmp_path):
    task = next(t for t in BUNDLED if t.id == "lru-memoize-keys")
    code = main(["train", "--estimator", "didpo", "--tasks", str(task.root), "--updates", "1", "-G", "2",
                 "--variants", "1", "--regions-per-step", "0", "--out", str(tmp_path)])
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "curves.csv").open()))
    assert [r["update"] for r in rows] == ["0", "1"] and rows[1]["episodes"] == "2"
    with pytest.raises(SystemExit):
        main(["train", "--tasks", str(task.root), "--regions-per-step", "x"])
