"""A tiny token-level policy on CPU: a GPT-2-style causal transformer (Hugging Face `transformers`,
random init, about 1 M parameters: 4 layers of width 128, a 1,000-token vocabulary) with a byte-level BPE tokenizer trained here with
`tokenizers`, trained on the real environment and the real tests with per-token advantages from
`credit.token_advantages`. The smallest real version of the OpenRLHF path: sampled text, real
tokenizer offsets and JSON-escaped tool calls meet the credit code.

Per task, the steps of an episode are those of the built-in policy (`code_gym.apps.policy`): step s
handles `regions_per_step` regions of the reference patch (0: all in one step), then the harness
submits. What the model sees is short, for a model this small: the task id, the first line of the
statement (at most 120 characters) and the regions of the step (path and line range); it does not
see the tool outputs (the observations are summarised to that line). Every token of the response
is sampled (temperature 1, no top-k/top-p, nothing constrained to candidate texts); the response is
played as the agent's action, whatever it is (a malformed call is the env's to reject).

1. Tokenizer: byte-level BPE trained on the prompts, the task statement and every candidate
   response of the built-in policy (the reference edit, its wrong variants, the untouched view).
2. Warm start: a short supervised pass on the candidate responses of each step, right and wrong
   variants alike (every combination of the step's regions' candidates, equally weighted), so the
   model starts undecided between them.
3. Updates: G rollouts; per-token advantages from `credit.token_advantages` (one batch row per
   step; the tokenizer's offset mapping as `token_offsets`, the recorded diff, provenance, calls
   and edits of each step); divided by the std of the batch's response-token advantages (the
   same step size for every estimator, as `code_gym.apps.train` whitens); then `epochs` passes of
   a PPO-style clipped policy-gradient loss (ratio clip, no critic), each token's term summed over
   its response and the rows averaged (`loss`, token-sum: Dr.GRPO's length-free sum), plain gradient
   steps (`optimizer`, SGD) with the gradient's norm clipped; optionally `kl` times the KL to the
   warm-start model (k3, per response token, as OpenRLHF's `init_kl_coef`) and the policy-gradient
   term on the highest-entropy tokens only (`forking`). Why these defaults (docs/benchmarks.md,
   "learning efficiency: tiny LM"): Adam's first steps move every parameter by its step size
   whatever its gradient, and in RL most gradients here are noise from the near-certain tokens of a
   170-token response, so a step that moves the 3 decision tokens breaks the text (one Adam step at
   3e-4 took the share of exact candidate texts from 0.76 to 0.36); SGD moves parameters by their
   gradient, large only where the model is uncertain. A KL to the warm start holds the text but
   also the decisions (KL 1.0: P(reference) 0.03 -> 0.05 in 40 updates). Four clipped passes per
   batch at SGD 0.03 learn where one pass at 0.1 broke the text.
4. Measure: after each update, the model's probability of sampling the reference response at every
   step (`p_reference`, computed from its token probabilities: the branch policy's P(resolve)),
   besides the batch's success rate.
"""
from __future__ import annotations

import itertools
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import credit
from code_gym.apps.policy import Decision, build_decisions
from code_gym.apps.train import SEPARATOR, make_env, steps_needed, verify_decisions
from code_gym.env.episode import Scripted, run_episode
from code_gym.grading.grade import GradeCache
from code_gym.tasks.task import Task

EOS = "<|endoftext|>"
LOSS_WEIGHTS = ("token-mean", "token-sum", "sequence-mean")  # TinyLMConfig.loss


def loss_weights(response, rule: str):
    """[B, L] weight of each response token in the policy loss (and the KL term). token-mean: every
    response token of the batch 1/N (N: their number); token-sum: each row's tokens summed, the rows
    averaged (1/B per token: Dr.GRPO's length-free sum, a long response's tokens weigh what a short
    one's do); sequence-mean: each row's token mean, the rows averaged (GRPO's original: a token of a
    short response weighs more)."""
    mask = response.float()
    if rule == "token-mean":
        return mask / mask.sum()
    if rule == "token-sum":
        return mask / mask.shape[0]
    if rule == "sequence-mean":
        return mask / mask.sum(dim=1, keepdim=True).clamp(min=1) / mask.shape[0]
    raise ValueError(f"unknown loss weighting {rule!r}; valid: {', '.join(LOSS_WEIGHTS)}")


