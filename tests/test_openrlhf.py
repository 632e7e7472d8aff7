"""The OpenRLHF integration against OpenRLHF's real modules (openrlhf==0.11.2 and vllm==0.29.0,
installed with --no-deps by scripts/setup.sh, plus the `openrlhf` and `test` extras).

One stand-in: `ScriptedEngine` plays vLLM's engine, which needs a GPU. It answers each call with
the next scripted response, as vLLM's own `RequestOutput` / `CompletionOutput` / `Logprob`
objects. The tokenizer is real: a byte-level BPE trained here with `tokenizers` (no hub download)
and wrapped in transformers' fast tokenizer with a ChatML template. OpenRLHF's trainer modules
(`RemoteExperienceMaker`) import flash-attn's two pure-PyTorch helper modules; where flash-attn is
not installed (it needs CUDA) `openrlhf_shim.SHIM` provides them (tests/openrlhf_shim/README.md).
"""
from __future__ import annotations

import argparse
import ast
import asyncio
import datetime
import importlib
import itertools
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from openrlhf_shim import use_shim_if_needed
from openrlhf_shim.trainer_standins import scripted_output

use_shim_if_needed()
try:
    from openrlhf.trainer.ppo_utils import experience_maker, samples_generator
except ImportError as err:  # pragma: no cover - depends on the machine
    if os.environ.get("CI") == "true":
        pytest.fail(f"OpenRLHF is not importable ({err}), and CI must run these tests: scripts/setup.sh installs "
                    "openrlhf and vllm with --no-deps plus the `openrlhf` extra of pyproject.toml", pytrace=False)
    pytest.skip(f"OpenRLHF is not installed ({err}): run scripts/setup.sh", allow_module_level=True)

import torch
from openrlhf.datasets.prompts_dataset import PromptDataset
from openrlhf.datasets.utils import blending_datasets
from openrlhf.trainer.ppo_utils.experience import Experience
from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController
from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
from openrlhf.utils.agent import AgentExecutorBase
from openrlhf.utils.config import hierarchize
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
from vllm import SamplingParams

import credit
from code_gym.actions.parse import canonical_text
from code_gym import TOOL_SCHEMAS
from code_gym.apps.cli import main as code_gym_main
from code_gym.actions.replay import hermes
from code_gym.tasks.task import bundled_tasks, resolve_task
from conftest import FILES, write_tiny_task
from integrations.episodes import RECORD_KEY, SUBMIT, AgentConfig, token_offsets
from integrations.openrlhf import hook, train
from integrations.openrlhf.agent import AgentExecutor
from integrations.openrlhf.estimator import credit_advantages, patch_experience_maker, patch_samples_generator

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "integrations" / "openrlhf" / "scripts"
MAX_LEN = 8192
SAMPLES = "openrlhf.trainer.ppo_utils.samples_generator"
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


FIX_ADD = call("str_replace", path="calc/ops.py", old_str="def add(a, b):\n    return a - b",
               new_str="def add(a, b):\n    return a + b")
FIX_MUL = call("str_replace", path="calc/ops.py", old_str="def mul(a, b):\n    return a + b",
               new_str="def mul(a, b):\n    return a * b")
BAD_MUL = call("str_replace", path="calc/ops.py", old_str="def mul(a, b):\n    return a + b",
               new_str="def mul(a, b):\n    return a ** b")
VIEW = call("view", path="calc/ops.py")
# Two prompts (groups of OpenRLHF's n_samples_per_prompt = 3), each response a list of turns.
SCRIPTS_BY_SAMPLE = [
    [hermes([FIX_ADD], "Fix add."), hermes([FIX_MUL]), hermes([call("submit")])],
    [hermes([FIX_ADD], "Fix add."), hermes([call("submit")])],
    [hermes([VIEW]), hermes([call("submit")])],
    [hermes([FIX_ADD, FIX_MUL], "Both."), hermes([call("submit")])],
    [hermes([BAD_MUL]), hermes([FIX_ADD], "Fix add."), hermes([call("submit")])],
    [hermes([FIX_ADD], "Fix add."), hermes([call("submit")])],
]
N_SAMPLES = 3


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine: `generate(token ids, sampling params)` returns the next
    scripted response as vLLM does (token ids ending with the stop token, text without it, one
    log-prob dict per token; cut at max_tokens with finish_reason "length")."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses, self.calls = tokenizer, list(responses), []

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls.append((list(prompt_token_ids), sampling_params.max_tokens))
        return scripted_output(self.tokenizer, self.responses.pop(0), prompt_token_ids, sampling_params,
                               request_id=str(len(self.calls)))


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def build_tokenizer():
    """A byte-level BPE trained on text like the episodes' (task files, tool schemas, calls)."""
    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    corpus = [*FILES.values(), json.dumps(TOOL_SCHEMAS), *itertools.chain.from_iterable(SCRIPTS_BY_SAMPLE)]
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    model.train_from_iterator([c for c in corpus if isinstance(c, str)] * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=model, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=CHATML)


def run_episode(tokenizer, label, responses, max_length=MAX_LEN, max_tokens=None, config=None):
    engine = ScriptedEngine(tokenizer, responses)
    params = SamplingParams(temperature=1.0, max_tokens=max_tokens, min_tokens=1, skip_special_tokens=False,
                            logprobs=1)
    executor = AgentExecutor(config or AgentConfig())
    response = asyncio.run(executor.execute("the prompt", label, params, max_length, tokenizer, engine))
    return response, engine


