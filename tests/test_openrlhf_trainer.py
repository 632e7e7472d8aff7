"""OpenRLHF's real PPO trainer, end to end on a local Ray instance (CPU), started by `train.main`.

Stood in (tests/openrlhf_shim/trainer_standins.py), because they need GPUs: vLLM's engine inside
OpenRLHF's `RolloutRayActor` (`ScriptedLLM`: scripted responses, one script per episode) and the
DeepSpeed model-shard groups (`ShardGroup` for `RayActorGroup`: zero log-probs, and it keeps what
the trainer sends to the actor's training step). Ray's GPUs are logical ones declared to
`ray.init`, so OpenRLHF's placement groups form; nothing runs on them.

Real: `train.main` and OpenRLHF's `train_ppo_ray` (parser, checks, `ray.init` with code-gym's
setup hook, the preflight on every node, placement groups, `create_vllm_engines`), the
`PPOTrainer` / `PPOTrainerAsync` Ray actors with their `SamplesGenerator` and
`RemoteExperienceMaker`, the `RolloutRayActor` with the agent executor of agent_func.py playing
CodeRepo-v0 episodes in bubblewrap sandboxes, and the estimator patches that the setup hook makes
in those actors. The test replays each trained episode in this process with the same script and
checks that the advantages the actor was given are `credit.didpo` on those trajectories.

The sync run uses train_didpo.sh's own arguments (colocated, vLLM and DeepSpeed sleep modes,
packed samples) scaled to one logical GPU, plus dynamic batching, which packs the samples into
micro-batches out of rollout order and deals them to the actor longest first. The estimator hands
credit the episodes in rollout order whatever the packing (test_openrlhf.py shows the difference
bit for bit on episodes where DiDPO's grouping depends on order); these scripts' advantages do not
depend on the order of the episodes (checked here), so the replay, which cannot know the rollout
order, compares in the order the actor received. The async run (a second Ray instance and four
more trainer processes, fixed micro-batches) runs in CI or with CODE_GYM_LONG_TESTS=1.
"""
from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sandbox_backends import IN_CI, require
from test_openrlhf import BAD_MUL, FIX_ADD, FIX_MUL, MAX_LEN, VIEW, ScriptedEngine, build_tokenizer, call, \
    script_command

import ray
import torch
from vllm import SamplingParams

import credit
from code_gym.actions.replay import hermes
from conftest import write_tiny_task
from integrations.episodes import RECORD_KEY, AgentConfig
from integrations.openrlhf import hook, preflight, train
from integrations.openrlhf.agent import AgentExecutor
from openrlhf_shim.trainer_standins import ASSISTANT, END, OUT_VARIABLE, SCRIPT_FILE, ShardGroup

pytestmark = pytest.mark.xdist_group("ray")

