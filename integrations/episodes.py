"""What every trainer integration does with a CodeRepo-v0 episode, whatever the trainer.

A rollout worker (OpenRLHF's agent executor, verl's agent loop) plays one episode per sample:
`AgentConfig` says how, `start_episode` resets a new environment on the sample's task,
`token_offsets` places each generated token in the action's text, `SUBMIT` ends an episode the
length budget cut off, and `episode_record` makes the `EpisodeRecord` that travels under
`RECORD_KEY` to the advantage computation, where `CreditSteps` turns a batch's records into
`credit.token_advantages`' per-step arguments. `EpisodeRecord.from_dict` reads a record back from
the plain dicts a trainer's storage may turn it into.

Imports neither OpenRLHF nor verl: each integration imports this module, never the other's.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import gymnasium as gym
import numpy as np

import code_gym
import credit
from code_gym.env.episode import EpisodeResult, EpisodeRun

logger = logging.getLogger(__name__)

RECORD_KEY = "code_gym"  # the key an episode's record travels under beside the trainer's own fields
CONFIG_VARIABLE = "CODE_GYM_AGENT"
BUDGET_SUBMIT = ("train", "mask")  # AgentConfig.budget_submit
SUBMIT = {"name": "submit", "arguments": {}}


@dataclass(frozen=True)
class AgentConfig:
    """How a rollout worker runs episodes.

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
        worker submitted for the agent): "train" it like any other, or "mask" it (zero advantage,
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
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "AgentConfig":
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

    def excluded(self, budget_submit: bool) -> str:
        """`EpisodeRecord.excluded` of an episode that played to its end (`budget_submit`: the
        worker submitted for the agent)."""
        return "budget_submit" if budget_submit and self.budget_submit == "mask" else ""


async def start_episode(config: AgentConfig, task: str) -> tuple[gym.Env, EpisodeRun]:
    """A new CodeRepo-v0 environment reset on `task`, tried `config.reset_attempts` times; the last
    try's exception is raised when every try raised."""
    for attempt in range(1, config.reset_attempts):
        try:
            return await _reset(config, task)
        except Exception as err:  # a sandbox or workspace fault: tried again
            logger.warning("task %r: reset attempt %d of %d raised", task, attempt, config.reset_attempts, exc_info=err)
    return await _reset(config, task)


async def _reset(config: AgentConfig, task: str) -> tuple[gym.Env, EpisodeRun]:
    env = await asyncio.to_thread(gym.make, code_gym.ENV_ID, **config.env_options())
    try:
        return env, await asyncio.to_thread(EpisodeRun.start, env, task)
    except Exception:
        await close_episode(env, task)
        raise


async def close_episode(env: gym.Env, task: str) -> None:
    """Close `env`; an exception is logged, not raised (the episode's result is taken already, and a
    dead sandbox must not lose it)."""
    try:
        await asyncio.to_thread(env.close)
    except Exception as err:
        logger.warning("task %r: closing the environment raised", task, exc_info=err)


def episode_metrics(resolved: bool, steps: int, budget_submit: bool) -> dict[str, float]:
    """The numbers a worker reports beside an episode's reward (the same keys on every sample)."""
    return {"code_gym/resolved": float(resolved), "code_gym/steps": float(steps),
            "code_gym/budget_submit": float(budget_submit)}


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


def observation_key(observation: str) -> str:
    """A short stand-in for an observation: GiGPO only compares observations for equality, and
    the full text of every tool output need not travel through Ray."""
    return hashlib.sha1(observation.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StepRecord:
    """One step of an episode.

    Attributes:
      action: the response text the environment received (the engine's decoded text of the action tokens).
      diff: the unified diff the step made to the repository ("" when none).
      provenance: ((path, line, start, end), ...): added line `line` of `path` was written by
        `action[start:end]` (code_gym's `info["provenance"]`).
      reward: the step's own reward, the graded outcome excluded (it is the episode's).
      observation: `observation_key` of what the policy saw before acting.
      token_span: [start, end) positions of the action in the trainer's token sequence (OpenRLHF:
        `observation_tokens`, its entry in `action_ranges`; verl: the response ids); start == end
        for a step the worker made without tokens (the submit that ends an episode cut off by the
        length budget).
      token_offsets: (end - start, 2) int64 character span in `action` of each action token.
      calls, edits, line_calls: which tool call made each changed line and the spans of the calls
        and their edit arguments (code_gym's `info["calls"]`, `["edits"]`, `["line_calls"]`; the
        `credit.Step` fields of the same names), None when not given.
    """

    action: str
    diff: str
    provenance: tuple[tuple[str, int, int, int], ...]
    reward: float
    observation: str
    token_span: tuple[int, int]
    token_offsets: np.ndarray
    calls: tuple | None = None
    edits: tuple | None = None
    line_calls: tuple | None = None

    def to_step(self) -> credit.Step:
        return credit.Step(action=self.action, diff=self.diff, reward=self.reward, token_offsets=self.token_offsets,
                           provenance=self.provenance or None, observation=self.observation,
                           calls=self.calls or None, edits=self.edits or None, line_calls=self.line_calls or None)


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode: the task, the graded outcome and the steps in order.

    `excluded` says why the estimators leave the episode out (zero advantage, in no group
    baseline): "failed: <the error>" when a fault ended it (no steps then), "budget_submit" when
    the length budget ended it and `AgentConfig.budget_submit` is "mask"; "" when it is trained on.
    """

    task_id: str
    outcome: float
    resolved: bool
    steps: tuple[StepRecord, ...]
    excluded: str = ""

    def to_trajectory(self, group: str | int | None = None, outcome: float | None = None) -> credit.Trajectory:
        """The `credit.Trajectory` (e.g. for `credit.dump_jsonl`), grouped under `group` (default: the
        task id), with `outcome` in place of the graded reward when given."""
        return credit.Trajectory(task_id=self.task_id if group is None else group,
                                 steps=[s.to_step() for s in self.steps],
                                 reward=self.outcome if outcome is None else outcome)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "EpisodeRecord":
        """The record of its plain-dict form (`dataclasses.asdict`, pydantic's `model_dump`: lists
        where the record holds tuples and arrays)."""
        steps = tuple(StepRecord(**{**step, "token_span": tuple(step["token_span"]),
                                    "token_offsets": np.asarray(step["token_offsets"], np.int64).reshape(-1, 2)})
                      for step in value["steps"])
        return cls(**{**value, "steps": steps})


def episode_record(result: EpisodeResult, spans: list[tuple[int, int]], offsets: list[np.ndarray],
                   excluded: str = "") -> EpisodeRecord:
    """The record of a finished episode whose step k owns token positions `spans[k]`, its tokens
    at characters `offsets[k]` of the action."""
    trajectory = result.trajectory
    steps = tuple(
        StepRecord(action=step.action, diff=step.diff, provenance=step.provenance or (), reward=step.reward,
                   observation=observation_key(step.observation or ""), token_span=span, token_offsets=offset,
                   calls=step.calls, edits=step.edits, line_calls=step.line_calls)
        for step, span, offset in zip(trajectory.steps, spans, offsets, strict=True))
    return EpisodeRecord(task_id=str(trajectory.task_id), outcome=trajectory.reward, resolved=result.resolved,
                         steps=steps, excluded=excluded)


@dataclass
class CreditSteps:
    """Every step of a batch's episodes, flat: `credit.token_advantages`' per-step arguments
    (`arguments()`), one entry per step in the order the episodes were added."""

    group_ids: list[Any] = field(default_factory=list)
    trajectory_ids: list[int] = field(default_factory=list)
    step_ids: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    step_rewards: list[float] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    token_offsets: list[np.ndarray] = field(default_factory=list)
    provenance: list[Any] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)
    edits: list[Any] = field(default_factory=list)
    line_calls: list[Any] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    token_spans: list[tuple[int, int]] = field(default_factory=list)

    def add(self, row: int, group: Any, record: EpisodeRecord, outcome: float, width: int, shift: int = 0,
            length_limit: str = "the trainer's length limit") -> None:
        """The steps of `record`, the episode of group `group` with outcome `outcome` on row `row` of
        the advantages, whose `width` positions are the trainer's token positions less `shift` (a
        step's `token_span` [start, end) is [start - shift, end - shift) there). An excluded record
        adds nothing: it keeps zero advantages and is in no group. A step outside the row is an
        error that names `length_limit`, the setting that bounds a rollout."""
        if record.excluded:
            return
        for t, step in enumerate(record.steps):
            start, end = step.token_span
            if end - shift > width or len(step.token_offsets) != end - start:
                raise ValueError(f"row {row}, step {t}: token span {step.token_span} with {len(step.token_offsets)} "
                                 f"token offsets does not fit its {width + shift}-token sequence: the rollout must "
                                 f"keep episodes within {length_limit}")
            values = (group, row, t, outcome, step.reward, step.action, step.diff, step.token_offsets,
                      step.provenance or None, step.calls, step.edits, step.line_calls, step.observation, row,
                      (start - shift, end - shift))
            for name, value in zip(self._names(), values, strict=True):
                getattr(self, name).append(value)

    def arguments(self) -> dict[str, list]:
        """Keyword arguments of `credit.token_advantages`, one list each."""
        return {name: getattr(self, name) for name in self._names()}

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))