def openrlhf_args(estimator="didpo", options=None, max_new_tokens=None, **reward):
    """The parts of OpenRLHF's (hierarchized) arguments that the code under test reads, with
    OpenRLHF's defaults (micro-batches of 2 samples)."""
    return SimpleNamespace(
        algo=SimpleNamespace(advantage=SimpleNamespace(estimator=estimator, is_correction_level="off", gamma=1.0,
                                                       no_std_norm=False)),
        rollout=SimpleNamespace(n_samples_per_prompt=N_SAMPLES, max_new_tokens=max_new_tokens, micro_batch_size=2),
        train=SimpleNamespace(dynamic_batch_enable=False),
        data=SimpleNamespace(max_len=MAX_LEN),
        reward=SimpleNamespace(**{"overlong_buffer_len": None, "stop_properly_penalty_coef": None,
                                  "clip_range": (-10, 10), **reward}),
        credit=SimpleNamespace(options=json.dumps(options or {})))


@pytest.fixture
def generator(monkeypatch, tokenizer):
    return patched_generator(monkeypatch, tokenizer)


def patched_generator(monkeypatch, tokenizer):
    """OpenRLHF's SamplesGenerator with the record-carrying patches (undone after the test)."""
    cls = samples_generator.SamplesGenerator
    monkeypatch.setattr(cls, "_process_response_into_experience", cls._process_response_into_experience)
    monkeypatch.setattr(cls, "generate_eval_samples", cls.generate_eval_samples)
    patch_samples_generator(samples_generator)
    return cls(strategy=SimpleNamespace(args=openrlhf_args()), prompts_dataloader=None, eval_dataloader=None,
               tokenizer=tokenizer, vllm_engines=[])


@pytest.fixture(scope="module")
def rollouts(tokenizer, tmp_path_factory):
    """The six scripted episodes on the tiny task, run concurrently as OpenRLHF's engine actor does."""
    label = str(write_tiny_task(tmp_path_factory.mktemp("tasks")))

    async def all_samples():
        executor = AgentExecutor(AgentConfig())
        params = SamplingParams(max_tokens=None, min_tokens=1, logprobs=1)
        return await asyncio.gather(*(
            executor.execute("the prompt", label, params, MAX_LEN, tokenizer, ScriptedEngine(tokenizer, script))
            for script in SCRIPTS_BY_SAMPLE))

    return asyncio.run(all_samples())


@pytest.fixture
def maker(monkeypatch, tokenizer):
    """A factory of OpenRLHF's real RemoteExperienceMaker, with the estimator patch (undone after
    the test). No model groups: the tests call its methods that need none."""
    cls = experience_maker.RemoteExperienceMaker
    monkeypatch.setattr(cls, "compute_advantages_and_returns", cls.compute_advantages_and_returns)
    patch_experience_maker(experience_maker)

    def make(args=None):
        strategy = SimpleNamespace(args=args or openrlhf_args())
        return cls(None, None, None, None, FixedKLController(0.0), strategy, tokenizer)

    return make


def experiences_from(generator, responses, maker=None):
    """Experiences as OpenRLHF's trainer builds them: one per response through the samples
    generator, then RemoteExperienceMaker.split_rollout_samples (numbered in rollout order,
    concatenated into micro-batches of --rollout.micro_batch_size)."""
    samples = [generator._process_response_into_experience(r, max_len=MAX_LEN) for r in responses]
    maker = maker or experience_maker.RemoteExperienceMaker(None, None, None, None, None,
                                                            SimpleNamespace(args=openrlhf_args()), generator.tokenizer)
    return maker.split_rollout_samples(samples)


# ---------------------------------------------------------------- the executor


def test_openrlhf_loads_the_executor_from_agent_func_path():
    executor = _load_agent_executor(str(ROOT / "integrations" / "openrlhf" / "agent_func.py"))
    assert isinstance(executor, AgentExecutorBase) and type(executor).__name__ == "AgentExecutor"


def test_episode_honours_openrlhf_contract_and_records_every_step(tokenizer, tiny_task):
    script = SCRIPTS_BY_SAMPLE[0]
    response, engine = run_episode(tokenizer, str(tiny_task.root), script)
    tokens, ranges = response["observation_tokens"], response["action_ranges"]
    record = response[RECORD_KEY]

    # token ids in and out: each call saw exactly the conversation so far, and the generated ids
    # are in the sequence unchanged
    assert len(engine.calls) == len(ranges) == 3
    for (prompt_ids, max_tokens), (start, end), text in zip(engine.calls, ranges, script):
        assert prompt_ids == tokens[:start] and max_tokens == MAX_LEN - start
        assert tokens[start:end] == tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    assert len(tokens) <= MAX_LEN and response["truncated"] is False
    # log-probs: one per token, the engine's on actions, 0 elsewhere
    log_probs = np.array(response["rollout_log_probs"])
    assert log_probs.shape == (len(tokens),)
    in_action = np.zeros(len(tokens), bool)
    for start, end in ranges:
        in_action[start:end] = True
        assert np.allclose(log_probs[start:end], [-(k % 7) / 10 for k in range(end - start)])
    assert not log_probs[~in_action].any()

    # the record: outcome, and per step the diff, provenance, token span and offsets
    assert record.outcome == response["reward"] == response["scores"] == 1.0 and record.resolved
    assert [s.token_span for s in record.steps] == ranges
    first = record.steps[0]
    assert "+    return a + b" in first.diff and "-    return a - b" in first.diff
    [(path, line, start, end)] = first.provenance
    assert (path, line, first.action[start:end]) == ("calc/ops.py", 2, "    return a + b")
    for step, text in zip(record.steps, script):
        assert step.action == text
        assert len(step.token_offsets) == step.token_span[1] - step.token_span[0]
        assert "".join(step.action[s:e] for s, e in step.token_offsets) == step.action
    assert record.steps[2].diff == "" and response["extra_logs"]["code_gym/steps"] == 3


