"""An OpenRLHF agent executor that plays one CodeRepo-v0 episode per prompt.

OpenRLHF loads `AgentExecutor` from `--train.agent_func_path` (agent_func.py beside this file)
inside every vLLM rollout actor and calls `execute(prompt, label, ...)` once per sample. Here the
label names the task; the executor renders the environment's own observations with the model's
chat template, generates each action from token ids, steps the environment with the decoded text,
and returns OpenRLHF's response dict (token ids, `action_ranges`, rollout log-probs, truncation)
plus an `EpisodeRecord` of every step under `RECORD_KEY` (integrations/episodes.py, shared with the
verl agent loop).

Configuration comes from the environment variable CODE_GYM_AGENT (JSON, see
`integrations.episodes.AgentConfig`): the executor is built with no arguments inside Ray actors.

Faults stay inside their episode: a reset that raises is retried (`AgentConfig.reset_attempts`), and
a reset that keeps failing or a step that raises (a sandbox that died, a grader that crashed) ends
that episode as failed: reward 0, `code_gym/failed` 1 in `extra_logs`, and a record that the
estimators leave out (zero advantage; in no group baseline for didpo/gigpo, in no group mean for
OpenRLHF's own, estimator.py). One sample's fault never
reaches `asyncio.gather` in the engine actor, so it cannot end the training run.
"""
from __future__ import annotations

import asyncio
import logging
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from openrlhf.utils.agent import AgentExecutorBase

import code_gym
from code_gym.env.episode import EpisodeRun
from integrations.episodes import (RECORD_KEY, SUBMIT, AgentConfig, EpisodeRecord, close_episode, episode_metrics,
                                   episode_record, start_episode, token_offsets)

logger = logging.getLogger(__name__)

_PROBE_QUESTION, _PROBE_REPLY = "\x00question\x00", "\x00reply\x00"


class ChatFormat:
    """The text around each turn, from the tokenizer's chat template.

    The template is asked to render a probe conversation with and without one more turn; the
    difference is what follows a closed assistant turn, so any template that renders turns
    incrementally works without model-specific code.
    """

    def __init__(self, tokenizer: Any, config: AgentConfig):
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template: CodeRepo-v0 episodes are conversations; use an "
                             "instruct model (or set tokenizer.chat_template)")
        self.tokenizer = tokenizer
        self.role = config.feedback_role
        self.tools = code_gym.TOOL_SCHEMAS if config.template_tools else None
        self.head = [{"role": "system", "content": config.system}] if config.system else []
        self.probe = self.head + [{"role": "user", "content": _PROBE_QUESTION},
                                  {"role": "assistant", "content": _PROBE_REPLY}]
        self.closed = self._render(self.probe, generation_prompt=False)
        self.end_of_turn = self.closed[self.closed.rindex(_PROBE_REPLY) + len(_PROBE_REPLY):]
        self.special_ids = set(tokenizer.all_special_ids)

    def _render(self, messages: list[dict], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tools=self.tools, tokenize=False,
                                                  add_generation_prompt=generation_prompt)

    def first_turn(self, observation: str) -> str:
        """The prompt: the task (the environment's reset observation) and the generation prompt."""
        return self._render(self.head + [{"role": "user", "content": observation}], generation_prompt=True)

    def feedback(self, observation: str, last_token: int | None) -> str:
        """What follows an action: the rest of the assistant turn's closing text (the model's stop
        token `last_token` is already in the sequence), the observation's turn, the generation prompt."""
        rendered = self._render(self.probe + [{"role": self.role, "content": observation}], generation_prompt=True)
        if not rendered.startswith(self.closed):
            raise ValueError("the chat template renders earlier turns differently once a turn follows; "
                             "CodeRepo-v0 needs a template that appends turns")
        closing = self.end_of_turn
        stop = self.tokenizer.decode([last_token]) if last_token in self.special_ids else ""
        if stop and closing.startswith(stop):
            closing = closing[len(stop):]
        return closing + rendered[len(self.closed):]


@dataclass
class _Rollout:
    """The growing token sequence of one episode, OpenRLHF's way: prompt, then per step the action
    and the environment's feedback; log-probs are 0 outside actions."""

    tokens: list[int]
    log_probs: list[float] | None
    action_ranges: list[tuple[int, int]] = field(default_factory=list)

    def add_action(self, token_ids: list[int], log_probs: list[float] | None) -> tuple[int, int]:
        span = (len(self.tokens), len(self.tokens) + len(token_ids))
        self.tokens += token_ids
        self.action_ranges.append(span)
        if self.log_probs is not None:
            self.log_probs += log_probs
        return span

    def add_feedback(self, token_ids: list[int]) -> None:
        self.tokens += token_ids
        if self.log_probs is not None:
            self.log_probs += [0.0] * len(token_ids)


