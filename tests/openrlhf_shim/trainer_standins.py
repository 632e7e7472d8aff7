"""Stand-ins for the GPU parts of an OpenRLHF PPO run, for tests/test_openrlhf_trainer.py.

Everything else in that run is OpenRLHF's and code-gym's own: `train.main`, OpenRLHF's
`train_ppo_ray`, its `PPOTrainer` (or `PPOTrainerAsync`) Ray actor, `SamplesGenerator`,
`RemoteExperienceMaker`, its `RolloutRayActor` (the vLLM engine actor) with the agent executor
of integrations/openrlhf/agent_func.py, and the CodeRepo-v0 environments that executor runs.

- `ScriptedLLM` stands in for vLLM's `AsyncLLMEngine` inside the real `RolloutRayActor`: what
  that actor calls on its engine (`generate`, `is_sleeping`, `output_processor`). Each episode
  follows one scripted list of responses (the model folder's `SCRIPT_FILE`); the script is
  picked when the episode's first turn asks for an action and found again by its first response.
  It keeps vLLM's sleep state (`sleep`, `wake_up`) and refuses to generate while asleep.
- `ShardGroup` stands in for OpenRLHF's `RayActorGroup` of DeepSpeed model shards (actor,
  reference, critic, reward): the `async_*` methods PPOTrainer and RemoteExperienceMaker call,
  run in the caller's process, each returning object refs as the real group does. Its log-probs
  are zeros; `append` keeps the experiences the trainer sends to the actor, and `fit` (the PPO
  training step) writes them to the folder named by `OUT_VARIABLE`. A method OpenRLHF calls that
  is not here raises AttributeError, so a new call shows up as a failing test.
- `install` is the Ray worker setup hook of that test: code-gym's real hook
  (`integrations.openrlhf.hook.install`), then `vllm.AsyncLLMEngine = ScriptedLLM`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

SCRIPT_FILE = "scripted_responses.json"  # in the model folder: [[response text, ...] per episode, ...]
OUT_VARIABLE = "OPENRLHF_STANDIN_OUT"
ASSISTANT, END = "<|im_start|>assistant\n", "<|im_end|>"  # the test tokenizer's ChatML turns


def install() -> None:
    """Ray's worker_process_setup_hook for the test run: the real hook, then the vLLM stand-in."""
    from integrations.openrlhf import hook

    hook.install()
    import vllm

    vllm.AsyncLLMEngine = ScriptedLLM


def scripted_output(tokenizer: Any, text: str, prompt_token_ids: list[int], sampling_params: Any,
                    request_id: str) -> Any:
    """vLLM's `RequestOutput` for the response `text`, as vLLM returns it: token ids ending with the
    stop token, text without it, one log-prob dict per token; cut at max_tokens (finish_reason
    "length")."""
    from vllm.logprobs import Logprob
    from vllm.outputs import CompletionOutput, RequestOutput

    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    finish = "stop"
    if sampling_params.max_tokens is not None and len(ids) > sampling_params.max_tokens:
        ids, finish = ids[:sampling_params.max_tokens], "length"
    decoded = tokenizer.decode(ids[:-1] if finish == "stop" else ids)
    log_probs = [{token: Logprob(logprob=-(k % 7) / 10)} for k, token in enumerate(ids)]
    output = CompletionOutput(index=0, text=decoded, token_ids=ids, cumulative_logprob=None, logprobs=log_probs,
                              finish_reason=finish)
    return RequestOutput(request_id=request_id, prompt=None, prompt_token_ids=list(prompt_token_ids),
                         prompt_logprobs=None, outputs=[output], finished=True)


