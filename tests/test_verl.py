"""The verl integration against verl's real modules (verl==0.9.1 and TransferQueue==0.1.11, installed
with --no-deps by scripts/setup.sh, plus the `verl` extra of pyproject.toml).

Real: verl's estimator registry and `compute_advantage`, `AgentLoopOutput.as_dict` and
`list_of_dict_to_tensordict` (how the agent-loop worker stores an episode), the v1 trainer's
`PPOTrainer._compute_advantage` reading a batch from a running TransferQueue, verl's padding rows
(`upsample_batch_to_divisible_size`), the agent-loop registry and hydra instantiation from
agent_loop.yaml as verl's `AgentLoopWorker` does it, verl's Continuous Token builder, CodeRepo-v0
episodes in the sandbox, Ray's worker_process_setup_hook. One stand-in: `ScriptedServer` plays
verl's LLM server (vLLM, which needs a GPU): `generate` returns the next scripted response as verl's
`TokenOutput`. The tokenizer is test_openrlhf's (a byte-level BPE trained in the test, ChatML).
"""
from __future__ import annotations

import asyncio
import os
import textwrap
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

try:
    from verl.trainer.ppo import core_algos
except ImportError as err:  # pragma: no cover - depends on the machine
    if os.environ.get("CI") == "true":
        pytest.fail(f"verl is not importable ({err}), and CI must run these tests: scripts/setup.sh installs "
                    "verl and TransferQueue with --no-deps plus the `verl` extra of pyproject.toml", pytrace=False)
    pytest.skip(f"verl is not installed ({err}): run scripts/setup.sh", allow_module_level=True)

import hydra
import torch
import verl.trainer.main_ppo
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.tensordict_utils import list_of_dict_to_tensordict
from verl.workers.rollout.replica import TokenOutput

import credit
from code_gym.apps.cli import main as code_gym_main
from code_gym.apps.dataset import AGENT_NAME
from conftest import write_tiny_task
from integrations.episodes import RECORD_KEY
from integrations.verl import estimator, hook
from test_openrlhf import N_SAMPLES, SCRIPTS_BY_SAMPLE, build_tokenizer

ROOT = Path(__file__).resolve().parent.parent
AGENT_LOOP_YAML = ROOT / "integrations" / "verl" / "agent_loop.yaml"
SCRIPTS = ROOT / "integrations" / "verl" / "scripts"
RESPONSE_LENGTH = 8192
UIDS = ["prompt-a"] * N_SAMPLES + ["prompt-b"] * N_SAMPLES


class ScriptedServer:
    """Stands in for verl's LLM server client (`LLMServerClient.generate`): the next scripted
    response as vLLM's tokens (ending with the stop token), one log-prob per token, cut at the
    sampling params' max_tokens."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses, self.calls = tokenizer, list(responses), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.calls.append((list(prompt_ids), dict(sampling_params)))
        ids = self.tokenizer(self.responses.pop(0), add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        ids = ids[:sampling_params["max_tokens"]]
        return TokenOutput(token_ids=ids, log_probs=[-(k % 7) / 10 for k in range(len(ids))], stop_reason="completed")


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def verl_config(response_length=RESPONSE_LENGTH):
    """The parts of verl's trainer config that the agent loop reads."""
    return OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": response_length}},
                             "data": {}})


def agent_loop(tokenizer, server, response_length=RESPONSE_LENGTH, **overrides):
    """The `code_gym` loop as verl's AgentLoopWorker makes one: its configs loaded from
    agent_loop_config_path into verl's registry, then `hydra.utils.instantiate` with the worker's
    arguments (here the sandbox's default isolation and at most 4 steps)."""
    for entry in OmegaConf.load(AGENT_LOOP_YAML):
        _agent_loop_registry[entry.name] = entry
    entry = OmegaConf.merge(_agent_loop_registry[AGENT_NAME], {"env": {"max_steps": 4}}, overrides)
    config = verl_config(response_length)
    return hydra.utils.instantiate(config=entry, trainer_config=DictConfigWrap(config=config), server_manager=server,
                                   tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=RLHFDataset,
                                   data_config=DictConfigWrap(config.data), tools=ToolListWrap({}))


