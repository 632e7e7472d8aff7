"""`algorithm.adv_estimator=didpo` (and credit's other estimators) in verl's PPO trainer.

verl looks an estimator up by name in `verl.trainer.ppo.core_algos` (`register_adv_est` /
`get_adv_estimator_fn`) and calls it from `compute_advantage` with the batch's
`token_level_rewards` and `response_mask` ([rows, response length]), `index` (the prompt uid of
each row: the `rollout.n` samples of one prompt share it) and `config` (the `algorithm` config).
`register` adds one function per name of `NAMES`; each computes its advantages with the same
`credit.token_advantages` call as the OpenRLHF integration.

Nothing else of the batch reaches a registered estimator, so the step-level estimators
(`credit.STEP_LEVEL`: DiDPO's presets, gigpo) take the rows' episode records from a context,
`batch_records`. In training it is set by `patch_trainer`: around verl's v1 trainer's
`PPOTrainer._compute_advantage` it reads the records that the agent loop (agent_loop.py) left in
each row's `extra_fields[RECORD_KEY]` from verl's TransferQueue, for the rows of the batch, in the
batch's order (the order `_compute_advantage` hands them to `compute_advantage`). hook.py applies
both in verl's Ray workers.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Any, Callable, Iterator, Optional, Sequence

import credit
from integrations.episodes import RECORD_KEY, CreditSteps, EpisodeRecord

# verl's own estimators of these names stay verl's; credit's are registered as "credit-<name>"
VERL_OWN = ("grpo", "rloo")
# verl estimator name -> credit estimator name
NAMES: dict[str, str] = {(f"credit-{name}" if name in VERL_OWN else name): name for name in credit.ESTIMATORS}
# `algorithm.credit_options`: keyword options of the credit estimator (they override a preset's)
OPTIONS_KEY = "credit_options"

_RECORDS: contextvars.ContextVar[Optional[list[Optional[EpisodeRecord]]]] = contextvars.ContextVar(
    "code_gym_verl_records", default=None)


@contextlib.contextmanager
def batch_records(records: Sequence[Optional[EpisodeRecord]]) -> Iterator[None]:
    """While open, the step-level estimators read row b's episode from `records[b]` (None: a row
    that is no episode, such as verl's padding rows; it gets zero advantages)."""
    token = _RECORDS.set(list(records))
    try:
        yield
    finally:
        _RECORDS.reset(token)


def credit_advantages(estimator: str, token_level_rewards: Any, response_mask: Any, index: Sequence[Any],
                      records: Optional[Sequence[Optional[EpisodeRecord]]] = None,
                      options: Optional[dict[str, Any]] = None) -> Any:
    """[rows, response length] advantages of credit's `estimator` for a verl batch (float32, on
    the mask's device).

    Row b is one episode of group `index[b]`; its outcome is the sum of `token_level_rewards[b]`
    (as verl's GRPO scores a row: the reward on the last token, and the KL penalty when
    `use_kl_in_reward` put one on every token). Without `records` each row is a single step that
    owns all its response tokens (enough for the outcome-only estimators). With them, row b holds
    the steps of `records[b]`, each owning the response positions of its `token_span` and placing
    its per-token values by its `token_offsets`; a row whose record is None or `excluded` is in no
    group and gets zeros.
    """
    rewards = token_level_rewards.sum(-1).tolist()
    if records is None:
        rows = range(len(rewards))
        arguments = dict(group_ids=[index[b] for b in rows], trajectory_ids=list(rows), step_ids=[0] * len(rewards),
                         rewards=rewards)
    else:
        if len(records) != len(rewards):
            raise ValueError(f"{len(rewards)} rows but {len(records)} episode records")
        steps = CreditSteps()
        for b, record in enumerate(records):
            if record is not None:
                steps.add(b, index[b], record, rewards[b], response_mask.shape[-1],
                          length_limit="data.max_response_length")
        if not steps.rows:  # no episode in the batch
            return response_mask.new_zeros(response_mask.shape, dtype=token_level_rewards.dtype)
        arguments = steps.arguments()
    return credit.token_advantages(response_mask, estimator=estimator, **arguments, **(options or {}))