class ScriptedLLM:
    """Stands in for vLLM's `AsyncLLMEngine` (GPU generation) in OpenRLHF's `RolloutRayActor`."""

    @classmethod
    def from_engine_args(cls, engine_args: Any) -> "ScriptedLLM":
        return cls(engine_args.model)

    def __init__(self, model: str):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.scripts = json.loads((Path(model) / SCRIPT_FILE).read_text())
        firsts = [script[0] for script in self.scripts]
        if len(set(firsts)) != len(firsts):
            raise ValueError(f"{SCRIPT_FILE}: each script needs its own first response (it names the episode)")
        self.unstarted = list(self.scripts)
        self.output_processor = SimpleNamespace(get_num_unfinished_requests=lambda: 0)
        self.asleep: set[str] = set()  # what vLLM's sleep mode has released: "weights", "kv_cache"

    async def is_sleeping(self) -> bool:
        return bool(self.asleep)

    async def sleep(self, level: int = 1) -> None:
        self.asleep = {"weights", "kv_cache"}

    async def wake_up(self, tags: list[str] | None = None) -> None:
        self.asleep -= set(tags or ("weights", "kv_cache"))

    async def generate(self, prompt: dict, sampling_params: Any, request_id: str):
        if self.asleep:
            raise RuntimeError(f"generate called while vLLM's {sorted(self.asleep)} are asleep")
        ids = list(prompt["prompt_token_ids"])
        turns = self.tokenizer.decode(ids).split(ASSISTANT)[1:]  # one per action so far, then the new one
        if len(turns) == 1:
            if not self.unstarted:
                raise RuntimeError(f"more episodes than the {len(self.scripts)} scripts of {SCRIPT_FILE}")
            script = self.unstarted.pop(0)
        else:
            first = turns[0].split(END)[0]
            script = next(s for s in self.scripts if s[0] == first)
        yield scripted_output(self.tokenizer, script[len(turns) - 1], ids, sampling_params, request_id)


class ShardGroup:
    """Stands in for OpenRLHF's `RayActorGroup` (model shards on GPUs): same constructor and
    `async_*` methods; each call runs here and returns `ray.put` refs, one per (single) shard."""

    def __init__(self, num_nodes, num_gpus_per_node, ray_actor_type, pg=None, num_gpus_per_actor=1,
                 duplicate_actors=1, resources=None, num_resources_per_node=None):
        self.role = ray_actor_type.__ray_metadata__.class_name
        self.out = Path(os.environ[OUT_VARIABLE])
        self.appended: list[dict] = []
        self.steps = 0

    def async_init_model_from_pretrained(self, *args, **kwargs):
        return self._refs(None)

    def async_save_model(self):
        return self._refs(None)

    def async_run_method(self, method_name, *args, **kwargs):
        return self._refs(getattr(self, method_name)(*args, **kwargs))

    def async_run_method_batch(self, method_name, **kwargs):
        method = getattr(self, method_name)
        size = len(next(iter(kwargs.values())))
        return self._refs([method(**{key: value[i] for key, value in kwargs.items()}) for i in range(size)])

    @staticmethod
    def _refs(result):
        import ray

        return [ray.put(result)]

    # the shard methods the trainer reaches through the calls above

    def forward(self, sequences, action_mask=None, attention_mask=None, **kwargs):
        import torch

        return torch.zeros(action_mask.shape)  # the action tokens' log-probs

    def empty_cache(self):
        return None

    def reload_states(self):  # DeepSpeed sleep mode (--ds.enable_sleep), around each fit
        return None

    def offload_states(self):
        return None

    def append(self, experience):
        self.appended.append({
            "role": self.role, "sequences": experience.sequences, "attention_mask": experience.attention_mask,
            "action_mask": experience.action_mask, "advantages": experience.advantages,
            "returns": experience.returns, "labels": list(experience.labels), "info": dict(experience.info)})

    def fit(self, kl_ctl=None):
        import torch

        self.steps += 1
        self.out.mkdir(parents=True, exist_ok=True)
        torch.save(self.appended, self.out / f"{self.role}-step{self.steps}.pt")
        trained, self.appended = len(self.appended), []
        return {"standin/experiences": float(trained)}

    def broadcast_to_vllm(self):
        return None