def test_each_observation_is_a_chat_turn_after_the_action(tokenizer, tiny_task):
    response, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[2])
    text = tokenizer.decode(response["observation_tokens"])
    assert text.startswith("<|im_start|>user\nYou are working in a Python repository.")
    (_, first_end), (second_start, _) = response["action_ranges"]
    between = tokenizer.decode(response["observation_tokens"][first_end:second_start])
    assert between.startswith("\n<|im_start|>user\n[view]\n") and between.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_length_budget_ends_the_episode_with_a_graded_submit(tokenizer, tiny_task):
    # room for the first action but not for its feedback: the executor submits for the agent
    full, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1])
    max_length = full["action_ranges"][0][1] + 5
    response, engine = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1], max_length=max_length)
    record = response[RECORD_KEY]
    assert len(engine.calls) == 1 and len(response["observation_tokens"]) <= max_length
    assert [s.action for s in record.steps] == [SCRIPTS_BY_SAMPLE[1][0], canonical_text(SUBMIT)]
    assert record.steps[1].token_span == (len(response["observation_tokens"]),) * 2
    assert record.steps[1].token_offsets.shape == (0, 2)
    assert record.outcome == full[RECORD_KEY].outcome > 0  # graded: the fix of add counts
    assert response["extra_logs"]["code_gym/budget_submit"] == 1.0


def test_max_new_tokens_caps_each_action(tokenizer, tiny_task):
    submit = '<tool_call>{"name": "submit"}</tool_call>'
    cap = len(tokenizer(submit, add_special_tokens=False)["input_ids"]) + 1
    response, engine = run_episode(tokenizer, str(tiny_task.root), [hermes([FIX_ADD]), submit], max_tokens=cap)
    assert [max_tokens for _, max_tokens in engine.calls] == [cap, cap]
    (first_start, first_end), _ = response["action_ranges"]
    first = response[RECORD_KEY].steps[0]
    assert first_end - first_start == cap and first.diff == "" and first.token_offsets[-1, 1] == len(first.action)
    assert response["truncated"] is False  # OpenRLHF's flag is about the last action, which stopped


def test_an_action_cut_by_the_length_budget_is_truncated(tokenizer, tiny_task):
    full, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1])
    prompt_length = full["action_ranges"][0][0]
    response, engine = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1], max_length=prompt_length + 6)
    assert engine.calls[0][1] == 6 and response["action_ranges"] == [(prompt_length, prompt_length + 6)]
    assert response["truncated"] is True and response["extra_logs"]["code_gym/budget_submit"] == 1.0
    assert len(response["observation_tokens"]) == prompt_length + 6


def test_token_offsets_fall_back_to_decoding_for_non_canonical_tokens(tokenizer):
    text = "def add(a, b):"
    canonical = tokenizer(text, add_special_tokens=False)["input_ids"]
    # the same text spelled one byte-level token per character, as sampling can produce it
    spelled = [tokenizer.convert_tokens_to_ids(t) for t in tokenizer.convert_ids_to_tokens(canonical) for t in t]
    assert spelled != canonical and tokenizer.decode(spelled) == text
    offsets = token_offsets(tokenizer, spelled + [tokenizer.eos_token_id], text)
    assert offsets.tolist() == [[k, k + 1] for k in range(len(text))] + [[len(text), len(text)]]


def test_token_offsets_give_a_multibyte_character_to_the_token_that_completes_it(tokenizer):
    text = "def é"
    spelled = [tokenizer.convert_tokens_to_ids(c) for c in "defĠÃ©"]  # one byte-level token per byte
    assert tokenizer.decode(spelled) == text
    assert token_offsets(tokenizer, spelled, text).tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 4], [4, 5]]


def test_config_from_environment_reaches_the_environment_and_chat(tokenizer, tiny_task):
    config = AgentConfig.from_environ({"CODE_GYM_AGENT": json.dumps(
        {"env": {"max_steps": 1}, "system": "You fix bugs.", "feedback_role": "tool"})})
    response, engine = run_episode(tokenizer, str(tiny_task.root), [hermes([VIEW])], config=config)
    assert tokenizer.decode(engine.calls[0][0]).startswith("<|im_start|>system\nYou fix bugs.<|im_end|>")
    assert len(response[RECORD_KEY].steps) == 1  # max_steps=1 truncated and graded the episode
    with pytest.raises(ValueError, match="CODE_GYM_AGENT must be a JSON object"):
        AgentConfig.from_environ({"CODE_GYM_AGENT": '{"max_steps": 3}'})


# ---------------------------------------------------------------- records through OpenRLHF


def test_records_survive_openrlhfs_response_processing(generator, rollouts):
    experience = generator._process_response_into_experience(rollouts[0], max_len=MAX_LEN)
    assert experience.info[RECORD_KEY] == [rollouts[0][RECORD_KEY]]
    # action_mask drops the first token: mask position p is sequence position p + 1
    mask = experience.action_mask[0]
    for start, end in rollouts[0]["action_ranges"]:
        assert mask[start - 1:end - 1].all()
    assert int(mask.sum()) == sum(end - start for start, end in rollouts[0]["action_ranges"])
    assert experience.rewards.tolist() == [1.0] and experience.info["code_gym/resolved"].tolist() == [1.0]
    batched = Experience.concat_experiences([experience, experience], 0)
    assert batched.info[RECORD_KEY] == [rollouts[0][RECORD_KEY]] * 2


