"""A verl agent loop (`verl.experimental.agent_loop.AgentLoopBase`) that plays one CodeRepo-v0
episode per sample.

verl's agent-loop workers build the loop a dataset row names in `agent_name` (or
`actor_rollout_ref.rollout.agent.default_agent_loop`) from the configs listed in
`actor_rollout_ref.rollout.agent.agent_loop_config_path`; agent_loop.yaml beside this file names
this class `code_gym`, and its other keys are this class's keyword arguments: the fields of
`integrations.episodes.AgentConfig` (env, system, feedback_role, template_tools, reset_attempts,
budget_submit), which the OpenRLHF executor reads from CODE_GYM_AGENT.

Per sample, the row's `extra_info["task"]` names the task (a bundled id or a task folder). As in
the OpenRLHF executor, the model sees the environment's own first observation, not the dataset's
`prompt`. Each turn, verl's Continuous Token builder renders the conversation with the model's chat
template (the task, then each observation as a `feedback_role` turn), verl's LLM server generates
the action from token ids, and the environment steps on its decoded text. The loop returns verl's
`AgentLoopOutput`: the response ids with the action tokens masked 1 and everything else 0, the
rollout log-probs, the graded outcome as `reward_score` (verl's reward workers are then not
asked), and in `extra_fields[RECORD_KEY]` the episode's `EpisodeRecord`, whose steps' token spans
are positions in the response ids, for the step-level estimators (estimator.py).

The response never exceeds `rollout.response_length`: each action may use what is left, and when
the next observation would not fit, the loop submits for the agent (graded like an episode that
max_steps truncated). A reset is tried `reset_attempts` times; an exception after that, or from a
step, is raised: verl then marks the prompt's group failed and trains on none of its samples.
"""
from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import numpy as np
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

import code_gym
from code_gym.apps.dataset import AGENT_NAME, TASK_KEY
from code_gym.env.episode import EpisodeRun
from integrations.episodes import (RECORD_KEY, SUBMIT, AgentConfig, close_episode, episode_metrics, episode_record,
                                   start_episode, token_offsets)


@register(AGENT_NAME)
class CodeRepoAgentLoop(AgentLoopBase):
    """One CodeRepo-v0 episode per `run` (see the module docstring)."""

    def __init__(self, *args, env: Any = None, system: str | None = None, feedback_role: str = "user",
                 template_tools: bool = False, reset_attempts: int = 3, budget_submit: str = "train", **kwargs):
        super().__init__(*args, **kwargs)
        self.agent = AgentConfig(env=_plain(env or {}), system=system, feedback_role=feedback_role,
                                 template_tools=bool(template_tools), reset_attempts=int(reset_attempts),
                                 budget_submit=budget_submit)
        self.schemas = code_gym.TOOL_SCHEMAS if self.agent.template_tools else None
        self.response_length = self.rollout_config.response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        task = (kwargs.get("extra_info") or {}).get(TASK_KEY)
        if not task:
            raise ValueError(f"the dataset row names no task: CodeRepo-v0 rows need extra_info[{TASK_KEY!r}] "
                             "(a bundled task id or a task folder; `code-gym verl dataset` writes it)")
        env, run = await start_episode(self.agent, str(task))
        try:
            return await self._play(run, sampling_params)
        finally:
            await close_episode(env, str(task))

    async def _play(self, run: EpisodeRun, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        messages = ([{"role": "system", "content": self.agent.system}] if self.agent.system else []) + \
            [{"role": "user", "content": run.observation}]
        tokens = await self.ct_build_initial_tokens(messages, tools=self.schemas)
        mask: list[int] = []
        log_probs: list[float] | None = [] if sampling_params.get("logprobs") else None
        spans, offsets, budget_submit, request_id = [], [], False, uuid4().hex
        while True:
            params = {**sampling_params, "max_tokens": max(1, self.response_length - len(mask))}
            output = await self.server_manager.generate(request_id=request_id, prompt_ids=tokens, sampling_params=params)
            action_ids = list(output.token_ids)
            merged, mask, log_probs = await self.ct_merge_assistant_token(
                tokens, action_ids, mask, log_probs, assistant_logprobs=output.log_probs if log_probs is not None else None)
            tokens = merged.token_ids
            spans.append((len(mask) - merged.appended_token_count, len(mask)))
            text = self.tokenizer.decode(action_ids, skip_special_tokens=True)
            offsets.append(await asyncio.to_thread(token_offsets, self.tokenizer, action_ids, text, True))
            observation, _, _ = await asyncio.to_thread(run.step, text)
            if run.done:
                break
            turns = messages + [{"role": "assistant", "content": text},
                                {"role": self.agent.feedback_role, "content": observation}]
            merged, next_mask, next_log_probs = await self.ct_merge_context_msg(
                messages + [{"role": "assistant", "content": text}], turns, tokens, mask, log_probs, tools=self.schemas)
            if len(next_mask) >= self.response_length:
                budget_submit = True
                await asyncio.to_thread(run.step, SUBMIT)
                spans.append((len(mask), len(mask)))
                offsets.append(np.zeros((0, 2), np.int64))
                break
            _clip_steps(spans, offsets, len(mask) - merged.removed_prefix_token_count)
            messages, tokens, mask, log_probs = turns, merged.token_ids, next_mask, next_log_probs
        if len(mask) > self.response_length:  # a builder's boundary tokens after the last action
            tokens, mask = tokens[:len(tokens) - len(mask) + self.response_length], mask[:self.response_length]
            log_probs = None if log_probs is None else log_probs[:self.response_length]
            _clip_steps(spans, offsets, self.response_length)
        record = episode_record(run.result(), spans, offsets, self.agent.excluded(budget_submit))
        return AgentLoopOutput(
            prompt_ids=tokens[:len(tokens) - len(mask)], response_ids=tokens[len(tokens) - len(mask):],
            response_mask=mask, response_logprobs=log_probs, reward_score=record.outcome,
            num_turns=len(messages) + 1, metrics=AgentLoopMetrics(),
            extra_fields={RECORD_KEY: record, **episode_metrics(record.resolved, len(spans), budget_submit)})


def _plain(options: Any) -> dict[str, Any]:
    """Options as plain Python (hydra hands a config's mappings over as DictConfig)."""
    return OmegaConf.to_container(options, resolve=True) if OmegaConf.is_config(options) else dict(options)


def _clip_steps(spans: list[tuple[int, int]], offsets: list[np.ndarray], length: int) -> None:
    """Cut the actions back to the response's first `length` tokens (a template's boundary
    handling may drop trailing tokens of a turn before it appends the next one)."""
    for k, (start, end) in enumerate(spans):
        if end > length:
            spans[k] = (min(start, length), length)
            offsets[k] = offsets[k][:max(0, length - start)]

