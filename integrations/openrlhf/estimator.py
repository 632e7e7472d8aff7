"""`--algo.advantage.estimator didpo` (and `gigpo`) inside OpenRLHF's PPO trainer.

Narrow patches of OpenRLHF classes, applied in each Ray worker by `hook.install` (train.py
registers it as Ray's worker_process_setup_hook; `preflight.py` checks them on every node):

- `SamplesGenerator._process_response_into_experience` keeps the executor's `EpisodeRecord` (the
  response key `records.RECORD_KEY`, which OpenRLHF would drop) in `experience.info[RECORD_KEY]`;
- `SamplesGenerator.generate_eval_samples` scores evaluation episodes by whether they resolved the
  task, so OpenRLHF's `eval_<datasource>_pass1` is the resolve rate (and `pass<n>` the share of tasks
  that some sample resolved), not the mean of shaped, fractional rewards;
- `RemoteExperienceMaker.compute_advantages_and_returns` hands batches to `credit_advantages` when
  the estimator is one of `ESTIMATORS` (in rollout order, whatever micro-batches dynamic batching
  packed); otherwise OpenRLHF's runs, with the records removed first and, when some rows are
  excluded (failed or masked), on the kept rows only, as if the excluded ones were not in the batch
  (`_own_estimator_on_kept_rows`); excluded rows get zero advantages and returns.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from typing import Any, Sequence

import numpy as np
import torch
from openrlhf.trainer.ppo_utils.length_penalty import apply_length_penalties

import credit
from integrations.episodes import RECORD_KEY, CreditSteps, EpisodeRecord
from integrations.openrlhf import ESTIMATORS


def credit_advantages(experiences: Sequence[Any], args: Any) -> Sequence[Any]:
    """Write `experience.advantages` and `returns` from `credit` (in place; returns `experiences`).

    Per sample (one CodeRepo-v0 episode, its record in `info[RECORD_KEY]`): the group is OpenRLHF's
    prompt group (sample index // n_samples_per_prompt, as its group_norm baseline uses), the
    outcome is the graded reward plus whatever OpenRLHF's length penalties changed, and each step
    owns the action tokens of its `token_span`. `credit.token_advantages` computes the estimator
    (`args.algo.advantage.estimator`, options from `args.credit.options`) and places each step's
    per-token values on its span; `returns` holds the step's return G_t on the same tokens.
    Action-mask position p is sequence position p + 1 (OpenRLHF drops the first token), so a span
    [start, end) of `observation_tokens` is [start - 1, end - 1) on the mask. The outcome is
    clipped to `--reward.clip_range`, as OpenRLHF clips the rewards of its own estimators.

    An episode whose record is `excluded` (a fault ended it, or a masked budget submit) never
    reaches credit: its row keeps zero advantages and returns, and no group baseline counts it, for
    every estimator (credit only sees the episodes it is given).
    """
    records = [_take_records(e) for e in experiences]
    mask = _action_mask(experiences)
    steps = _flatten(experiences, records, _length_penalties(experiences, args), args)
    if steps.rows:
        advantages, result = credit.token_advantages(mask, estimator=args.algo.advantage.estimator, return_result=True,
                                                     **steps.arguments(), **estimator_options(args))
        step_returns, episode_advantages = result.steps.returns, result.episode
    else:  # every episode of the batch is excluded
        advantages = torch.zeros(mask.shape)
        step_returns, episode_advantages = np.zeros(0), np.zeros(0)
    returns, episode_returns = _returns(steps, step_returns, advantages)
    excluded, row_advantages = _row_statistics(steps, len(mask), episode_advantages)
    first = 0
    for experience in experiences:
        size, width = experience.action_mask.shape
        experience.advantages = advantages[first:first + size, :width]
        experience.returns = returns[first:first + size, :width]
        experience.info["return"] = episode_returns[first:first + size]
        experience.info["credit/excluded"] = excluded[first:first + size]
        experience.info["credit/episode_advantage"] = row_advantages[first:first + size]
        experience.kl = None  # only OpenRLHF's reward shaping used it
        first += size
    return experiences


def _row_statistics(steps: CreditSteps, rows: int,
                    episode_advantages: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: 1.0 where the episode was left out of credit; the episode advantage A^E (0 there)."""
    included = list(dict.fromkeys(steps.rows))  # credit numbers trajectories in order of first appearance
    excluded = torch.ones(rows)
    excluded[included] = 0.0
    advantages = torch.zeros(rows)
    advantages[included] = torch.as_tensor(np.asarray(episode_advantages, np.float64), dtype=torch.float32)
    return excluded, advantages


def _length_penalties(experiences: Sequence[Any], args: Any) -> list[list[float]]:
    """Applies OpenRLHF's length penalties to `experience.rewards` (promoted to float32 as OpenRLHF
    does) and returns what they changed, per experience and sample."""
    before = [e.rewards.to(torch.promote_types(e.rewards.dtype, torch.float32)) for e in experiences]
    for experience, rewards in zip(experiences, before):
        experience.rewards = rewards.clone()
    apply_length_penalties(experiences, args)
    return [(e.rewards - rewards).tolist() for e, rewards in zip(experiences, before)]


def _returns(steps: CreditSteps, step_returns: np.ndarray, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each step's return G_t on its tokens, and each row's G_0."""
    returns = torch.zeros_like(like)
    episode_returns = torch.zeros(like.shape[0])
    for row, t, (start, end), value in zip(steps.rows, steps.step_ids, steps.token_spans, step_returns.tolist()):
        returns[row, start:end] = value
        if t == 0:
            episode_returns[row] = value
    return returns, episode_returns


def estimator_options(args: Any) -> dict[str, Any]:
    """The credit estimator's keyword options: `--credit.options`, a JSON object (train.py)."""
    return json.loads(getattr(getattr(args, "credit", None), "options", None) or "{}")


def _take_records(experience: Any) -> list[EpisodeRecord]:
    records = experience.info.pop(RECORD_KEY, None)
    if records is None or len(records) != len(experience.sequences):
        raise ValueError(f"{len(experience.sequences)} samples but {0 if records is None else len(records)} "
                         "code-gym episode records: the didpo/gigpo estimators need the executor of "
                         "integrations/openrlhf/agent_func.py (--train.agent_func_path) and the patches "
                         "that `python -m integrations.openrlhf.train` installs")
    return list(records)


def _action_mask(experiences: Sequence[Any]) -> torch.Tensor:
    """[samples, longest action mask]: the action masks of all experiences, stacked."""
    masks = [e.action_mask.bool() for e in experiences]
    width = max(m.shape[1] for m in masks)
    return torch.cat([torch.nn.functional.pad(m, (0, width - m.shape[1])) for m in masks])


def _flatten(experiences, records, penalties, args: Any) -> CreditSteps:
    """The kept episodes' steps, flat, in rollout order: sample index 0, 1, ... (each step keeps
    its row in the experiences). OpenRLHF's dynamic batching packs samples into micro-batches out
    of that order (split_rollout_samples' length-balanced partitions), and an estimator may depend
    on the order of its trajectories (credit breaks ties between equally scored anchors by it;
    floating-point sums do too); in rollout order the advantages of a sample are the same, bit for
    bit, whichever micro-batches it was packed into."""
    steps = CreditSteps()
    low, high = getattr(args.reward, "clip_range", None) or (-np.inf, np.inf)
    samples, row = [], 0
    for experience, episodes, penalty in zip(experiences, records, penalties):
        for index, episode, extra in zip(experience.index, episodes, penalty):
            samples.append((index, row, episode, extra, experience.action_mask.shape[1]))
            row += 1
    # in rollout order (OpenRLHF's sample index), whatever micro-batches dynamic batching packed
    # them into: credit then sees the same batch with and without it (`_flatten`'s docstring)
    for index, row, episode, extra, width in sorted(samples, key=lambda sample: sample[0]):
        # action-mask position p is sequence position p + 1: OpenRLHF drops the first token
        steps.add(row, index // args.rollout.n_samples_per_prompt, episode,
                  float(np.clip(episode.outcome + extra, low, high)), width, shift=1, length_limit="--data.max_len")
    return steps


def patch_samples_generator(module: Any) -> None:
    """Make `SamplesGenerator` keep each response's episode record in `experience.info`, and score
    evaluation episodes by resolution (`_patch_eval_samples`)."""
    _patch_eval_samples(module)
    cls = module.SamplesGenerator
    original = cls._process_response_into_experience
    if getattr(original, "_code_gym", False):
        return

    @functools.wraps(original)
    def _process_response_into_experience(self, response, **generate_kwargs):
        experience = original(self, response, **generate_kwargs)
        if RECORD_KEY in response:
            experience.info[RECORD_KEY] = [response[RECORD_KEY]]
        return experience

    _process_response_into_experience._code_gym = True
    cls._process_response_into_experience = _process_response_into_experience


def _patch_eval_samples(module: Any) -> None:
    """Make `SamplesGenerator.generate_eval_samples` reward each code-gym episode by whether it
    resolved its task (OpenRLHF's eval metrics average the rewards)."""
    cls = module.SamplesGenerator
    original = cls.generate_eval_samples
    if getattr(original, "_code_gym", False):
        return

    @functools.wraps(original)
    def generate_eval_samples(self, **generate_kwargs):
        experiences = original(self, **generate_kwargs)
        for experience in experiences:
            if experience.info.pop(RECORD_KEY, None) is not None:
                experience.rewards = experience.info["code_gym/resolved"].to(torch.float32)
        return experiences

    generate_eval_samples._code_gym = True
    cls.generate_eval_samples = generate_eval_samples


# OpenRLHF's estimators whose baseline is a statistic of the prompt group (`compute_advantages_and_returns`)
GROUP_ESTIMATORS = ("rloo", "group_norm", "dr_grpo", "reinforce_baseline")


def _excluded_rows(experiences: Sequence[Any]) -> list[torch.Tensor]:
    """Takes the records out of `experiences`; per experience, which rows are `excluded`."""
    out = []
    for experience in experiences:
        records = experience.info.pop(RECORD_KEY, None)
        out.append(torch.tensor([bool(r.excluded) for r in records]) if records is not None
                   else torch.zeros(len(experience.sequences), dtype=torch.bool))
    return out


def _take_rows(experience: Any, keep: torch.Tensor, index: list[int]) -> Any:
    """A copy of `experience` with only the rows `keep`, numbered `index` (OpenRLHF's sample index)."""
    size = len(experience.sequences)
    rows = keep.nonzero().flatten().tolist()

    def take(value):
        if isinstance(value, torch.Tensor) and value.dim() > 0 and len(value) == size:
            return value[keep]
        if isinstance(value, list) and len(value) == size:
            return [value[r] for r in rows]
        if isinstance(value, dict):
            return {key: take(v) for key, v in value.items()}
        return value

    part = dataclasses.replace(experience, **{f.name: take(getattr(experience, f.name))
                                               for f in dataclasses.fields(experience)})
    part.index = list(index)
    return part


def _kept_parts(experiences, excluded, n_samples: int, by_group_size: bool) -> list[tuple[int, list]]:
    """The kept rows as OpenRLHF batches: [(samples per prompt, [(experience number, rows, part)])].

    With `by_group_size`, one batch per number k >= 2 of kept rows in a group (a group with fewer
    has no group statistic: its rows are left out), its groups numbered 0.. in sample order so that
    OpenRLHF's `reshape(-1, k)` finds them; otherwise one batch of every kept row, in sample order,
    for `reshape(-1, 1)`. Parts keep the order of `experiences`."""
    group = [torch.tensor(e.index) // n_samples for e in experiences]
    keep = [~rows for rows in excluded]
    kept_size = torch.bincount(torch.cat([g[k] for g, k in zip(group, keep)]),
                               minlength=max(int(g.max()) for g in group) + 1)
    sizes = sorted({k for k in kept_size.tolist() if k >= 2}) if by_group_size else [1]
    batches = []
    for k in sizes:
        chosen = [keep_e & (kept_size[g] == k) if by_group_size else keep_e for g, keep_e in zip(group, keep)]
        # numbered by rank of the original sample index: a group's rows stay together and in order
        rank = {i: r for r, i in enumerate(sorted(
            i for e, c in zip(experiences, chosen) for i, on in zip(e.index, c.tolist()) if on))}
        parts = [(j, c, _take_rows(e, c, [rank[i] for i, on in zip(e.index, c.tolist()) if on]))
                 for j, (e, c) in enumerate(zip(experiences, chosen)) if c.any()]
        if parts:
            batches.append((k, parts))
    return batches


@contextlib.contextmanager
def _overridden(maker: Any, n_samples: int, estimator: str, **reward: Any):
    """`maker`'s arguments with other samples per prompt, estimator and reward options, for one call."""
    args = maker.strategy.args
    saved = (args.rollout.n_samples_per_prompt, args.algo.advantage.estimator, maker.advantage_estimator,
             {key: getattr(args.reward, key, None) for key in reward})
    args.rollout.n_samples_per_prompt, args.algo.advantage.estimator = n_samples, estimator
    maker.advantage_estimator = estimator
    for key, value in reward.items():
        setattr(args.reward, key, value)
    try:
        yield
    finally:
        args.rollout.n_samples_per_prompt, args.algo.advantage.estimator, maker.advantage_estimator = saved[:3]
        for key, value in saved[3].items():
            setattr(args.reward, key, value)


def _centre_groups(parts: list[Any], groups: list[torch.Tensor], args: Any) -> None:
    """reinforce_baseline's baseline on the kept rows, in `parts`' rewards: OpenRLHF's length
    penalties, then each group's mean reward (over its kept rows, in sample order) subtracted.
    `groups[p]` is the prompt group of each row of `parts[p]`."""
    for part in parts:
        part.rewards = part.rewards.to(torch.promote_types(part.rewards.dtype, torch.float32))
    apply_length_penalties(parts, args)
    rows = sorted((i, p, b) for p, part in enumerate(parts) for b, i in enumerate(part.index))  # sample order
    group = torch.tensor([int(groups[p][b]) for _, p, b in rows])
    rewards = torch.stack([parts[p].rewards[b] for _, p, b in rows])
    for g in group.unique().tolist():
        of = (group == g).nonzero().flatten().tolist()
        members = rewards[of].reshape(1, -1)
        for r, value in zip(of, (members - members.mean(-1, keepdim=True)).reshape(-1)):
            _, p, b = rows[r]
            parts[p].rewards[b] = value


def _own_estimator_on_kept_rows(original, maker, experiences, excluded) -> Sequence[Any]:
    """OpenRLHF's own estimator (`original`) on the kept rows only, as if the excluded rows were
    not in the batch: group statistics (rloo's leave-one-out mean, group_norm's mean and std, the
    group mean of dr_grpo and reinforce_baseline) over each group's kept rows, reinforce_baseline's
    and gae's / reinforce's batch whitening over the kept rows' tokens. Excluded rows, and for the
    group estimators but reinforce_baseline the rows of a group left with one kept episode (OpenRLHF's
    statistic of one: NaN for rloo and group_norm, 0 for dr_grpo), get zero advantages and returns;
    `group_reward_std` is over the kept rows (0 where fewer than 2)."""
    args = maker.strategy.args
    estimator, n_samples = args.algo.advantage.estimator, args.rollout.n_samples_per_prompt
    centred = estimator == "reinforce_baseline"
    batches = _kept_parts(experiences, excluded, n_samples,
                          by_group_size=estimator in GROUP_ESTIMATORS and not centred)
    for experience in experiences:
        experience.rewards = experience.rewards.to(torch.promote_types(experience.rewards.dtype, torch.float32))
        experience.advantages = torch.zeros(experience.action_mask.shape)
        experience.returns = torch.zeros(experience.action_mask.shape)
        experience.info["return"] = torch.zeros(len(experience.sequences))
        experience.info["group_reward_std"] = torch.zeros(len(experience.sequences))
    for k, parts in batches:
        call = dict(n_samples=k, estimator=estimator)
        if centred:  # the kept groups' centred rewards, then OpenRLHF's REINFORCE (its whitening) on them
            _centre_groups([part for _, _, part in parts],
                           [torch.tensor(experiences[j].index)[rows] // n_samples for j, rows, _ in parts], args)
            args.algo.advantage.gamma = 1.0  # as OpenRLHF sets it for reinforce_baseline
            call = dict(n_samples=1, estimator="reinforce", overlong_buffer_len=None, stop_properly_penalty_coef=None)
        with _overridden(maker, **call):
            done = original(maker, [part for _, _, part in parts])
        for (j, rows, _), part in zip(parts, done):
            experience = experiences[j]
            width = part.advantages.shape[1]
            experience.advantages[rows, :width] = part.advantages.to(experience.advantages.dtype)
            experience.returns[rows, :width] = part.returns.to(experience.returns.dtype)
            experience.info["return"][rows] = part.info["return"].to(torch.float32)
            if "group_reward_std" in part.info:
                experience.info["group_reward_std"][rows] = part.info["group_reward_std"].to(torch.float32)
    for experience, rows in zip(experiences, excluded):
        experience.kl = None
        experience.info["credit/excluded"] = rows.float()
    return experiences


def patch_experience_maker(module: Any) -> None:
    """Route `RemoteExperienceMaker.compute_advantages_and_returns` to `credit_advantages` for the
    estimators in `ESTIMATORS`; OpenRLHF's own run unchanged, on the kept rows only when some are
    excluded (`_own_estimator_on_kept_rows`)."""
    cls = module.RemoteExperienceMaker
    original = cls.compute_advantages_and_returns
    if getattr(original, "_code_gym", False):
        return

    @functools.wraps(original)
    def compute_advantages_and_returns(self, experiences):
        if self.strategy.args.algo.advantage.estimator in ESTIMATORS:
            return credit_advantages(experiences, self.strategy.args)
        excluded = _excluded_rows(experiences)
        if any(rows.any() for rows in excluded):
            return _own_estimator_on_kept_rows(original, self, experiences, excluded)
        experiences = original(self, experiences)
        for experience, rows in zip(experiences, excluded):
            experience.info["credit/excluded"] = rows.float()
        return experiences

    compute_advantages_and_returns._code_gym = True
    cls.compute_advantages_and_returns = compute_advantages_and_returns