@pytest.mark.parametrize("estimator", ["didpo", "didpo-split", "gigpo"])
def test_advantages_equal_credit_on_the_same_trajectories(generator, rollouts, estimator):
    experiences = experiences_from(generator, rollouts)
    credit_advantages(experiences, openrlhf_args(estimator))

    trajectories = [r[RECORD_KEY].to_trajectory(group=i // N_SAMPLES) for i, r in enumerate(rollouts)]
    expected = credit.get(estimator)(trajectories)
    assert len({float(a) for a in expected.episode}) > 1
    rows = [(e, b) for e in experiences for b in range(len(e.sequences))]
    step_row = 0
    for i, ((experience, b), response) in enumerate(zip(rows, rollouts)):
        assert RECORD_KEY not in experience.info and experience.kl is None
        written = experience.advantages[b].numpy()
        returns = experience.returns[b].numpy()
        covered = np.zeros_like(written, bool)
        for t, step in enumerate(response[RECORD_KEY].steps):
            start, end = step.token_span
            assert np.allclose(written[start - 1:end - 1], expected.tokens[i][t], atol=1e-6)
            assert np.allclose(returns[start - 1:end - 1], expected.steps.returns[step_row])
            covered[start - 1:end - 1] = True
            step_row += 1
        assert not written[~covered].any() and not returns[~covered].any()
        assert experience.advantages.shape == experience.action_mask.shape
    if estimator == "didpo":  # the diff term is there: some tokens differ from their episode's A^E
        assert expected.anchors and any(
            not np.allclose(tokens, expected.episode[i]) for i, steps in enumerate(expected.tokens) for tokens in steps)
    if estimator == "didpo-split":  # the preset's rule, not the paper's, reached the experiences
        assert expected.estimator == "didpo-split" and not all(
            np.allclose(a, b) for i, steps in enumerate(expected.tokens)
            for a, b in zip(steps, credit.didpo(trajectories).tokens[i]))


def test_estimator_options_length_penalty_and_clip_range_reach_credit(generator, rollouts, maker):
    # ProRL's stop-properly penalty on the first two samples (as if their last action was cut),
    # then OpenRLHF's reward clip range, which its own estimators apply in compute_reward
    samples = [generator._process_response_into_experience(r, max_len=MAX_LEN) for r in rollouts]
    for sample in samples[:2]:
        sample.truncated[:] = True
    args = openrlhf_args("didpo", {"lambda_": 0.5, "mode": "mean_std_norm"}, stop_properly_penalty_coef=-0.5,
                         clip_range=(-0.25, 0.9))
    made = maker(args)
    experiences = made.compute_advantages_and_returns(made.split_rollout_samples(samples))
    assert torch.cat([e.rewards for e in experiences]).tolist()[:2] == [-0.5, -0.5]
    outcomes = [-0.25, -0.25] + [min(r[RECORD_KEY].outcome, 0.9) for r in rollouts[2:]]
    trajectories = [r[RECORD_KEY].to_trajectory(group=i // N_SAMPLES, outcome=outcome)
                    for i, (r, outcome) in enumerate(zip(rollouts, outcomes))]
    expected = credit.didpo(trajectories, lambda_=0.5, mode="mean_std_norm")
    for i, (experience, b) in enumerate((e, b) for e in experiences for b in range(len(e.sequences))):
        for t, step in enumerate(rollouts[i][RECORD_KEY].steps):
            start, end = step.token_span
            assert np.allclose(experience.advantages[b, start - 1:end - 1].numpy(), expected.tokens[i][t], atol=1e-5)


def test_missing_records_name_the_executor(generator, rollouts):
    experiences = experiences_from(generator, rollouts)
    del experiences[0].info[RECORD_KEY]
    with pytest.raises(ValueError, match="agent_func.py"):
        credit_advantages(experiences, openrlhf_args())


def test_real_experience_maker_dispatches_on_the_estimator(generator, rollouts, maker):
    # OpenRLHF's own estimators run unchanged (the records removed first): group_norm's advantage
    # is the group-normalised reward on the last action token
    grpo = maker(openrlhf_args("group_norm"))
    experiences = grpo.split_rollout_samples(
        [generator._process_response_into_experience(r, max_len=MAX_LEN) for r in rollouts])
    for experience in experiences:
        experience.kl = torch.zeros(experience.action_mask.shape)  # what make_experience sets
    experiences = grpo.compute_advantages_and_returns(experiences)
    rewards = torch.tensor([r["reward"] for r in rollouts]).reshape(-1, N_SAMPLES)
    normed = ((rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)).reshape(-1)
    last_token = [e.advantages[b][e.action_mask[b].nonzero()[-1]] for e in experiences for b in range(len(e.index))]
    assert all(RECORD_KEY not in e.info for e in experiences)
    assert torch.allclose(torch.cat(last_token), normed.float(), atol=1e-5)
    # didpo goes to credit
    didpo = maker(openrlhf_args("didpo"))
    done = didpo.compute_advantages_and_returns(experiences_from(generator, rollouts, didpo))
    assert all(e.advantages is not None and "credit/excluded" in e.info for e in done)
    assert getattr(experience_maker.RemoteExperienceMaker.compute_advantages_and_returns, "_code_gym", False)


def test_setup_hook_patches_samples_generator_when_a_worker_imports_it(monkeypatch):
    package = importlib.import_module("openrlhf.trainer.ppo_utils")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, SAMPLES)
    monkeypatch.setattr(package, "samples_generator", samples_generator)
    hook.install()
    hook.install()
    fresh = importlib.import_module(SAMPLES)
    assert fresh is not samples_generator
    assert getattr(fresh.SamplesGenerator._process_response_into_experience, "_code_gym", False)
    assert sum(isinstance(f, hook._PatchOnImport) for f in sys.meta_path) == 1


def test_runtime_env_carries_the_hook_and_code_gym_variables():
    environ = {"CODE_GYM_AGENT": "{}", "CODE_GYM_TASKS": "/tasks", "HOME": "/root",
               "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps({"runtime_env": {"env_vars": {"CODE_GYM_TASKS": "/t"}}})}
    env = train.runtime_env_with_hook({"env_vars": {"NCCL_DEBUG": "WARN"}}, environ)
    assert env["worker_process_setup_hook"] == hook.SETUP_HOOK
    # the job already sets CODE_GYM_TASKS for every worker; setting it again would be a Ray conflict
    assert env["env_vars"] == {"NCCL_DEBUG": "WARN", "CODE_GYM_AGENT": "{}"}


# ---------------------------------------------------------------- the entry point and scripts


def openrlhf_parser() -> argparse.ArgumentParser:
    """OpenRLHF's own train_ppo_ray parser, built by running the `__main__` block of its installed
    file up to `parse_args` (the module's imports need GPUs: deepspeed, flash-attn)."""
    path = importlib.util.find_spec(train.TRAIN_MODULE).origin
    tree = ast.parse(Path(path).read_text())
    main = next(node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test))
    body = list(itertools.takewhile(lambda node: "parse_args" not in ast.unparse(node), main.body))
    namespace = {"argparse": argparse, "datetime": datetime.datetime}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), namespace)
    return namespace["parser"]