def play(tokenizer, label, script, response_length=RESPONSE_LENGTH, row=None, **overrides):
    """One episode of the loop on `label` (or on the dataset `row`, verl's kwargs of a sample)."""
    server = ScriptedServer(tokenizer, script)
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
    row = row or {"raw_prompt": [{"role": "user", "content": "fix calc"}], "extra_info": {"task": label}}

    async def episode():  # built inside the running event loop, as verl's worker builds it
        return await agent_loop(tokenizer, server, response_length, **overrides).run(params, **row)

    return asyncio.run(episode()), server


@pytest.fixture(scope="module")
def label(tmp_path_factory):
    return str(write_tiny_task(tmp_path_factory.mktemp("tasks")))


@pytest.fixture(scope="module")
def outputs(tokenizer, label):
    """The six scripted episodes (two prompts of N_SAMPLES) through the agent loop."""
    return [play(tokenizer, label, script)[0] for script in SCRIPTS_BY_SAMPLE]


def stored_fields(outputs):
    """The rows as verl's agent-loop worker stores them in TransferQueue (`as_dict`, the uid and
    session of each sample, `list_of_dict_to_tensordict`)."""
    fields = []
    for k, output in enumerate(outputs):
        field = output.as_dict()
        field.update(uid=UIDS[k], session_id=k % N_SAMPLES)
        fields.append(field)
    return list_of_dict_to_tensordict(fields)


def verl_batch(outputs):
    """A DataProto as verl's v1 trainer builds it for `compute_advantage`: the stored rows padded,
    token_level_rewards = the reward scores (no KL in the reward), the uids."""
    stored = stored_fields(outputs)
    data = DataProto(batch=stored.select("responses", "response_mask", "rm_scores").to_padded_tensor())
    data.batch["token_level_rewards"] = data.batch["rm_scores"]
    data.non_tensor_batch["uid"] = np.array(UIDS, dtype=object)
    return data, [estimator.stored_record(extra[RECORD_KEY]) for extra in stored.pop("extra_fields").tolist()]


def expected_advantages(name, records, width, **options):
    """credit's estimator on the episodes directly (grouped by uid), each step's per-token values
    placed by hand on its response positions."""
    result = credit.get(name)([r.to_trajectory(group=uid) for r, uid in zip(records, UIDS)], **options)
    out = torch.zeros(len(records), width)
    for i, record in enumerate(records):
        for t, step in enumerate(record.steps):
            start, end = step.token_span
            out[i, start:end] = torch.as_tensor(result.tokens[i][t], dtype=torch.float32)
    return out


# ---------------------------------------------------------------- the agent loop


def test_episode_honours_verls_agent_loop_contract_and_records_every_step(tokenizer, label):
    script = SCRIPTS_BY_SAMPLE[0]
    output, server = play(tokenizer, label, script)
    record = output.extra_fields[RECORD_KEY]
    tokens = output.prompt_ids + output.response_ids
    assert len(output.response_ids) == len(output.response_mask) == len(output.response_logprobs) <= RESPONSE_LENGTH

    # token ids in and out: each call saw the conversation so far, the generated ids are in the
    # response unchanged and masked 1, everything else 0; log-probs on actions only
    assert len(server.calls) == len(record.steps) == 3
    mask = np.array(output.response_mask)
    covered = np.zeros(len(mask), bool)
    prompt = len(output.prompt_ids)
    for (prompt_ids, params), step, text in zip(server.calls, record.steps, script):
        start, end = step.token_span
        assert prompt_ids == tokens[:prompt + start] and params["max_tokens"] == RESPONSE_LENGTH - start
        assert output.response_ids[start:end] == tokenizer(text, add_special_tokens=False)["input_ids"] + \
            [tokenizer.eos_token_id]
        assert np.allclose(output.response_logprobs[start:end], [-(k % 7) / 10 for k in range(end - start)])
        covered[start:end] = True
    assert mask[covered].all() and not mask[~covered].any()
    assert not np.array(output.response_logprobs)[~covered].any()

    # the record: outcome (also verl's reward score), and per step the diff, provenance, offsets
    assert record.outcome == output.reward_score == 1.0 and record.resolved
    first = record.steps[0]
    assert "+    return a + b" in first.diff and "-    return a - b" in first.diff
    [(path, line, start, end)] = first.provenance
    assert (path, line, first.action[start:end]) == ("calc/ops.py", 2, "    return a + b")
    for step, text in zip(record.steps, script):
        assert step.action == text
        assert len(step.token_offsets) == step.token_span[1] - step.token_span[0]
        assert "".join(step.action[s:e] for s, e in step.token_offsets) == step.action
    assert output.extra_fields["code_gym/steps"] == 3.0