class AgentExecutor(AgentExecutorBase):
    """One CodeRepo-v0 episode per `execute` call; the prompt's label names the task.

    Contract with OpenRLHF (`openrlhf.utils.agent`): token ids go to `llm_engine.generate` and come
    back from it, never re-tokenized; `observation_tokens` is the whole conversation and
    `action_ranges` the generated spans in it; `rollout_log_probs` (when sampling asks for
    log-probs) has one entry per token, 0 outside actions; the sequence never exceeds `max_length`:
    each action may use what is left (capped by the sampling params' max_tokens, OpenRLHF's
    --rollout.max_new_tokens, as a per-turn limit), and when nothing is left the executor submits
    on the agent's behalf so the episode is graded like one truncated by max_steps. `truncated` says
    whether the last action hit its token limit.
    """

    def __init__(self, config: AgentConfig | None = None):
        self.config = config or AgentConfig.from_environ()

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        chat = ChatFormat(hf_tokenizer, self.config)
        env, run, error = await self._start(label)
        try:
            tokens = _encode(hf_tokenizer, chat.first_turn(prompt if run is None else run.observation))
            if run is not None and len(tokens) >= max_length:
                raise ValueError(f"task {label!r}: the first prompt has {len(tokens)} tokens and --data.max_len is "
                                 f"{max_length}: raise --data.max_len so the agent can act")
            tokens = tokens[:max_length]
            rollout = _Rollout(tokens, [0.0] * len(tokens) if sampling_params.logprobs is not None else None)
            if run is None:
                episode = _failed(label, error, steps=0)
            else:
                try:
                    episode = await self._play(run, chat, rollout, sampling_params, max_length, llm_engine)
                except _StepFailed as failed:
                    logger.warning("task %r: step %d raised; the episode counts as failed", label,
                                   len(rollout.action_ranges), exc_info=failed.__cause__)
                    episode = _failed(label, failed.__cause__, steps=len(rollout.action_ranges))
        finally:
            if env is not None:
                await close_episode(env, label)
        return {**episode, "prompt": prompt, "label": label, "images": images, "mm_train_inputs": None,
                "observation_tokens": rollout.tokens, "action_ranges": rollout.action_ranges,
                "rollout_log_probs": rollout.log_probs}

    async def _start(self, label: str) -> tuple[gym.Env | None, EpisodeRun | None, BaseException | None]:
        """(env, run, None) after `start_episode` on `label`; (None, None, the last error) when every
        reset it tried raised."""
        try:
            env, run = await start_episode(self.config, label)
        except Exception as err:  # a sandbox or workspace fault that outlasted the retries: the episode fails
            logger.warning("task %r: the last of %d reset attempts raised; the episode counts as failed", label,
                           self.config.reset_attempts, exc_info=err)
            return None, None, err
        return env, run, None

    async def _play(self, run: EpisodeRun, chat: ChatFormat, rollout: _Rollout, sampling_params, max_length: int,
                    llm_engine) -> dict[str, Any]:
        """Steps until the episode ends or the length budget does; the response's reward fields.
        An exception of the environment's step is raised as `_StepFailed`."""
        tokenizer = chat.tokenizer
        skip_special = bool(getattr(sampling_params, "skip_special_tokens", False))
        wants_log_probs = rollout.log_probs is not None
        spans, offsets, rewards, budget_submit = [], [], [], False
        while True:
            params = deepcopy(sampling_params)
            budget = max_length - len(rollout.tokens)
            params.max_tokens = min(sampling_params.max_tokens or budget, budget)
            output = (await llm_engine.generate(rollout.tokens, params)).outputs[0]
            action_ids = list(output.token_ids)
            spans.append(rollout.add_action(action_ids, _log_probs(output, action_ids) if wants_log_probs else None))
            offsets.append(await asyncio.to_thread(token_offsets, tokenizer, action_ids, output.text, skip_special))
            action = {"text": output.text, "logprobs": _token_logprobs(output, action_ids)} if wants_log_probs \
                else output.text  # a sampled response: the env keeps its log-probs for the `certainty` reward
            observation, reward = await _step(run, action)
            rewards.append(reward)
            if run.done:
                break
            feedback = _encode(tokenizer, chat.feedback(observation, action_ids[-1] if action_ids else None))
            if len(rollout.tokens) + len(feedback) >= max_length:
                budget_submit = True
                _, reward = await _step(run, SUBMIT)
                rewards.append(reward)
                spans.append((len(rollout.tokens), len(rollout.tokens)))
                offsets.append(np.zeros((0, 2), np.int64))
                break
            rollout.add_feedback(feedback)
        result = run.result()
        record = episode_record(result, spans, offsets, self.config.excluded(budget_submit))
        return {"reward": float(sum(rewards)), "scores": record.outcome, RECORD_KEY: record,
                "truncated": output.finish_reason == "length",
                "extra_logs": _logs(record.resolved, len(record.steps), budget_submit, failed=False)}


class _StepFailed(Exception):
    """The environment's step raised (the cause); the episode ends as failed."""


async def _step(run: EpisodeRun, action: str | dict) -> tuple[str, float]:
    try:
        observation, reward, _ = await asyncio.to_thread(run.step, action)
    except Exception as err:
        raise _StepFailed() from err
    return observation, reward


def _failed(label: str, error: BaseException | None, steps: int) -> dict[str, Any]:
    """The reward fields of an episode that a fault ended: nothing to train on."""
    record = EpisodeRecord(task_id=str(label), outcome=0.0, resolved=False, steps=(), excluded=f"failed: {error!r}")
    return {"reward": 0.0, "scores": 0.0, RECORD_KEY: record, "truncated": False,
            "extra_logs": _logs(False, steps, False, failed=True)}


def _logs(resolved: bool, steps: int, budget_submit: bool, failed: bool) -> dict[str, float]:
    """`extra_logs`: the same keys on every sample (OpenRLHF concatenates them per key)."""
    return {**episode_metrics(resolved, steps, budget_submit), "code_gym/failed": float(failed)}


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _log_probs(output: Any, action_ids: list[int]) -> list[float]:
    """The sampled tokens' log-probs, read as OpenRLHF's MultiTurnAgentExecutor reads them."""
    return [output.logprobs[i][token].logprob for i, token in enumerate(action_ids)]


def _token_logprobs(output: Any, action_ids: list[int]) -> list[dict]:
    """Per action token, its log-prob and the top-k vLLM returned with it (code_gym.rewards.TokenLogprobs)."""
    return [{"logprob": output.logprobs[i][token].logprob,
             "top_logprobs": [entry.logprob for entry in output.logprobs[i].values()]}
            for i, token in enumerate(action_ids)]