def forking_mask(entropy, response, fraction: float):
    """[B, L] bool: the `fraction` of the batch's response tokens with the highest entropy (at least
    one), the "forking tokens" where the sampled text branches (Wang et al. 2025, "Beyond the 80/20
    rule"); ties at the threshold are kept."""
    values = entropy[response]
    if values.numel() == 0:
        return response
    count = max(1, int(round(fraction * values.numel())))
    threshold = values.topk(count).values[-1]
    return response & (entropy >= threshold)


@dataclass(frozen=True)
class TinyLMConfig:
    estimator: str = "didpo"  # one of credit.ESTIMATORS
    options: Mapping[str, Any] = field(default_factory=dict)  # estimator keyword options
    updates: int = 20
    group_size: int = 32  # rollouts per update (G)
    lr: float = 0.03  # RL phase step size (SGD; for Adam about 5e-5: 3e-4 breaks the text in one step)
    clip: float = 0.2  # PPO ratio clip
    epochs: int = 4  # clipped passes over each batch
    whiten: bool = True  # divide the batch's token advantages by their std
    kl: float = 0.0  # weight of the KL term to the warm-start model (k3 estimator, per response token; 0: none)
    sft_steps: int = 400  # warm-start gradient steps
    sft_lr: float = 3e-3
    sft_batch: int = 8
    vocab_size: int = 1000
    n_embd: int = 128
    n_layer: int = 4
    n_head: int = 4
    variants: int = 2  # wrong variants per region (the built-in policy's)
    seed: int = 0
    verify: bool = True  # drop wrong variants that pass the tests
    regions_per_step: int = 1  # regions per response (0: every region in one step)
    max_combinations: int = 64  # warm-start targets per step at most
    loss: str = "token-sum"  # how the per-token loss is weighted: one of LOSS_WEIGHTS
    optimizer: str = "sgd"  # RL phase: "sgd" (plain gradient steps of size lr) or "adam"
    grad_clip: float = 1.0  # clip the RL gradient's global norm to this (0: no clipping)
    forking: float = 0.0  # policy-gradient term only on this fraction of the batch's response tokens with the
    # highest entropy under the sampling policy (0: every token); the KL term stays on every token
    device: str = "cpu"  # torch device of the model and the batches ("cuda" on a GPU)
    reward: Any = None  # the env's reward spec (code_gym.rewards.spec; None: the env's default)


@dataclass(frozen=True)
class LMStats:
    update: int  # 0: after the warm start, before any RL update
    episodes: int
    success_rate: float  # fraction of this update's rollouts that resolved (NaN at update 0)
    mean_reward: float
    parsed: float  # fraction of responses that were exactly one of the candidate texts
    seconds: float
    p_reference: float = float("nan")  # after this update: the model's probability of sampling the
    # reference response (every region's reference edit) at every step, the branch policy's P(resolve)


@dataclass(frozen=True)
class LMEpisode:
    responses: tuple[tuple[int, ...], ...]  # sampled token ids per step (EOS included when sampled)
    trajectory: credit.Trajectory  # the model's steps (submit left out), offsets attached
    resolved: bool

    @property
    def reward(self) -> float:
        return self.trajectory.reward


def step_regions(decisions: Sequence[Decision], regions_per_step: int) -> list[list[int]]:
    """The decisions of each step (as `code_gym.apps.train.pack` packs them)."""
    size = regions_per_step or max(len(decisions), 1)
    return [list(range(i, min(i + size, len(decisions)))) for i in range(0, len(decisions), size)]