def script_command(script, *extra, **env):
    """The final command a launch script prints with --dry-run, as argv."""
    out = subprocess.run(["bash", str(SCRIPTS / script), "--dry-run", *extra], capture_output=True, text=True,
                         env={**os.environ, "PYTHON": sys.executable, **env}, check=True).stdout
    [line] = [line for line in out.splitlines() if "integrations.openrlhf.train" in line]
    argv = shlex.split(line)
    return argv[argv.index("integrations.openrlhf.train") + 1:]


def parse(argv):
    with train.openrlhf_extended():
        return hierarchize(openrlhf_parser().parse_args(argv))


def test_launch_scripts_parse_with_openrlhfs_parser_and_differ_only_in_the_estimator(tmp_path):
    didpo = parse(script_command("train_didpo.sh", "--credit.options", '{"lambda_": 0.5}', OUT=str(tmp_path)))
    grpo = parse(script_command("train_grpo_baseline.sh", OUT=str(tmp_path)))
    cluster = parse(script_command("train_didpo_multinode.sh", "submit", "--head-address", "10.0.0.1",
                                   OUT=str(tmp_path)))
    assert didpo.algo.advantage.estimator == "didpo" and grpo.algo.advantage.estimator == "group_norm"
    assert json.loads(didpo.credit.options) == {"lambda_": 0.5}
    assert Path(didpo.train.agent_func_path).resolve() == ROOT / "integrations" / "openrlhf" / "agent_func.py"
    assert (didpo.vllm.num_engines, didpo.train.colocate_all, didpo.algo.kl.use_loss) == (8, True, True)
    assert (cluster.actor.num_nodes, cluster.vllm.num_engines) == (2, 16)

    def settings(args):
        return {k: v for k, v in _flatten(args).items() if k not in ("algo.advantage.estimator", "credit.options")
                and not k.startswith(("ckpt.", "logger."))}

    assert settings(didpo) == settings(grpo)
    split = parse(script_command("train_didpo.sh", ESTIMATOR="didpo-split", OUT=str(tmp_path)))
    assert split.algo.advantage.estimator == "didpo-split" and settings(split) == settings(didpo)


def _flatten(namespace, prefix=""):
    out = {}
    for key, value in vars(namespace).items():
        if isinstance(value, SimpleNamespace):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("argv, message", [
    (["--algo.advantage.estimator", "didpo", "--algo.kl.use_loss"], "n_samples_per_prompt 2 or more"),
    (["--algo.advantage.estimator", "gigpo", "--rollout.n_samples_per_prompt", "4"], "--algo.kl.use_loss"),
    (["--algo.advantage.estimator", "didpo", "--rollout.n_samples_per_prompt", "4", "--algo.kl.init_coef", "0",
      "--credit.options", '{"lamda": 1}'], "lamda"),
    # a bad value: before, accepted here, and the run failed at its first advantage step, after a rollout
    (["--algo.advantage.estimator", "didpo", "--rollout.n_samples_per_prompt", "4", "--algo.kl.init_coef", "0",
      "--credit.options", '{"mode": "bogus"}'], "mode must be one of"),
    (["--algo.advantage.estimator", "didpo", "--rollout.n_samples_per_prompt", "4", "--algo.kl.init_coef", "0",
      "--credit.options", '{"lambda_": "abc"}'], "lambda_ must be a number"),
    (["--algo.advantage.estimator", "didpo", "--credit.options", "[1]"], "JSON object"),
    (["--algo.advantage.estimator", "didpo-split", "--rollout.n_samples_per_prompt", "4", "--algo.kl.init_coef",
      "0", "--credit.options", '{"cover": "tokens"}'], "estimator 'didpo-split': cover must be one of ('lines', "),
    (["--algo.advantage.estimator", "ppo"], "invalid choice"),
])
def test_entry_point_rejects_what_didpo_cannot_run(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        parse(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_entry_point_leaves_openrlhf_estimators_alone_and_defaults_the_agent():
    args = parse(["--algo.advantage.estimator", "group_norm", "--rollout.n_samples_per_prompt", "4"])
    assert args.algo.advantage.estimator == "group_norm" and args.credit.options == "{}"
    assert args.train.agent_func_path == train.AGENT_FUNC
    assert argparse.ArgumentParser.add_argument.__name__ == "add_argument"  # the patches are undone
    assert "didpo" not in openrlhf_parser().format_help()


def test_dataset_command_writes_what_openrlhfs_prompt_dataset_reads(tmp_path, tiny_task):
    out = tmp_path / "prompts.jsonl"
    assert code_gym_main(["openrlhf", "dataset", "--tasks", str(tiny_task.root), "bundled", "--out", str(out)]) == 0
    # read as OpenRLHF's trainer does (prepare_datasets): blending_datasets, then PromptDataset
    args = SimpleNamespace(data=SimpleNamespace(input_key="input", label_key="label", apply_chat_template=False),
                           use_ms=False)
    strategy = SimpleNamespace(args=args, is_rank_0=lambda: False, print=lambda *a: None)
    dataset = PromptDataset(blending_datasets(str(out), None, strategy), tokenizer=None, strategy=strategy)
    assert dataset.prompts[0] == tiny_task.statement and dataset.labels[0] == str(tiny_task.root)
    assert set(dataset.datasources) == {"code_gym"} and len(dataset) == 1 + len(bundled_tasks())
    resolved = [resolve_task(label).id for label in dataset.labels]
    assert resolved[0] == "tiny" and resolved[1:] == dataset.labels[1:]  # bundled tasks go by id


# ---------------------------------------------------------------- faults, masks, eval, offsets


def test_a_reset_that_raises_is_retried(tokenizer, tiny_task, monkeypatch):
    from integrations.openrlhf import agent

    attempts = []

    def start_flaky(env, task, *args, **kwargs):
        attempts.append(task)
        if len(attempts) == 1:
            raise OSError("the workspace disk went away")  # a transient fault on the first reset
        return original(env, task, *args, **kwargs)

    original = agent.EpisodeRun.start
    monkeypatch.setattr(agent.EpisodeRun, "start", start_flaky)
    response, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1])
    assert len(attempts) == 2 and response[RECORD_KEY].resolved is False and not response[RECORD_KEY].excluded
    assert response["extra_logs"]["code_gym/failed"] == 0.0 and len(response[RECORD_KEY].steps) == 2