def estimator_options(config: Any) -> dict[str, Any]:
    """The credit estimator's options: `algorithm.credit_options` (a mapping; none when absent)."""
    options = config.get(OPTIONS_KEY) if config is not None else None
    return {str(key): value for key, value in (options or {}).items()}


def _estimator_function(verl_name: str) -> Callable[..., tuple[Any, Any]]:
    """The function verl's `compute_advantage` calls for `verl_name`."""
    name = NAMES[verl_name]
    step_level = name in credit.STEP_LEVEL

    def estimator(token_level_rewards, response_mask, index=None, config=None, **_):
        if index is None:
            raise ValueError(f"estimator {verl_name!r} compares the samples of each prompt: the batch needs its "
                             "`uid` (verl sets it for every prompt)")
        records = _RECORDS.get()
        if step_level and records is None:
            raise ValueError(f"estimator {verl_name!r} reads each step of the episodes, and no episode records "
                             "reached it: run verl's v1 trainer (trainer.use_v1=True, the default) with the agent "
                             "loop of integrations/verl/agent_loop.py and integrations.verl.hook.install as Ray's "
                             "worker_process_setup_hook (docs/verl.md)")
        options = estimator_options(config)
        if options:
            credit.check_options(name, options)  # says which options the estimator takes
        advantages = credit_advantages(name, token_level_rewards, response_mask, list(index),
                                       records if step_level else None, options)
        return advantages, advantages  # returns = advantages, as verl's critic-free estimators give them

    estimator.__name__ = estimator.__qualname__ = f"code_gym_{verl_name.replace('-', '_')}"
    estimator.__doc__ = f"credit's {name!r} as verl's advantage estimator {verl_name!r} (integrations.verl)."
    return estimator


# one function object per name for the life of the process: verl's `register_adv_est` accepts the
# same function again and refuses a different one under a taken name
ESTIMATOR_FUNCTIONS: dict[str, Callable[..., tuple[Any, Any]]] = {name: _estimator_function(name) for name in NAMES}


def register() -> None:
    """Add `ESTIMATOR_FUNCTIONS` to verl's estimator registry (idempotent)."""
    from verl.trainer.ppo import core_algos

    for name, function in ESTIMATOR_FUNCTIONS.items():
        core_algos.register_adv_est(name)(function)


def stored_records(tq: Any, batch: Any) -> list[Optional[EpisodeRecord]]:
    """The episode record of each row of `batch` (verl's `KVBatchMeta`) from TransferQueue `tq`, in
    the batch's order; None for verl's padding rows."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
    records = []
    for key, tag, extra in zip(batch.keys, batch.tags, data.pop("extra_fields").tolist(), strict=True):
        if tag.get("is_padding", False):
            records.append(None)
        elif not isinstance(extra, dict) or extra.get(RECORD_KEY) is None:
            raise ValueError(f"row {key} has no code-gym episode record in its extra_fields: the step-level "
                             "estimators need the episodes of the agent loop in integrations/verl/agent_loop.py")
        else:
            records.append(stored_record(extra[RECORD_KEY]))
    return records


def stored_record(value: Any) -> EpisodeRecord:
    """The `EpisodeRecord` of a stored row: verl stores an agent loop's output through
    `AgentLoopOutput.as_dict`, whose pydantic `model_dump` turns the record's dataclasses into dicts."""
    return value if isinstance(value, EpisodeRecord) else EpisodeRecord.from_dict(value)


def patch_trainer(module: Any) -> None:
    """Make `module.PPOTrainer._compute_advantage` (verl.trainer.ppo.v1.trainer_base) run with the
    batch's episode records in `batch_records` when the estimator is one of credit's step-level ones."""
    cls = module.PPOTrainer
    original = cls._compute_advantage
    if getattr(original, "_code_gym", False):
        return

    @functools.wraps(original)
    def _compute_advantage(self, batch, metrics):
        if NAMES.get(self.config.algorithm.adv_estimator) not in credit.STEP_LEVEL:
            return original(self, batch, metrics)
        with batch_records(stored_records(module.tq, batch)):
            return original(self, batch, metrics)

    _compute_advantage._code_gym = True
    cls._compute_advantage = _compute_advantage