def prompt_text(task: Task, decisions: Sequence[Decision], regions: Sequence[int]) -> str:
    """The summarised observation of one step: task id, the statement's first line (truncated),
    the step's regions."""
    first = (task.statement.strip().splitlines() or [""])[0][:120]
    where = "; ".join(f"{decisions[d].path} {decisions[d].lines[0]}-{decisions[d].lines[1]}" for d in regions)
    return f"{task.id}: {first}\nregions: {where}\n"


def step_targets(decisions: Sequence[Decision], regions: Sequence[int], limit: int, rng: random.Random) -> list[str]:
    """Every combination of the regions' candidate responses, packed as one response (at most
    `limit`, drawn with `rng`)."""
    combos = list(itertools.product(*[range(len(decisions[d].candidates)) for d in regions]))
    if len(combos) > limit:
        combos = rng.sample(combos, limit)
    return [SEPARATOR.join(decisions[d].candidates[c].action for d, c in zip(regions, combo)) for combo in combos]


def step_combinations(decisions: Sequence[Decision], regions: Sequence[int], limit: int = 4096) -> dict[str, tuple[int, ...]]:
    """Packed response text -> the candidate chosen at each of the step's regions, for every
    combination (none when there are more than `limit`)."""
    sizes = [len(decisions[d].candidates) for d in regions]
    if int(np.prod(sizes)) > limit:
        return {}
    return {SEPARATOR.join(decisions[d].candidates[c].action for d, c in zip(regions, combo)): combo
            for combo in itertools.product(*[range(n) for n in sizes])}