TESTS = Path(__file__).resolve().parent
N_SAMPLES = 3
# one script per episode; the first responses differ, so the scripted engine can tell episodes apart
SCRIPTS = [
    [hermes([FIX_ADD], "Fix add."), hermes([FIX_MUL]), hermes([call("submit")])],
    [hermes([FIX_ADD, FIX_MUL], "Both."), hermes([call("submit")])],
    [hermes([VIEW]), hermes([call("submit")])],
    [hermes([BAD_MUL]), hermes([FIX_ADD], "Fix add."), hermes([call("submit")])],
    [hermes([FIX_ADD], "Only add."), hermes([call("submit")])],
    [hermes([VIEW], "Look first."), hermes([FIX_ADD, FIX_MUL]), hermes([call("submit")])],
]
# the executor's settings, forwarded to the rollout actor (the system turn shows that they arrived)
AGENT = {"env": {"max_steps": 4, "isolation": "bwrap"}, "system": "You fix calc."}
STANDIN_HOOK = "openrlhf_shim.trainer_standins.install"
LONG = IN_CI or os.environ.get("CODE_GYM_LONG_TESTS") == "1"


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture
def run(tmp_path, monkeypatch, tokenizer):
    """`run(argv)`: `train.main(argv)` on a fresh local Ray instance with the stand-ins; returns
    the rows the actor's training step received (one training step) and whether the preflight ran.
    `inputs` holds the model folder, the two tasks (groups of N_SAMPLES episodes) and the dataset."""
    require("bwrap")
    model = tmp_path / "model"
    tokenizer.save_pretrained(model)
    (model / SCRIPT_FILE).write_text(json.dumps(SCRIPTS))
    labels = [str(write_tiny_task(tmp_path / name)) for name in ("task-a", "task-b")]
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"input": "fix calc", "label": label}) + "\n" for label in labels))
    out = tmp_path / "trained"

    monkeypatch.setenv("CODE_GYM_AGENT", json.dumps(AGENT))
    monkeypatch.setenv(OUT_VARIABLE, str(out))
    # the checkout first: with tests/ on the path, `import credit` in a worker could find the
    # namespace folder tests/credit before the editable install's finder runs (a worker then
    # failed its setup hook on `credit.STEP_LEVEL`, depending on which tests ran before)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]))
    # the job's setup hook: code-gym's real one, then the vLLM stand-in (trainer_standins.install)
    monkeypatch.setattr(hook, "SETUP_HOOK", STANDIN_HOOK)
    monkeypatch.setattr(importlib.import_module("openrlhf.trainer.ray.launcher"), "RayActorGroup", ShardGroup)
    checked = []
    real_check = preflight.check_cluster
    monkeypatch.setattr(preflight, "check_cluster", lambda: checked.append(real_check()))
    # logical GPUs for OpenRLHF's placement groups (nothing runs on them)
    monkeypatch.setattr(ray, "init", functools.partial(ray.init, num_cpus=4, num_gpus=2, include_dashboard=False,
                                                       log_to_driver=False))

    def run_training(argv):
        assert not ray.is_initialized()
        try:
            train.main(argv)
            job = ray.get_runtime_context().runtime_env
            assert job["worker_process_setup_hook"] == STANDIN_HOOK
            assert json.loads(job["env_vars"]["CODE_GYM_AGENT"]) == AGENT
        finally:
            ray.shutdown()
        assert checked == [None]  # the preflight passed on every node before any placement group
        assert sorted(p.name for p in out.iterdir()) == ["PolicyModelActor-step1.pt"]  # only the actor trains
        return torch.load(out / "PolicyModelActor-step1.pt", weights_only=False)

    run_training.inputs = model, labels, data
    return run_training


def rows_of(appended):
    """(label, token ids, advantages, returns, action mask, info) per trained sample, in the order
    the actor received them."""
    rows = []
    for batch in appended:
        for b, label in enumerate(batch["labels"]):
            length = int(batch["attention_mask"][b].sum())
            info = {key: float(values[b]) for key, values in batch["info"].items()}
            rows.append((label, batch["sequences"][b, :length].tolist(), batch["advantages"][b],
                         batch["returns"][b], batch["action_mask"][b], info))
    return rows


def replay(tokenizer, rows):
    """Each trained episode played again here by the same executor, on the same task, with the
    script its first response names, under the sampling parameters OpenRLHF used."""
    params = SamplingParams(max_tokens=None, min_tokens=1, skip_special_tokens=False, logprobs=None)
    executor = AgentExecutor(AgentConfig(**AGENT))

    def script_of(tokens):
        first = tokenizer.decode(tokens).split(ASSISTANT)[1].split(END)[0]
        return next(script for script in SCRIPTS if script[0] == first)

    async def all_episodes():
        return await asyncio.gather(*(
            executor.execute("fix calc", label, params, MAX_LEN, tokenizer, ScriptedEngine(tokenizer, script_of(tokens)))
            for label, tokens, *_ in rows))

    return asyncio.run(all_episodes())


