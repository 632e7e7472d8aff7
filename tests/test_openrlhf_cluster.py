"""The OpenRLHF integration on a real local Ray instance: a sandbox killed mid-episode inside the
real executor, and the preflight naming a node without the patches. (A whole `train.main` run,
preflight passing, is in test_openrlhf_trainer.py.)

Stand-in: `ScriptedEngine` for vLLM's GPU generation (test_openrlhf.py).
"""
from __future__ import annotations

import asyncio
import importlib
import time

import pytest

from test_openrlhf import (FIX_ADD, MAX_LEN, N_SAMPLES, SCRIPTS_BY_SAMPLE, ScriptedEngine, build_tokenizer, call,
                           experiences_from, openrlhf_args, patched_generator)

import ray
from vllm import SamplingParams

from code_gym.actions.replay import hermes
from code_gym.sandbox import ray as ray_sandbox
from conftest import write_tiny_task
from integrations.episodes import RECORD_KEY, AgentConfig
from integrations.openrlhf import preflight
from integrations.openrlhf.agent import AgentExecutor
from integrations.openrlhf.estimator import credit_advantages

pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture
def generator(monkeypatch, tokenizer):
    return patched_generator(monkeypatch, tokenizer)


@pytest.fixture
def local_ray():
    """A local Ray instance for the test (shut down after it); `start(**options)` starts it."""
    def start(**options):
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, **options)

    yield start
    ray.shutdown()


class KillingEngine(ScriptedEngine):
    """The scripted engine, which kills the episode's Ray sandbox actor before its `kill_at`-th
    generation, as a node failure or an OOM kill would (the actor is really gone)."""

    def __init__(self, tokenizer, responses, sandboxes, kill_at):
        super().__init__(tokenizer, responses)
        self.sandboxes, self.kill_at = sandboxes, kill_at

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        if len(self.calls) + 1 == self.kill_at:
            [sandbox] = self.sandboxes
            ray.kill(sandbox.actor)
        return await super().generate(prompt_token_ids, sampling_params, multi_modal_data)


def test_a_sandbox_killed_mid_episode_fails_only_its_episode(local_ray, tokenizer, generator, tmp_path,
                                                            monkeypatch):
    local_ray()
    sandboxes = []
    original = ray_sandbox.RaySandbox.__init__

    def recorded(self, *args, **kwargs):  # only records the sandboxes made, for the engine to kill
        original(self, *args, **kwargs)
        sandboxes.append(self)

    monkeypatch.setattr(ray_sandbox.RaySandbox, "__init__", recorded)
    label = str(write_tiny_task(tmp_path))
    bash = hermes([call("bash", command="python -c 'import calc; print(calc.add(2, 3))'")])
    killed = [hermes([FIX_ADD]), bash, hermes([call("submit")])]
    params = SamplingParams(max_tokens=None, min_tokens=1, logprobs=1)

    async def episodes():
        # the killed episode runs its sandbox as a Ray actor; the others beside it run locally
        on_ray = AgentExecutor(AgentConfig(env={"isolation": "ray"}))
        local = AgentExecutor(AgentConfig())
        return await asyncio.gather(
            on_ray.execute("the prompt", label, params, MAX_LEN, tokenizer,
                           KillingEngine(tokenizer, killed, sandboxes, kill_at=2)),
            *(local.execute("the prompt", label, params, MAX_LEN, tokenizer, ScriptedEngine(tokenizer, script))
              for script in SCRIPTS_BY_SAMPLE[1:N_SAMPLES]))

    responses = asyncio.run(episodes())
    failed = responses[0]
    assert failed["extra_logs"]["code_gym/failed"] == 1.0 and failed["reward"] == 0.0
    assert "ActorDiedError" in failed[RECORD_KEY].excluded and len(failed["action_ranges"]) == 2
    assert [r["extra_logs"]["code_gym/failed"] for r in responses[1:]] == [0.0] * (N_SAMPLES - 1)
    assert responses[1][RECORD_KEY].outcome > 0
    # through OpenRLHF's response processing and the estimator: the killed episode trains on nothing
    [experience, *_] = experiences = experiences_from(generator, responses)
    credit_advantages(experiences, openrlhf_args())
    assert not experience.advantages[0].any() and experience.info["credit/excluded"][0] == 1.0
    assert any(e.advantages.any() for e in experiences)


def test_preflight_names_the_node_and_what_is_missing(local_ray):
    local_ray()  # no setup hook: the patches are not made in the job's workers
    with pytest.raises(RuntimeError) as error:
        preflight.check_cluster()
    message = str(error.value)
    node = ray.nodes()[0]["NodeManagerAddress"]
    assert f"node {node}" in message and "compute_advantages_and_returns is not patched" in message
    assert "_process_response_into_experience is not patched" in message and "before any placement group" in message


def test_check_node_reports_a_changed_openrlhf_signature(monkeypatch):
    module = importlib.import_module("openrlhf.trainer.ppo_utils.experience_maker")

    def compute_advantages_and_returns(self, experiences, extra):
        return experiences

    compute_advantages_and_returns._code_gym = True
    monkeypatch.setattr(module.RemoteExperienceMaker, "compute_advantages_and_returns",
                        compute_advantages_and_returns)
    problems = preflight.check_node()
    assert any("compute_advantages_and_returns(self, experiences, extra) differs" in p for p in problems)


def test_preflight_waits_for_the_expected_nodes_and_names_those_that_came(local_ray, monkeypatch):
    local_ray()
    monkeypatch.setenv(preflight.NODES_VARIABLE, "2")
    monkeypatch.setenv(preflight.WAIT_VARIABLE, "2")
    started = time.monotonic()
    with pytest.raises(RuntimeError) as error:
        preflight.check_cluster()
    assert time.monotonic() - started >= 2  # it waited for the second node
    node = ray.nodes()[0]["NodeManagerAddress"]
    assert "1 of the 2 nodes" in str(error.value) and node in str(error.value)
    # the one node there is enough for 1: the check itself runs (and finds the hook missing)
    monkeypatch.setenv(preflight.NODES_VARIABLE, "1")
    with pytest.raises(RuntimeError, match="is not patched"):
        preflight.check_cluster()
    monkeypatch.setenv(preflight.NODES_VARIABLE, "two")
    with pytest.raises(ValueError, match=preflight.NODES_VARIABLE):
        preflight.check_cluster()