def train_tokenizer(texts: Sequence[str], vocab_size: int, max_token_length: int = 16):
    """A byte-level BPE (`tokenizers`) trained on `texts`, with EOS as its one special token. The
    byte-level pre-tokenizer does not split at spaces and punctuation first (`use_regex=False`), so
    merges may span words and lines: text that the candidates share becomes a few long tokens, and
    responses stay short enough for a model this small."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), max_token_length=max_token_length)
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    return tokenizer


def token_offsets(tokenizer, ids: Sequence[int], text: str) -> np.ndarray:
    """(n, 2) character span in `text` (the decoding of `ids`) of each token: the tokenizer's offset
    mapping when re-encoding `text` gives back `ids` (the usual case); otherwise the growth of the
    decoded prefix at each token (a sampled non-canonical split). EOS gets an empty span at the end."""
    eos = tokenizer.token_to_id(EOS)
    body = list(ids[:-1]) if ids and ids[-1] == eos else list(ids)
    encoded = tokenizer.encode(text, add_special_tokens=False)
    if encoded.ids == body:
        spans = np.asarray(encoded.offsets, np.int64).reshape(-1, 2)
    else:
        ends = np.array([len(tokenizer.decode(body[:k + 1])) for k in range(len(body))], np.int64)
        ends = np.minimum(np.maximum.accumulate(ends), len(text)) if ends.size else ends
        spans = np.stack([np.concatenate([[0], ends[:-1]]), ends], axis=1) if ends.size else np.zeros((0, 2), np.int64)
    if len(body) < len(ids):
        spans = np.concatenate([spans, [[len(text), len(text)]]])
    return spans.astype(np.int64)


class TinyLMTrainer:
    """Warm start, then PPO-style clipped policy gradient on one task (see the module docstring)."""

    def __init__(self, task: Task, config: TinyLMConfig = TinyLMConfig(), grade_cache: GradeCache | None = None,
                 isolation: str = "auto", decisions: Sequence[Decision] | None = None):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        if config.updates < 0 or config.group_size < 2:
            raise ValueError("updates must be >= 0 and group_size >= 2 (group-relative credit needs a group)")
        if config.regions_per_step < 0:
            raise ValueError(f"regions_per_step must be >= 0 (0: every region in one step), got {config.regions_per_step}")
        if config.loss not in LOSS_WEIGHTS:
            raise ValueError(f"unknown loss weighting {config.loss!r}; valid: {', '.join(LOSS_WEIGHTS)}")
        if torch.device(config.device).type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {config.device!r}: torch sees no CUDA device here (torch {torch.__version__}); "
                             "use device 'cpu', or a CUDA build of torch on a GPU machine")
        if config.optimizer not in ("adam", "sgd"):
            raise ValueError(f"unknown optimizer {config.optimizer!r}; valid: adam, sgd")
        if not 0.0 <= config.forking <= 1.0:
            raise ValueError(f"forking must be a fraction in [0, 1] (0: every token), got {config.forking}")
        if config.estimator not in credit.ESTIMATORS:
            raise ValueError(f"unknown estimator {config.estimator!r}; valid names: {', '.join(credit.ESTIMATORS)}")
        self.task, self.config = task, config
        self.torch = torch
        torch.manual_seed(config.seed)
        self.rng = random.Random(config.seed)
        self.grade_cache = grade_cache if grade_cache is not None else GradeCache()
        self.decisions = list(decisions) if decisions is not None else build_decisions(task, config.variants, config.seed)
        self.env = make_env([task], self.grade_cache, max_steps=max(30, steps_needed(self.decisions, config.regions_per_step)),
                            isolation=isolation, **({} if config.reward is None else {"reward": config.reward}))
        self.dropped: list[str] = []
        if decisions is None and config.verify:
            self.decisions, self.dropped = verify_decisions(self.env, task, self.decisions)
        self.steps = step_regions(self.decisions, config.regions_per_step)
        self.prompts = [prompt_text(task, self.decisions, regions) for regions in self.steps]
        self.targets = [step_targets(self.decisions, regions, config.max_combinations, self.rng) for regions in self.steps]
        texts = [task.statement, *self.prompts] + [t for ts in self.targets for t in ts]
        self.tokenizer = train_tokenizer(texts, config.vocab_size)
        self.eos = self.tokenizer.token_to_id(EOS)
        self.prompt_ids = [self.tokenizer.encode(p).ids for p in self.prompts]
        target_ids = [[self.tokenizer.encode(t).ids + [self.eos] for t in ts] for ts in self.targets]
        self.target_ids = target_ids
        self.reference_ids = [self.tokenizer.encode(SEPARATOR.join(self.decisions[d].candidates[0].action for d in regions)).ids
                              + [self.eos] for regions in self.steps]
        longest = max(len(t) for ts in target_ids for t in ts)
        self.max_new_tokens = int(longest * 1.25) + 4
        positions = max(len(p) for p in self.prompt_ids) + self.max_new_tokens
        model_config = GPT2Config(vocab_size=self.tokenizer.get_vocab_size(), n_positions=positions, n_embd=config.n_embd,
                                  n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, bos_token_id=self.eos, eos_token_id=self.eos, pad_token_id=self.eos)
        self.device = torch.device(config.device)
        self.model = GPT2LMHeadModel(model_config).to(self.device)
        self.episodes = 0
        self.started = time.monotonic()
        self.sft_losses: list[float] = []
        self.last_batch: list[LMEpisode] = []
        self.last_advantages = np.zeros((0, 0), np.float32)  # the last update's advantages as the loss used them
        self.combinations = [step_combinations(self.decisions, regions) for regions in self.steps]

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    # ---- batches of (prompt, response) rows
    def _rows(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]):
        """input ids [B, L] (right-padded), attention mask, and the mask of response positions."""
        torch = self.torch
        width = max(len(p) + len(r) for p, r in pairs)
        ids = torch.full((len(pairs), width), self.eos, dtype=torch.long)
        attention = torch.zeros((len(pairs), width), dtype=torch.long)
        response = torch.zeros((len(pairs), width), dtype=torch.bool)
        for i, (p, r) in enumerate(pairs):
            ids[i, :len(p) + len(r)] = torch.tensor(list(p) + list(r))
            attention[i, :len(p) + len(r)] = 1
            response[i, len(p):len(p) + len(r)] = True
        return ids.to(self.device), attention.to(self.device), response.to(self.device)

    def _token_logprobs(self, ids, attention, model=None, entropy: bool = False):
        """log pi(token at position t | tokens before it), [B, L] (position 0: 0), under `model`
        (default: the policy); with `entropy`, also the policy's entropy at each position [B, L]."""
        torch = self.torch
        logits = (model or self.model)(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        taken = torch.cat([torch.zeros_like(logp[:, :1, 0]), logp.gather(-1, ids[:, 1:, None])[..., 0]], dim=1)
        if not entropy:
            return taken
        h = -(logp.exp() * logp).sum(-1)
        return taken, torch.cat([torch.zeros_like(h[:, :1]), h], dim=1)

    def reference_logprob(self) -> float:
        """log of `reference_probability` (the sum over steps of the reference tokens' log-probabilities)."""
        torch = self.torch
        ids, attention, response = self._rows(list(zip(self.prompt_ids, self.reference_ids)))
        self.model.eval()
        with torch.no_grad():
            logp = self._token_logprobs(ids, attention)
        return float((logp * response).sum())

    def reference_probability(self) -> float:
        """The probability that the model samples the reference response at every step (the product
        over steps of the probability of its tokens): the chance that an episode plays the reference
        patch exactly."""
        import math

        return math.exp(self.reference_logprob())

    def warm_start(self, cache=None) -> list[float]:
        """`sft_steps` Adam steps of cross-entropy on the candidate responses (every step's
        combinations, equally weighted); returns the loss of each step. With `cache` (a file path),
        the warm-started model, its losses and the random states after it are loaded from there when
        the file exists, else saved there: runs that differ only in the RL phase (the estimator)
        share one warm start and stay exactly what they would be without the cache."""
        from pathlib import Path

        torch = self.torch
        cache = Path(cache) if cache is not None else None
        if cache is not None and cache.exists():
            saved = torch.load(cache, weights_only=False, map_location=self.device)
            self.model.load_state_dict(saved["model"])
            self.sft_losses[:] = saved["losses"]
            torch.set_rng_state(saved["torch_rng"].cpu())
            if saved.get("cuda_rng") is not None and self.device.type == "cuda":
                torch.cuda.set_rng_state(saved["cuda_rng"].cpu(), self.device)
            self.rng.setstate(saved["rng"])
        else:
            pairs = [(self.prompt_ids[s], t) for s, ts in enumerate(self.target_ids) for t in ts]
            optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.sft_lr)
            self.model.train()
            for _ in range(self.config.sft_steps):
                batch = self.rng.sample(pairs, min(self.config.sft_batch, len(pairs)))
                ids, attention, response = self._rows(batch)
                logp = self._token_logprobs(ids, attention)
                loss = -(logp * response).sum() / response.sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                self.sft_losses.append(float(loss.detach()))
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                partial = cache.with_name(cache.name + f".{time.monotonic_ns()}.part")
                torch.save({"model": self.model.state_dict(), "losses": self.sft_losses,
                            "torch_rng": torch.get_rng_state(), "rng": self.rng.getstate(),
                            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None},
                           partial)
                partial.replace(cache)  # atomic: a concurrent run reads a whole file or none
        optimizer = torch.optim.SGD if self.config.optimizer == "sgd" else torch.optim.Adam
        self.optimizer = optimizer(self.model.parameters(), lr=self.config.lr)
        if self.config.kl:
            import copy

            self.reference = copy.deepcopy(self.model).eval()
            self.reference.requires_grad_(False)
        return self.sft_losses

    # ---- rollouts
    def sample(self, step: int, n: int) -> list[list[int]]:
        """`n` responses to step `step`'s prompt, every token sampled at temperature 1 (up to EOS)."""
        torch = self.torch
        prompt = torch.tensor([self.prompt_ids[step]] * n, dtype=torch.long, device=self.device)
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True, top_k=0,
                                      top_p=1.0, temperature=1.0, max_new_tokens=self.max_new_tokens,
                                      eos_token_id=self.eos, pad_token_id=self.eos)
        responses = []
        for row in out[:, prompt.shape[1]:].tolist():
            cut = row.index(self.eos) + 1 if self.eos in row else len(row)
            responses.append(row[:cut])
        return responses

    def play(self, responses: Sequence[Sequence[int]]) -> LMEpisode:
        """One episode whose step s plays the decoding of `responses[s]` (token ids), then submits."""
        texts = [self.tokenizer.decode([t for t in r if t != self.eos]) for r in responses]
        result = run_episode(self.env, Scripted(texts), self.task)
        recorded = result.trajectory.steps[:len(texts)]  # the model's steps; the harness's submit is left out
        steps = tuple(replace(step, token_offsets=token_offsets(self.tokenizer, r, step.action))
                      for step, r in zip(recorded, responses))
        return LMEpisode(tuple(tuple(r) for r in responses),
                         credit.Trajectory(self.task.id, steps, result.trajectory.reward), result.resolved)

    def rollouts(self) -> list[LMEpisode]:
        """G episodes: each step's responses sampled for the whole group (the prompts do not depend
        on the tool outputs), then played in the env."""
        g = self.config.group_size
        per_step = [self.sample(s, g) for s in range(len(self.steps))]
        return [self.play([per_step[s][i] for s in range(len(self.steps))]) for i in range(g)]

    def decision_tokens(self, episode: LMEpisode) -> list[tuple[int, int, int, bool]]:
        """(step, token index in the response, region, toward) for each decision the episode's exact
        candidate responses made: the token that wrote the first character where the region's
        candidate texts part (for the region's first candidate, the reference, `toward` is True).
        A response that is no candidate combination has none."""
        found = []
        for s, (regions, step) in enumerate(zip(self.steps, episode.trajectory.steps)):
            combo = self.combinations[s].get(step.action)
            if combo is None or step.token_offsets is None:
                continue
            spans, start = np.asarray(step.token_offsets), 0
            for region, choice in zip(regions, combo):
                texts = [c.action for c in self.decisions[region].candidates]
                if len(texts) > 1:
                    char = start + min(len(os.path.commonprefix(texts)), max(len(texts[choice]) - 1, 0))
                    hit = np.flatnonzero((spans[:, 0] <= char) & (char < spans[:, 1]))
                    if hit.size:
                        found.append((s, int(hit[0]), region, choice == 0))
                start += len(texts[choice]) + len(SEPARATOR)
        return found

    def advantages(self, episodes: Sequence[LMEpisode], response_mask) -> Any:
        """[B, L] per-token advantages of the batch rows (one per model step), from
        `credit.token_advantages` with the configured estimator."""
        steps = [(i, s, step) for i, e in enumerate(episodes) for s, step in enumerate(e.trajectory.steps)]
        return credit.token_advantages(
            response_mask, [self.task.id] * len(steps), [i for i, _, _ in steps], [s for _, s, _ in steps],
            [episodes[i].reward for i, _, _ in steps], estimator=self.config.estimator,
            actions=[st.action for _, _, st in steps], diffs=[st.diff for _, _, st in steps],
            token_offsets=[st.token_offsets for _, _, st in steps], provenance=[st.provenance for _, _, st in steps],
            observations=[self.prompts[s] for _, s, _ in steps], calls=[st.calls for _, _, st in steps],
            edits=[st.edits for _, _, st in steps], line_calls=[st.line_calls for _, _, st in steps],
            **self.config.options)

    def update(self, number: int) -> LMStats:
        torch = self.torch
        batch = self.rollouts()
        self.episodes += len(batch)
        self.last_batch = batch
        pairs = [(self.prompt_ids[s], list(r)) for e in batch for s, r in enumerate(e.responses)]
        ids, attention, response = self._rows(pairs)
        adv = self.advantages(batch, response)
        if self.config.whiten:
            std = adv[response].std()
            if std > 1e-8:
                adv = adv / std
        self.last_advantages = adv.detach().cpu().numpy()  # [B, L], rows in the order of the batch's steps
        with torch.no_grad():
            self.model.eval()
            if self.config.forking:  # the entropy over the vocabulary, only where it is used
                old, entropy = self._token_logprobs(ids, attention, entropy=True)
            else:
                old = self._token_logprobs(ids, attention)
            ref = self._token_logprobs(ids, attention, self.reference) if self.config.kl else None
        self.model.train()
        weight = loss_weights(response, self.config.loss)
        pg_weight = weight * forking_mask(entropy, response, self.config.forking) if self.config.forking else weight
        for _ in range(self.config.epochs):
            new = self._token_logprobs(ids, attention)
            ratio = torch.exp(new - old)
            clipped = torch.clamp(ratio, 1 - self.config.clip, 1 + self.config.clip)
            loss = -(torch.minimum(ratio * adv, clipped * adv) * pg_weight).sum()
            if ref is not None:  # KL(pi || pi_ref) per token, k3: exp(ref - new) - (ref - new) - 1 >= 0
                log_ratio = ref - new
                loss = loss + self.config.kl * ((torch.exp(log_ratio) - log_ratio - 1) * weight).sum()
            self.optimizer.zero_grad()
            loss.backward()
            if self.config.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            self.optimizer.step()
        known = {t for ts in self.targets for t in ts}
        parsed = float(np.mean([st.action in known for e in batch for st in e.trajectory.steps]))
        return LMStats(number, self.episodes, float(np.mean([e.resolved for e in batch])),
                       float(np.mean([e.reward for e in batch])), parsed, time.monotonic() - self.started,
                       self.reference_probability())

    def run(self, until: float | None = None, progress: bool = False, warm_cache=None, on_update=None) -> list[LMStats]:
        """The warm start (`warm_cache`: see `warm_start`), then up to `config.updates` updates; with
        `until`, stop at the first update after which `p_reference` reaches it. `on_update(stats)` is
        called after each update (the trainer's `last_batch` and `last_advantages` are that update's)."""
        from tqdm import tqdm

        if not self.sft_losses:
            self.warm_start(warm_cache)
        history = [LMStats(0, 0, float("nan"), float("nan"), float("nan"), time.monotonic() - self.started,
                           self.reference_probability())]
        bar = tqdm(range(1, self.config.updates + 1), desc=f"tiny-lm {self.config.estimator}", unit="update",
                   disable=not progress)
        for number in bar:
            history.append(self.update(number))
            if on_update is not None:
                on_update(history[-1])
            bar.set_postfix(success=f"{history[-1].success_rate:.2f}")
            if until is not None and history[-1].p_reference >= until:
                break
        return history

    def close(self) -> None:
        self.env.close()