def test_the_model_sees_the_environments_prompt_and_tool_turns(tokenizer, label):
    output, server = play(tokenizer, label, SCRIPTS_BY_SAMPLE[2])
    first_prompt = tokenizer.decode(server.calls[0][0])
    # agent_loop.yaml: tool schemas through the chat template, observations as tool turns
    assert first_prompt.startswith("<|im_start|>user\nYou are working in a Python repository.")
    assert first_prompt.endswith("<|im_start|>assistant\n")
    (_, first_end), (second_start, _) = [s.token_span for s in output.extra_fields[RECORD_KEY].steps]
    between = tokenizer.decode(output.response_ids[first_end:second_start])
    # (verl's default Continuous Token builder joins the turns without the template's newline)
    assert between.lstrip("\n").startswith("<|im_start|>tool\n[view]\n")
    assert between.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_response_length_ends_the_episode_with_a_graded_submit(tokenizer, label):
    full, _ = play(tokenizer, label, SCRIPTS_BY_SAMPLE[1])
    first_end = full.extra_fields[RECORD_KEY].steps[0].token_span[1]
    output, server = play(tokenizer, label, SCRIPTS_BY_SAMPLE[1], response_length=first_end + 5)
    record = output.extra_fields[RECORD_KEY]
    assert len(server.calls) == 1 and len(output.response_ids) == first_end <= first_end + 5
    assert [s.action for s in record.steps][0] == SCRIPTS_BY_SAMPLE[1][0] and len(record.steps) == 2
    assert record.steps[1].token_span == (first_end, first_end) and record.steps[1].token_offsets.shape == (0, 2)
    assert record.outcome == full.extra_fields[RECORD_KEY].outcome > 0  # graded: the fix of add counts
    assert output.extra_fields["code_gym/budget_submit"] == 1.0 and record.excluded == ""
    masked, _ = play(tokenizer, label, SCRIPTS_BY_SAMPLE[1], response_length=first_end + 5, budget_submit="mask")
    assert masked.extra_fields[RECORD_KEY].excluded == "budget_submit"


def test_a_row_without_a_task_is_refused(tokenizer):
    async def episode():
        return await agent_loop(tokenizer, ScriptedServer(tokenizer, [])).run({"logprobs": False}, extra_info={})

    with pytest.raises(ValueError, match=r"extra_info\['task'\]"):
        asyncio.run(episode())


# ---------------------------------------------------------------- the estimators in verl


def test_every_credit_estimator_has_a_verl_name_and_verls_own_names_stay_verls():
    estimator.register()
    own = {e.value for e in core_algos.AdvantageEstimator}
    assert sorted(estimator.NAMES.values()) == sorted(credit.ESTIMATORS)
    assert {"didpo", "didpo-split", "gigpo", "credit-grpo", "credit-rloo", "dr_grpo"} <= set(estimator.NAMES)
    for name, function in estimator.ESTIMATOR_FUNCTIONS.items():
        assert core_algos.get_adv_estimator_fn(name) is function
        assert name not in own
    assert core_algos.get_adv_estimator_fn("grpo") is core_algos.compute_grpo_outcome_advantage