def test_a_reset_that_keeps_failing_ends_the_episode_as_failed(tokenizer, tmp_path):
    missing = str(tmp_path / "no-such-task")
    response, engine = run_episode(tokenizer, missing, [], config=AgentConfig(reset_attempts=2))
    record = response[RECORD_KEY]
    assert engine.calls == [] and response["action_ranges"] == [] and response["reward"] == 0.0
    assert record.excluded.startswith("failed: ") and record.steps == ()
    assert response["extra_logs"] == {"code_gym/resolved": 0.0, "code_gym/steps": 0.0, "code_gym/budget_submit": 0.0,
                                      "code_gym/failed": 1.0}
    assert tokenizer.decode(response["observation_tokens"]).startswith("<|im_start|>user\nthe prompt")


@pytest.mark.parametrize("estimator", ["didpo", "gigpo"])
def test_failed_episodes_get_zero_advantage_and_no_place_in_group_baselines(generator, rollouts, tokenizer,
                                                                            tmp_path, estimator):
    failed, _ = run_episode(tokenizer, str(tmp_path / "gone"), [], config=AgentConfig(reset_attempts=1))
    responses = [rollouts[0], failed, *rollouts[2:]]
    experiences = experiences_from(generator, responses)
    credit_advantages(experiences, openrlhf_args(estimator))
    rows = [(e, b) for e in experiences for b in range(len(e.sequences))]
    experience, b = rows[1]
    assert not experience.advantages[b].any() and not experience.returns[b].any()
    assert experience.info["credit/excluded"][b] == 1.0
    # the others get what credit gives the same trajectories without the failed one: its group
    # baseline is over the two episodes left
    kept = [(i, r) for i, r in enumerate(responses) if i != 1]
    expected = credit.get(estimator)([r[RECORD_KEY].to_trajectory(group=i // N_SAMPLES) for i, r in kept])
    for k, (i, response) in enumerate(kept):
        experience, b = rows[i]
        assert experience.info["credit/episode_advantage"][b] == pytest.approx(float(expected.episode[k]), abs=1e-6)
        for t, step in enumerate(response[RECORD_KEY].steps):
            start, end = step.token_span
            assert np.allclose(experience.advantages[b, start - 1:end - 1].numpy(), expected.tokens[k][t], atol=1e-6)


def test_a_batch_of_only_failed_episodes_trains_on_nothing(generator, tokenizer, tmp_path):
    failed, _ = run_episode(tokenizer, str(tmp_path / "gone"), [], config=AgentConfig(reset_attempts=1))
    experiences = experiences_from(generator, [failed] * N_SAMPLES)
    credit_advantages(experiences, openrlhf_args())
    assert all(not e.advantages.any() and e.info["credit/excluded"].all() for e in experiences)


def test_budget_forced_submits_can_be_masked(tokenizer, tiny_task):
    full, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1])
    max_length = full["action_ranges"][0][1] + 5
    trained, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1], max_length=max_length)
    masked, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1], max_length=max_length,
                            config=AgentConfig(budget_submit="mask"))
    assert trained[RECORD_KEY].excluded == "" and masked[RECORD_KEY].excluded == "budget_submit"
    assert masked["extra_logs"]["code_gym/budget_submit"] == 1.0 and masked[RECORD_KEY].outcome > 0
    unmasked, _ = run_episode(tokenizer, str(tiny_task.root), SCRIPTS_BY_SAMPLE[1],
                              config=AgentConfig(budget_submit="mask"))
    assert unmasked[RECORD_KEY].excluded == ""  # a submit of the agent's own is trained on
    with pytest.raises(ValueError, match="budget_submit"):
        AgentConfig(budget_submit="drop")


def test_eval_metrics_are_the_resolve_rate(generator, rollouts, monkeypatch):
    from openrlhf.trainer.ppo_trainer import compute_eval_metrics

    # the six scripted episodes as an eval set of two prompts; vLLM's dispatch is stood in
    samples = [generator._process_response_into_experience(r, max_len=MAX_LEN) for r in rollouts]
    monkeypatch.setattr(generator, "_generate_vllm", lambda **kwargs: (samples, 2, True), raising=False)
    generator.args.vllm = SimpleNamespace(enable_sleep=False)
    generator.args.rollout.batch_size = 2
    generator.eval_dataloader = [(["code_gym"] * 2, ["the prompt"] * 2, ["a", "b"], [None] * 2)]
    logs = compute_eval_metrics(generator.eval_dataloader, generator.generate_eval_samples(), N_SAMPLES)
    resolved = [r[RECORD_KEY].resolved for r in rollouts]
    assert logs["eval_code_gym_pass1"] == pytest.approx(np.mean(resolved))
    assert logs["eval_code_gym_pass3"] == pytest.approx(np.mean([any(resolved[:3]), any(resolved[3:])]))
    assert np.mean([r["reward"] for r in rollouts]) != pytest.approx(np.mean(resolved))  # not the mean reward