def write_outputs(runs: Mapping[str, Sequence[LMStats]], trainers: Mapping[str, TinyLMTrainer], out) -> None:
    """curves.csv and curves.png of labelled runs, and per run its model and tokenizer
    (`tiny-lm-<label>/`, Hugging Face format) and its last batch's responses (samples.jsonl)."""
    import csv
    import json
    from pathlib import Path

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "curves.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", "update", "episodes", "success_rate", "mean_reward", "parsed", "seconds"])
        for label, history in runs.items():
            for s in history:
                writer.writerow([label, s.update, s.episodes, f"{s.success_rate:.4f}", f"{s.mean_reward:.4f}",
                                 f"{s.parsed:.4f}", f"{s.seconds:.2f}"])
    for label, trainer in trainers.items():
        folder = out / f"tiny-lm-{label}"
        trainer.model.save_pretrained(folder)
        trainer.tokenizer.save(str(folder / "tokenizer.json"))
        (folder / "warm_start_loss.json").write_text(json.dumps(trainer.sft_losses))
        with (folder / "samples.jsonl").open("w") as fh:
            for episode in trainer.last_batch:
                fh.write(json.dumps({"reward": episode.reward, "resolved": episode.resolved,
                                     "responses": [st.action for st in episode.trajectory.steps]}) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, history in runs.items():
        ax.plot([s.update for s in history[1:]], [s.success_rate for s in history[1:]], label=label)
    ax.axhline(0.9, color="grey", ls=":", lw=1)
    ax.set(xlabel="update", ylabel="batch success rate", ylim=(0, 1.02), title="tiny LM on CodeRepo-v0")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)
    plt.close(fig)