def test_registering_again_is_a_no_op_and_a_clash_is_verls_error(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # the hook's import finder goes with the test
    estimator.register()
    before = dict(core_algos.ADV_ESTIMATOR_REGISTRY)
    estimator.register()
    hook.install()
    hook.install()
    assert core_algos.ADV_ESTIMATOR_REGISTRY == before
    assert sum(isinstance(f, hook._ApplyOnImport) for f in sys.meta_path) == 1
    with pytest.raises(ValueError, match="already been registered"):
        core_algos.register_adv_est("didpo")(lambda **_: None)


@pytest.mark.parametrize("name", ["didpo", "didpo-split", "gigpo"])
def test_step_level_estimators_in_verls_compute_advantage_equal_credit(outputs, name):
    data, records = verl_batch(outputs)
    estimator.register()
    with estimator.batch_records(records):
        out = compute_advantage(data, adv_estimator=name, config=AlgoConfig(adv_estimator=name))
    expected = expected_advantages(name, records, data.batch["response_mask"].shape[1])
    assert torch.allclose(out.batch["advantages"], expected, atol=1e-6)
    assert torch.equal(out.batch["returns"], out.batch["advantages"])
    if name.startswith("didpo"):  # the diff term: some tokens of a step get more than the episode's advantage
        assert any(len(set(row[row != 0].tolist())) > 1 for row in out.batch["advantages"])


def test_credit_options_come_from_the_algorithm_config(outputs):
    data, records = verl_batch(outputs)
    estimator.register()
    config = OmegaConf.create({"adv_estimator": "didpo", "credit_options": {"lambda_": 0.25, "mode": "mean_std_norm"}})
    with estimator.batch_records(records):
        out = compute_advantage(data, adv_estimator="didpo", config=config)
    expected = expected_advantages("didpo", records, data.batch["response_mask"].shape[1], lambda_=0.25,
                                   mode="mean_std_norm")
    assert torch.allclose(out.batch["advantages"], expected, atol=1e-6)


@pytest.mark.parametrize("name", ["credit-grpo", "credit-rloo", "dr_grpo"])
def test_outcome_estimators_need_no_records_and_match_credit(outputs, name):
    data, records = verl_batch(outputs)
    estimator.register()
    out = compute_advantage(data, adv_estimator=name, config=AlgoConfig(adv_estimator=name))
    result = credit.get(estimator.NAMES[name])([r.to_trajectory(group=uid) for r, uid in zip(records, UIDS)])
    mask = data.batch["response_mask"].bool()
    for row, value in enumerate(result.episode):
        assert torch.allclose(out.batch["advantages"][row][mask[row]], torch.tensor(float(value)), atol=1e-6)
        assert not out.batch["advantages"][row][~mask[row]].any()


def test_credit_grpo_agrees_with_verls_grpo(outputs):
    data, _ = verl_batch(outputs)
    estimator.register()
    ours = compute_advantage(data, adv_estimator="credit-grpo", config=AlgoConfig(adv_estimator="credit-grpo"))
    ours = ours.batch["advantages"].clone()
    verls = compute_advantage(data, adv_estimator="grpo", config=AlgoConfig(adv_estimator="grpo")).batch["advantages"]
    assert torch.allclose(ours, verls, atol=1e-5) and ours.abs().sum() > 0


def test_a_step_level_estimator_without_records_says_what_to_run(outputs):
    data, _ = verl_batch(outputs)
    estimator.register()
    with pytest.raises(ValueError, match="agent loop of integrations/verl/agent_loop.py"):
        compute_advantage(data, adv_estimator="didpo", config=AlgoConfig(adv_estimator="didpo"))


def test_rows_without_an_episode_get_zero_and_count_in_no_group(outputs):
    data, records = verl_batch(outputs)
    estimator.register()
    left_out = [None if k == 1 else r for k, r in enumerate(records)]
    with estimator.batch_records(left_out):
        out = compute_advantage(data, adv_estimator="didpo", config=AlgoConfig(adv_estimator="didpo"))
    assert not out.batch["advantages"][1].any()
    kept = [k for k in range(len(records)) if k != 1]
    result = credit.didpo([records[k].to_trajectory(group=UIDS[k]) for k in kept])
    assert np.allclose([out.batch["advantages"][k][data.batch["response_mask"][k].bool()][0] for k in kept],
                       [result.tokens[i][0][0] for i in range(len(kept))], atol=1e-6)


# ---------------------------------------------------------------- inside verl's trainer process


class TrainerProcess:
    """Runs in a Ray worker of a job whose setup hook is `hook.SETUP_HOOK`, as verl's TaskRunner
    does: imports the v1 trainer the way `TaskRunnerV1.run` does, starts TransferQueue, stores the
    rows as the agent-loop worker does (keys uid_session_0), pads the batch with verl's padding
    rows, and runs `PPOTrainer._compute_advantage` on it."""

    def compute(self, rows: list[dict], estimator_name: str, rollout_n: int) -> dict:
        import sys

        from omegaconf import OmegaConf
        from types import SimpleNamespace

        hooked = "integrations.verl.estimator" not in sys.modules and any(
            type(f).__name__ == "_ApplyOnImport" for f in sys.meta_path)
        import transfer_queue as tq
        from transfer_queue.metadata import KVBatchMeta
        from verl.trainer.ppo import core_algos
        from verl.trainer.ppo.padding_utils import upsample_batch_to_divisible_size
        from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        try:
            keys = [f"{row['uid']}_{row['session_id']}_0" for row in rows]
            tags = [{"status": "success", "global_steps": 1, "min_global_steps": 1, "max_global_steps": 1}
                    for _ in rows]
            tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(rows), tags=tags)
            batch = upsample_batch_to_divisible_size(KVBatchMeta(keys=keys, tags=tags, partition_id="train"), 4, 0)
            config = OmegaConf.create({"algorithm": {"adv_estimator": estimator_name, "use_kl_in_reward": False,
                                                     "gamma": 1.0, "lam": 1.0, "norm_adv_by_std_in_grpo": True},
                                       "actor_rollout_ref": {"rollout": {"n": rollout_n}}})
            trainer = get_trainer_cls("sync")
            trainer._compute_advantage(SimpleNamespace(config=config), batch, {})
            stored = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["advantages"])
            advantages = [row.tolist() for row in stored["advantages"].unbind()]
        finally:
            tq.close()
        return {"hooked": hooked, "registered": estimator_name in core_algos.ADV_ESTIMATOR_REGISTRY,
                "patched": getattr(trainer_base.PPOTrainer._compute_advantage, "_code_gym", False),
                "padding": [bool(tag.get("is_padding", False)) for tag in batch.tags], "advantages": advantages}