class CountingTokenizer:
    """The tokenizer of the tests, counting the tokens it is asked to decode."""

    def __init__(self, tokenizer):
        self.tokenizer, self.decoded = tokenizer, 0

    def decode(self, ids, **kwargs):
        self.decoded += len(ids)
        return self.tokenizer.decode(ids, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)

    def __call__(self, *args, **kwargs):
        return self.tokenizer(*args, **kwargs)


def test_token_offsets_decoding_is_linear_in_the_action_length(tokenizer):
    text = "def add(a, b):\n    return a + b  # é\n" * 40
    canonical = tokenizer(text, add_special_tokens=False)["input_ids"]
    spelled = [tokenizer.convert_tokens_to_ids(t) for t in tokenizer.convert_ids_to_tokens(canonical) for t in t]
    counting = CountingTokenizer(tokenizer)
    offsets = token_offsets(counting, spelled, text)
    assert "".join(text[s:e] for s, e in offsets) == text and (np.diff(offsets[:, 0]) >= 0).all()
    assert counting.decoded <= 4 * len(spelled)  # a few tokens per decode, not a growing prefix


def test_entry_point_refuses_the_overlong_penalty_for_episodes(capsys):
    with pytest.raises(SystemExit):
        parse(["--algo.advantage.estimator", "group_norm", "--rollout.n_samples_per_prompt", "4",
               "--reward.overlong_buffer_len", "512", "--rollout.max_new_tokens", "4096"])
    assert "whole response span" in capsys.readouterr().err


def own_estimator(maker, estimator, micro_batches, n_samples):
    """OpenRLHF's real compute_advantages_and_returns (the patched method, `estimator` one of its
    own) on `micro_batches` of samples, numbered in order as split_rollout_samples numbers them."""
    args = openrlhf_args(estimator)
    args.rollout.n_samples_per_prompt = n_samples
    made = maker(args)
    index = itertools.count()
    experiences = []
    for batch in micro_batches:
        for sample in batch:
            sample.index = [next(index)]
        experiences.append(Experience.concat_experiences(batch, made.tokenizer.pad_token_id))
        experiences[-1].kl = torch.zeros(experiences[-1].action_mask.shape)  # what make_experience sets
    return per_sample(made.compute_advantages_and_returns(experiences))


def failed_response(tokenizer, label, monkeypatch):
    """An episode whose second step raised (a sandbox that died mid-episode): failed, with the
    tokens of its first action in the response."""
    from integrations.openrlhf import agent

    steps = []

    def step_then_die(self, action):
        steps.append(action)
        if len(steps) == 2:
            raise ConnectionError("the sandbox went away")
        return original(self, action)

    original = agent.EpisodeRun.step
    with monkeypatch.context() as patch:
        patch.setattr(agent.EpisodeRun, "step", step_then_die)
        failed, _ = run_episode(tokenizer, label, SCRIPTS_BY_SAMPLE[0])
    assert failed[RECORD_KEY].excluded.startswith("failed: ") and len(failed["action_ranges"]) == 2
    return failed


@pytest.mark.parametrize("estimator", ["rloo", "group_norm", "dr_grpo", "reinforce_baseline", "reinforce"])
def test_openrlhfs_own_estimators_treat_failed_episodes_as_absent(generator, rollouts, tokenizer, tiny_task, maker,
                                                                  monkeypatch, estimator):
    # one failed episode in each group of 3: the batch must train as OpenRLHF would train the same
    # micro-batches without the failed rows (groups of 2), bit for bit (their action tokens in no
    # whitening either)
    failed = failed_response(tokenizer, str(tiny_task.root), monkeypatch)
    responses = [rollouts[0], failed, rollouts[2], rollouts[3], failed, rollouts[5]]
    samples = tagged_samples(generator, responses)
    got = own_estimator(maker, estimator, [samples[0:2], samples[2:4], samples[4:6]], N_SAMPLES)
    kept = [s for s in tagged_samples(generator, responses) if int(s.info["test/sample"]) not in (1, 4)]
    expected = own_estimator(maker, estimator, [kept[0:1], kept[1:3], kept[3:4]], N_SAMPLES - 1)
    assert sorted(expected) == [0, 2, 3, 5]
    for i in (1, 4):
        assert not got[i][0].any() and not got[i][1].any()
    for i, (advantages, returns) in expected.items():
        assert torch.equal(got[i][0], advantages) and torch.equal(got[i][1], returns), f"sample {i}"
    assert any(a.abs().sum() > 0 for a, _ in expected.values())


@pytest.mark.parametrize("failed_rows", [(1,), (0, 1)])
@pytest.mark.parametrize("estimator", ["rloo", "group_norm", "dr_grpo"])
def test_group_statistics_count_only_the_kept_episodes_of_each_group(generator, rollouts, tokenizer, tiny_task, maker,
                                                                     monkeypatch, estimator, failed_rows):
    # failures in the first group only: its kept rows get what OpenRLHF gives that group alone with
    # its kept episodes, the second group what it gives the second alone; a group left with one
    # episode has no group statistic (OpenRLHF's would be NaN for rloo and group_norm): zero
    failed = failed_response(tokenizer, str(tiny_task.root), monkeypatch)
    responses = [failed if i in failed_rows else r for i, r in enumerate(rollouts)]
    samples = tagged_samples(generator, responses)
    got = per_sample([e for e in own_estimator_batches(maker, estimator, samples)])
    fresh = tagged_samples(generator, responses)
    first = [s for s in fresh[:N_SAMPLES] if int(s.info["test/sample"]) not in failed_rows]
    expected = own_estimator(maker, estimator, [fresh[N_SAMPLES:]], N_SAMPLES)
    if len(first) > 1:
        expected.update(own_estimator(maker, estimator, [first], len(first)))
    for i in range(len(rollouts)):
        if i in failed_rows or i not in expected:
            assert not got[i][0].any() and not got[i][1].any(), f"sample {i}"
        else:
            assert torch.equal(got[i][0], expected[i][0]) and torch.equal(got[i][1], expected[i][1]), f"sample {i}"
    assert all(torch.isfinite(a).all() for a, _ in got.values())


