"""An OpenRLHF agent executor that plays one CodeRepo-v0 episode per prompt.

OpenRLHF loads `AgentExecutor` from `--train.agent_func_path` (agent_func.py beside this file)
inside every vLLM rollout actor and calls `execute(prompt, label, ...)` once per sample. Here the
label names the task; the executor renders the environment's own observations with the model's
chat template, generates each action from token ids, steps the environment with the decoded text,
and returns OpenRLHF's response dict (token ids, `action_ranges`, rollout log-probs, truncation)
plus an `EpisodeRecord` of every step under `records.RECORD_KEY`.

Configuration comes from the environment variable CODE_GYM_AGENT (JSON, see `AgentConfig`): the
executor is built with no arguments inside Ray actors.

Faults stay inside their episode: a reset that raises is retried (`AgentConfig.reset_attempts`), and
a reset that keeps failing or a step that raises (a sandbox that died, a grader that crashed) ends
that episode as failed: reward 0, `code_gym/failed` 1 in `extra_logs`, and a record that the
estimators leave out (zero advantage; in no group baseline for didpo/gigpo, in no group mean for
OpenRLHF's own, estimator.py). One sample's fault never
reaches `asyncio.gather` in the engine actor, so it cannot end the training run.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from openrlhf.utils.agent import AgentExecutorBase

import code_gym
from code_gym.env.episode import EpisodeRun
from integrations.openrlhf.records import RECORD_KEY, EpisodeRecord, StepRecord, observation_key

logger = logging.getLogger(__name__)

CONFIG_VARIABLE = "CODE_GYM_AGENT"
BUDGET_SUBMIT = ("train", "mask")  # AgentConfig.budget_submit
SUBMIT = {"name": "submit", "arguments": {}}
_PROBE_QUESTION, _PROBE_REPLY = "\x00question\x00", "\x00reply\x00"


@dataclass(frozen=True)
class AgentConfig:
    """How the executor runs episodes.

    Attributes:
      env: options of `gym.make("CodeRepo-v0", **env)` (max_steps, isolation, reward, ...).
      system: a system message before the task, or None.
      feedback_role: the chat role that carries the environment's observations ("user" works with
        every template; "tool" where the template renders tool results).
      template_tools: pass `code_gym.TOOL_SCHEMAS` to the chat template (`tools=`), for models
        trained on their template's tool format (Qwen2.5, Llama 3.1), instead of listing the
        schemas in the task prompt.
      reset_attempts: how many times a reset that raises is tried before the episode counts as failed.
      budget_submit: what the estimators do with an episode that the length budget ended (the
        executor submitted for the agent): "train" it like any other, or "mask" it (zero advantage,
        in no group baseline, like a failed one).
    """

    env: dict[str, Any] = field(default_factory=dict)
    system: str | None = None
    feedback_role: str = "user"
    template_tools: bool = False
    reset_attempts: int = 3
    budget_submit: str = "train"

    def __post_init__(self):
        if self.budget_submit not in BUDGET_SUBMIT:
            raise ValueError(f"{CONFIG_VARIABLE}: budget_submit must be one of {BUDGET_SUBMIT}, "
                             f"got {self.budget_submit!r}")
        if self.reset_attempts < 1:
            raise ValueError(f"{CONFIG_VARIABLE}: reset_attempts must be 1 or more, got {self.reset_attempts}")

    @classmethod
    def from_environ(cls, environ: Any = os.environ) -> "AgentConfig":
        text = environ.get(CONFIG_VARIABLE, "").strip()
        if not text:
            return cls()
        try:
            return cls(**json.loads(text))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{CONFIG_VARIABLE} must be a JSON object with keys env, system, feedback_role, "
                             f"template_tools, reset_attempts, budget_submit: {err}") from None

    def env_options(self) -> dict[str, Any]:
        return {**self.env, "tool_schemas": False} if self.template_tools else dict(self.env)


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


def token_offsets(tokenizer: Any, token_ids: list[int], text: str, skip_special_tokens: bool = False) -> np.ndarray:
    """(n, 2) character span in `text` of each of the `n` generated tokens `token_ids`.

    `text` is the engine's decoding of the tokens. Trailing special tokens (the stop token, whose
    text vLLM leaves out) get empty spans at the end. The rest come from the fast tokenizer's offset
    mapping when re-encoding `text` gives the same ids (the usual case); otherwise from decoding
    incrementally, as vLLM's detokenizer does: each token is decoded in a window that starts at the
    previous emitted token, so a character split over several byte-level tokens belongs to the
    token that completes it. Both are linear in the number of tokens. Where the decoding stops
    agreeing with `text`, the remaining tokens end where the agreement does.
    """
    body = len(token_ids)
    special = set(tokenizer.all_special_ids)
    while body and token_ids[body - 1] in special:
        body -= 1
    spans = _encoded_spans(tokenizer, token_ids[:body], text)
    if spans is None:
        spans = _decoded_spans(tokenizer, token_ids[:body], text, skip_special_tokens)
    tail = np.full((len(token_ids) - body, 2), len(text), np.int64)
    return np.concatenate([spans.reshape(-1, 2), tail]).astype(np.int64)


def _encoded_spans(tokenizer: Any, token_ids: list[int], text: str) -> np.ndarray | None:
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except NotImplementedError:  # a slow (Python) tokenizer has no offset mapping
        return None
    if list(encoded["input_ids"]) != list(token_ids):
        return None
    return np.asarray(encoded["offset_mapping"], np.int64).reshape(-1, 2)


def _decoded_spans(tokenizer: Any, token_ids: list[int], text: str, skip_special_tokens: bool) -> np.ndarray:
    """Spans from incremental decoding (vLLM's `detokenize_incrementally` scheme): the text of
    tokens[prefix:k+1] beyond that of tokens[prefix:read] is token k's, unless it ends in an
    incomplete character (U+FFFD), which waits for the next token. One short decode per token."""
    def decode(ids):
        return tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    ends = np.zeros(len(token_ids), np.int64)
    decoded, prefix, read, pieces = 0, 0, 0, []
    for k in range(len(token_ids)):
        before = decode(token_ids[prefix:read])
        after = decode(token_ids[prefix:k + 1])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            pieces.append(after[len(before):])
            decoded += len(pieces[-1])
            prefix, read = read, k + 1
        ends[k] = decoded
    agreed = len(os.path.commonprefix(["".join(pieces), text]))
    ends = np.minimum(ends, agreed)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    return np.stack([starts, ends], axis=1)


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
                await _close(env, label)
        return {**episode, "prompt": prompt, "label": label, "images": images, "mm_train_inputs": None,
                "observation_tokens": rollout.tokens, "action_ranges": rollout.action_ranges,
                "rollout_log_probs": rollout.log_probs}

    async def _start(self, label: str) -> tuple[gym.Env | None, EpisodeRun | None, BaseException | None]:
        """(env, run, None) after a reset of a new env on `label`, tried up to `reset_attempts` times;
        (None, None, the last error) when every try raised."""
        error = None
        for attempt in range(1, self.config.reset_attempts + 1):
            env = None
            try:
                env = await asyncio.to_thread(gym.make, code_gym.ENV_ID, **self.config.env_options())
                return env, await asyncio.to_thread(EpisodeRun.start, env, label), None
            except Exception as err:  # a sandbox or workspace fault: retried, then the episode fails
                error = err
                logger.warning("task %r: reset attempt %d of %d raised", label, attempt, self.config.reset_attempts,
                               exc_info=err)
                if env is not None:
                    await _close(env, label)
        return None, None, error

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
        excluded = "budget_submit" if budget_submit and self.config.budget_submit == "mask" else ""
        record = _record(result.trajectory, result.resolved, spans, offsets, excluded)
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


async def _close(env: gym.Env, label: str) -> None:
    try:
        await asyncio.to_thread(env.close)
    except Exception as err:  # the episode's result is already taken; a dead sandbox must not lose it
        logger.warning("task %r: closing the environment raised", label, exc_info=err)


def _failed(label: str, error: BaseException | None, steps: int) -> dict[str, Any]:
    """The reward fields of an episode that a fault ended: nothing to train on."""
    record = EpisodeRecord(task_id=str(label), outcome=0.0, resolved=False, steps=(), excluded=f"failed: {error!r}")
    return {"reward": 0.0, "scores": 0.0, RECORD_KEY: record, "truncated": False,
            "extra_logs": _logs(False, steps, False, failed=True)}


def _logs(resolved: bool, steps: int, budget_submit: bool, failed: bool) -> dict[str, float]:
    """`extra_logs`: the same keys on every sample (OpenRLHF concatenates them per key)."""
    return {"code_gym/resolved": float(resolved), "code_gym/steps": float(steps),
            "code_gym/budget_submit": float(budget_submit), "code_gym/failed": float(failed)}


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


def _record(trajectory, resolved: bool, spans: list[tuple[int, int]], offsets: list[np.ndarray],
            excluded: str) -> EpisodeRecord:
    steps = tuple(
        StepRecord(action=step.action, diff=step.diff, provenance=step.provenance or (), reward=step.reward,
                   observation=observation_key(step.observation or ""), token_span=span, token_offsets=offset,
                   calls=step.calls, edits=step.edits, line_calls=step.line_calls)
        for step, span, offset in zip(trajectory.steps, spans, offsets, strict=True))
    return EpisodeRecord(task_id=str(trajectory.task_id), outcome=trajectory.reward, resolved=resolved, steps=steps,
                         excluded=excluded)