@pytest.mark.xdist_group("ray")
def test_the_setup_hook_wires_verls_trainer_process_and_records_come_from_transfer_queue(outputs):
    import ray

    rows = []
    for k, output in enumerate(outputs):
        row = output.as_dict()
        row.update(uid=UIDS[k], session_id=k % N_SAMPLES, global_steps=1)
        rows.append(row)
    data, records = verl_batch(outputs)
    estimator.register()
    with estimator.batch_records(records):
        expected = compute_advantage(data, adv_estimator="didpo", config=AlgoConfig(adv_estimator="didpo"))
    expected = expected.batch["advantages"]

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": hook.SETUP_HOOK, "env_vars": {"PYTHONPATH": path}})
    # the worker has not this test module: the class goes by value (its method imports what it uses)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        got = ray.get(ray.remote(TrainerProcess).remote().compute.remote(rows, "didpo", N_SAMPLES), timeout=300)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        ray.shutdown()
    assert got["hooked"] and got["registered"] and got["patched"]
    assert got["padding"] == [False] * len(rows) + [True] * 2  # verl padded 6 rows to 8
    for row, values in enumerate(got["advantages"]):
        if row < len(rows):
            width = len(outputs[row].response_ids)
            assert torch.allclose(torch.tensor(values), expected[row, :width], atol=1e-6)
        else:
            assert not any(values)  # a padding row: no episode


# ---------------------------------------------------------------- data and launch