def assert_trained_on_didpo(tokenizer, appended, labels):
    rows = rows_of(appended)
    assert Counter(label for label, *_ in rows) == {label: N_SAMPLES for label in labels}
    for label, tokens, *_, info in rows:
        assert info["code_gym/failed"] == 0.0, f"an episode on {label} failed in the rollout actor (its Ray log says why)"
        assert tokenizer.decode(tokens).startswith("<|im_start|>system\nYou fix calc.<|im_end|>")
    responses = replay(tokenizer, rows)
    for (_, tokens, *_), response in zip(rows, responses):
        assert response["observation_tokens"] == tokens  # the same episode, token for token
    # the group is the task the episode was sampled for
    trajectories = [r[RECORD_KEY].to_trajectory(group=label) for (label, *_), r in zip(rows, responses)]
    expected = credit.didpo(trajectories)
    assert len({round(float(a), 6) for a in expected.episode}) > 1
    # the estimator used the rollout order, this test knows only the order received: for these
    # episodes the order does not change credit's advantages (checked on the reversed order)
    backward = credit.didpo(trajectories[::-1])
    assert all(np.allclose(expected.tokens[i][t], backward.tokens[len(rows) - 1 - i][t], atol=1e-9)
               for i in range(len(rows)) for t in range(len(trajectories[i].steps)))
    for i, ((_, tokens, advantages, returns, mask, info), response) in enumerate(zip(rows, responses)):
        assert RECORD_KEY not in info and info["credit/excluded"] == 0.0
        assert info["credit/episode_advantage"] == pytest.approx(float(expected.episode[i]), abs=1e-6)
        covered = torch.zeros_like(mask, dtype=torch.bool)
        for t, step in enumerate(response[RECORD_KEY].steps):
            start, end = step.token_span  # mask position p is sequence position p + 1
            assert np.allclose(advantages[start - 1:end - 1].numpy(), expected.tokens[i][t], atol=1e-6)
            covered[start - 1:end - 1] = True
        assert bool(mask[covered].all()) and not advantages[~covered].any() and not returns[~covered].any()


def test_ppo_trainer_from_the_launch_script_trains_on_didpo_advantages(run, tokenizer, tmp_path):
    model, labels, data = run.inputs
    argv = script_command("train_didpo.sh", "--train.num_episodes", "1", "--logger.tensorboard_dir", "",
                          "--train.dynamic_batch_enable", "--rollout.max_tokens_per_gpu", "5000",
                          MODEL=str(model), DATA=str(data), OUT=str(tmp_path / "out"), NODES="1", GPUS_PER_NODE="1",
                          SAMPLES_PER_PROMPT=str(N_SAMPLES), PROMPTS_PER_STEP="2", MAX_LEN=str(MAX_LEN))
    assert {"--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep"} <= set(argv)
    assert_trained_on_didpo(tokenizer, run(argv), labels)


@pytest.mark.skipif(not LONG, reason="a second trainer run, async (several minutes on 2 loaded cores): "
                                     "CODE_GYM_LONG_TESTS=1 runs it (CI always does)")
def test_async_ppo_trainer_trains_on_didpo_advantages(run, tokenizer, tmp_path):
    model, labels, data = run.inputs
    appended = run(["--actor.model_name_or_path", str(model), "--data.prompt_dataset", str(data),
                    "--data.input_key", "input", "--data.label_key", "label", "--data.max_len", str(MAX_LEN),
                    "--algo.advantage.estimator", "didpo", "--rollout.n_samples_per_prompt", str(N_SAMPLES),
                    "--rollout.batch_size", "2", "--rollout.micro_batch_size", "2", "--train.batch_size", "6",
                    "--algo.kl.use_loss", "--train.colocate_all", "--actor.num_gpus_per_node", "1",
                    "--ref.num_gpus_per_node", "1", "--vllm.num_engines", "1", "--train.async_enable",
                    "--ckpt.path", str(tmp_path / "ckpt"), "--ckpt.output_dir", str(tmp_path / "out")])
    assert_trained_on_didpo(tokenizer, appended, labels)