def own_estimator_batches(maker, estimator, samples):
    """The patched compute on OpenRLHF's own split_rollout_samples of `samples` (micro-batches of 2)."""
    made = maker(openrlhf_args(estimator))
    experiences = made.split_rollout_samples(samples)
    for experience in experiences:
        experience.kl = torch.zeros(experience.action_mask.shape)  # what make_experience sets
    return made.compute_advantages_and_returns(experiences)


def add_as(expr, note):
    """A first response that fixes add() as `return <expr>` (all three are near-duplicates of the
    next one, not of the one after: "a + b" ~ "a + b + 0" ~ "a + b + 0 + 0")."""
    return hermes([call("str_replace", path="calc/ops.py", old_str="def add(a, b):\n    return a - b",
                        new_str=f"def add(a, b):\n    return {expr}")], note)


# two prompts; the first group's add() fixes are a chain of near-duplicates, so which two of them
# credit clusters into one anchor depends on the order it meets them (credit's greedy grouping)
CHAINED_SCRIPTS = [
    [add_as("a + b", "A."), hermes([FIX_MUL]), hermes([call("submit")])],
    [add_as("a + b + 0", "B."), hermes([call("submit")])],
    [add_as("a + b + 0 + 0", "C."), hermes([BAD_MUL]), hermes([call("submit")])],
    [hermes([FIX_ADD, FIX_MUL], "Both."), hermes([call("submit")])],
    [hermes([VIEW]), hermes([call("submit")])],
    [hermes([BAD_MUL]), hermes([FIX_ADD], "Fix add."), hermes([call("submit")])],
]


@pytest.fixture(scope="module")
def chained(tokenizer, tmp_path_factory):
    """CHAINED_SCRIPTS played on two copies of the tiny task (one per prompt), in rollout order."""
    labels = [str(write_tiny_task(tmp_path_factory.mktemp(f"task{k}"))) for k in range(2)]

    async def all_samples():
        executor = AgentExecutor(AgentConfig())
        params = SamplingParams(max_tokens=None, min_tokens=1, logprobs=1)
        return await asyncio.gather(*(
            executor.execute("the prompt", labels[i // N_SAMPLES], params, MAX_LEN, tokenizer,
                             ScriptedEngine(tokenizer, script)) for i, script in enumerate(CHAINED_SCRIPTS)))

    return asyncio.run(all_samples())


def test_credit_didpo_does_not_depend_on_the_order_of_a_group(chained):
    # why the estimator hands credit its episodes in rollout order (the dynamic-batching test
    # below): the same three episodes of one task, listed forwards and backwards
    group = [r[RECORD_KEY].to_trajectory(group="task") for r in chained[:N_SAMPLES]]
    forward, backward = credit.didpo(group), credit.didpo(group[::-1])
    for i in range(N_SAMPLES):
        for t in range(len(group[i].steps)):
            assert np.allclose(forward.tokens[i][t], backward.tokens[N_SAMPLES - 1 - i][t]), f"episode {i}, step {t}"


def dynamic_args(estimator, max_tokens_per_gpu, gpus=1):
    """openrlhf_args with OpenRLHF's dynamic batching on `gpus` actor ranks (what
    split_rollout_samples and balance_experiences read)."""
    args = openrlhf_args(estimator)
    args.train.dynamic_batch_enable = True
    args.rollout.max_tokens_per_gpu = max_tokens_per_gpu
    args.actor = SimpleNamespace(num_nodes=1, num_gpus_per_node=gpus)
    args.ds = SimpleNamespace(ring_attn_size=1, tensor_parallel_size=1)
    return args


def tagged_samples(generator, responses):
    """One sample per response, as the samples generator makes them, each tagged in its info with
    its rollout position (`test/sample`: info travels with the sample through every regrouping)."""
    samples = [generator._process_response_into_experience(r, max_len=MAX_LEN) for r in responses]
    for i, sample in enumerate(samples):
        sample.info["test/sample"] = torch.tensor([float(i)])
    return samples


def per_sample(experiences):
    """{rollout position: (advantages, returns) on the sample's action tokens} over a batch list."""
    out = {}
    for experience in experiences:
        for b in range(len(experience.sequences)):
            mask = experience.action_mask[b].bool()
            out[int(experience.info["test/sample"][b])] = (experience.advantages[b][mask], experience.returns[b][mask])
    return out


@pytest.mark.parametrize("estimator", ["didpo", "gigpo"])
def test_dynamic_batching_gives_every_sample_the_advantages_of_fixed_micro_batches(generator, chained, maker,
                                                                                   estimator):
    from openrlhf.trainer.ppo_utils.experience import balance_experiences

    fixed = maker(openrlhf_args(estimator))
    expected = per_sample(fixed.compute_advantages_and_returns(
        fixed.split_rollout_samples(tagged_samples(generator, chained))))
    # OpenRLHF's dynamic batching: split_rollout_samples packs the samples into length-balanced
    # micro-batches (Karmarkar-Karp), out of rollout order, and the trainer then deals them out
    # to the actor ranks longest first (balance_experiences); here the first group arrives as C, A, B
    args = dynamic_args(estimator, max_tokens_per_gpu=max(len(r["observation_tokens"]) for r in chained))
    dynamic = maker(args)
    made = dynamic.split_rollout_samples(tagged_samples(generator, chained))
    order = [i for e in made for i in e.index]
    assert [i for i in order if i < N_SAMPLES] == [2, 0, 1]
    got = per_sample(balance_experiences(dynamic.compute_advantages_and_returns(made), args))
    assert sorted(got) == sorted(expected) == list(range(len(chained)))
    for i, (advantages, returns) in expected.items():  # bit for bit
        assert torch.equal(got[i][0], advantages) and torch.equal(got[i][1], returns), f"sample {i}"