def test_the_dataset_rows_load_in_verls_dataset_and_drive_the_loop(tokenizer, label, tmp_path):
    data = tmp_path / "verl.jsonl"
    assert code_gym_main(["verl", "dataset", "--tasks", label, "--out", str(data)]) == 0
    rows = RLHFDataset(str(data), tokenizer, OmegaConf.create({"filter_overlong_prompts": False,
                                                             "cache_dir": str(tmp_path / "cache")}))
    row = rows[0]
    assert row["agent_name"] == AGENT_NAME and row["extra_info"]["task"] == label
    assert row["raw_prompt"][0]["content"].startswith("add() subtracts")
    kwargs = {key: value for key, value in row.items() if key not in ("dummy_tensor", "agent_name")}
    output, _ = play(tokenizer, None, SCRIPTS_BY_SAMPLE[0], row=kwargs)
    assert output.reward_score == 1.0


def launch_command(*args, **environ):
    out = subprocess.run(["bash", str(SCRIPTS / "train_didpo.sh"), "--dry-run", *args], capture_output=True, text=True,
                         check=True, env={**os.environ, **environ}).stdout
    return [shlex.split(line) for line in out.strip().splitlines()]


def test_the_launch_script_is_verls_cli_with_overrides_its_config_accepts(tmp_path):
    data = tmp_path / "verl.jsonl"
    data.write_text("")
    [command] = launch_command("+algorithm.credit_options.lambda_=0.5", "trainer.total_epochs=1", DATA=str(data),
                               ESTIMATOR="didpo-split", CODE_GYM_TASKS=str(tmp_path))
    assert command[:3] == ["python", "-m", "verl.trainer.main_ppo"]
    with initialize_config_dir(config_dir=str(Path(verl.trainer.main_ppo.__file__).parent / "config"), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=command[3:])
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    assert config.trainer.use_v1 and config.trainer.total_epochs == 1  # verl's v1 trainer; the last override wins
    assert config.algorithm.adv_estimator == "didpo-split" and estimator.estimator_options(config.algorithm) == {"lambda_": 0.5}
    assert not need_critic(config) and config.algorithm.use_kl_in_reward is False
    runtime_env = config.ray_kwargs.ray_init.runtime_env
    assert runtime_env.worker_process_setup_hook == hook.SETUP_HOOK and runtime_env.env_vars.CODE_GYM_TASKS == str(tmp_path)
    agent = config.actor_rollout_ref.rollout.agent
    assert agent.default_agent_loop == AGENT_NAME and Path(agent.agent_loop_config_path) == AGENT_LOOP_YAML
    assert config.data.train_files == str(data) and config.actor_rollout_ref.rollout.n == 8


def test_the_launch_script_writes_the_data_first_and_the_baseline_is_verls_grpo(tmp_path):
    data_cmd, train = launch_command(DATA=str(tmp_path / "verl.jsonl"), TASKS="bundled")
    assert data_cmd[1:] == ["-m", "code_gym.apps.cli", "verl", "dataset", "--out", str(tmp_path / "verl.jsonl"),
                            "--tasks", "bundled"]
    baseline = subprocess.run(["bash", str(SCRIPTS / "train_grpo_baseline.sh"), "--dry-run"], capture_output=True,
                              text=True, check=True).stdout
    assert "algorithm.adv_estimator=grpo " in baseline
    assert "--dry-run" in subprocess.run(["bash", str(SCRIPTS / "train_didpo.sh"), "--help"], capture_output=True,
                                         text=True, check=True).stdout


def test_the_verl_integration_needs_no_openrlhf():
    # a fresh interpreter in which OpenRLHF cannot be imported, as on a machine without it
    script = textwrap.dedent('''
        import importlib.abc, sys

        class NoOpenRLHF(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "openrlhf":
                    raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)

        sys.meta_path.insert(0, NoOpenRLHF())
        import integrations.verl.agent_loop, integrations.verl.estimator, integrations.verl.hook
        integrations.verl.estimator.register()
        print(sorted(name for name in sys.modules if name.split(".")[0] == "openrlhf"))
    ''')
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_unknown_credit_options_are_refused_with_the_estimators_options(outputs):
    data, records = verl_batch(outputs)
    estimator.register()
    config = OmegaConf.create({"adv_estimator": "didpo", "credit_options": {"lamda": 0.5}})
    with estimator.batch_records(records), pytest.raises(ValueError, match="has no option 'lamda'.*lambda_"):
        compute_advantage(data, adv_estimator="didpo", config=config)
