"""Label-free (intrinsic) rewards: signals that need no tests. See docs/rewards.md for the warning
that comes with them.

Self-certainty (`SelfCertainty`, the `certainty` component) reads the sampling log-probs of the
episode's responses. They reach the env as a sampled-response action,

    env.step({"text": response_text, "logprobs": logprobs})

which the env plays exactly like `env.step(response_text)` (`sampled_response`), keeping the
log-probs for the outcome. `logprobs` is what the sampler returned, in one of these forms:

- OpenAI / vLLM chat completions with `logprobs=True, top_logprobs=k`: the choice's `logprobs`
  object `{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]}`
  or its `content` list;
- one dict per token, `{"logprob": x, "top_logprobs": [y, ...]}` (numbers or dicts with "logprob");
- one number per token: the sampled token's log-prob (what OpenRLHF records).

Definitions, over the response tokens of every step that came with log-probs:

- measure "kl" (the default; INTUITOR, "Learning to Reason without External Rewards", Zhao et al.
  2025): the mean over tokens of KL(U || p) = -log V - (1/V) sum_j log p_j. Samplers return only the
  top k (k >= 2) of the V vocabulary entries, so p is the top-k distribution renormalised and V = k:
  per token, -log k - (1/k) sum_j log p^_j, p^_j = p_j / sum_top-k p. 0 for a flat top k, growing
  as the distribution peaks. With k = V it is the study's quantity exactly.
- measure "logprob": exp(mean log p(sampled token)), the geometric-mean probability of the sampled
  tokens, in (0, 1]. Its log is a one-sample estimate of minus the token entropy, so it needs only
  the sampled log-probs.

Guards against certainty collapse:
`mixed_only=True` (the default) refuses a reward spec that has no verifiable (test) component of positive weight;
`min_tokens=n` (0, off, by default) scores 0 for an episode whose responses total fewer than n tokens (a length floor).

Execution majority vote (`code_gym.rewards.vote.execution_vote`) is a group reward: it compares the final patches of
the G rollouts of one task by running each in the sandbox, so the trainer calls it once per group.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from code_gym.rewards.base import Response, Score, Submission

MEASURES = ("kl", "logprob")


@dataclass(frozen=True)
class TokenLogprobs:
    """Per response token: the sampled token's log-prob (NaN when unknown) and the top-k log-probs
    (empty when the sampler returned none)."""
    sampled: tuple[float, ...]
    top: tuple[tuple[float, ...], ...]

    def __len__(self) -> int:
        return len(self.sampled)

    @classmethod
    def parse(cls, logprobs: Any) -> "TokenLogprobs":
        """From any of the forms in the module docstring; ValueError says what was wrong."""
        if isinstance(logprobs, TokenLogprobs):
            return logprobs
        if isinstance(logprobs, dict):
            if not isinstance(logprobs.get("content"), list):
                raise ValueError("a logprobs object needs a 'content' list (the OpenAI chat-completions form)")
            logprobs = logprobs["content"]
        if not isinstance(logprobs, (list, tuple)):
            raise ValueError(f"logprobs must be a list (one entry per token) or an OpenAI logprobs object, "
                             f"got {type(logprobs).__name__}")
        sampled, top = [], []
        for i, entry in enumerate(logprobs):
            if isinstance(entry, dict):
                sampled.append(_number(entry.get("logprob", math.nan), i, allow_nan=True))
                top.append(tuple(_number(t.get("logprob") if isinstance(t, dict) else t, i)
                                 for t in entry.get("top_logprobs") or ()))
            else:
                sampled.append(_number(entry, i))
                top.append(())
        return cls(tuple(sampled), tuple(top) if any(top) else ())


def _number(x: Any, i: int, allow_nan: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"logprobs token {i}: a log-prob must be a number, got {type(x).__name__}")
    if isinstance(x, int) and not -2**63 <= x < 2**63:  # float() of a larger one overflows
        raise ValueError(f"logprobs token {i}: an integer of {x.bit_length()} bits is not a log-probability (need <= 0)")
    x = float(x)
    if math.isnan(x) and allow_nan:
        return x
    if not (math.isfinite(x) and x <= 1e-6):
        raise ValueError(f"logprobs token {i}: {x} is not a finite log-probability (need <= 0)")
    return x


def sampled_response(action: Any) -> tuple[Any, Response | None, str | None]:
    """(the action to play, the step's Response, an error about its log-probs or None).

    A sampled-response dict `{"text": str, "logprobs": ...}` plays as its text; a text action is
    its own response without log-probs; tool-call dicts have no response text (None)."""
    if isinstance(action, str):
        return action, Response(action), None
    if not (isinstance(action, dict) and isinstance(action.get("text"), str) and set(action) <= {"text", "logprobs"}):
        return action, None, None
    text, logprobs = action["text"], action.get("logprobs")
    if logprobs is None:
        return text, Response(text), None
    try:
        return text, Response(text, TokenLogprobs.parse(logprobs)), None
    except ValueError as exc:
        return text, Response(text), f"log-probs ignored: {exc}"


def token_kl_from_uniform(top: tuple[float, ...]) -> float:
    """KL(U_k || p^) of one token's top-k log-probs, p^ renormalised over the k (module docstring)."""
    k = len(top)
    peak = max(top)
    log_norm = peak + math.log(sum(math.exp(t - peak) for t in top))
    return -math.log(k) - sum(t - log_norm for t in top) / k


@dataclass(frozen=True)
class SelfCertainty:
    """The `certainty` component (module docstring): options `measure` ("kl" or "logprob"),
    `min_tokens` (length floor, 0: off) and `mixed_only` (require a verifiable component)."""
    measure: str = "kl"
    min_tokens: int = 0
    mixed_only: bool = True

    def __post_init__(self):
        if self.measure not in MEASURES:
            raise ValueError(f"certainty 'measure' must be one of {MEASURES}, got {self.measure!r}")
        if self.min_tokens < 0:
            raise ValueError(f"certainty 'min_tokens' must be >= 0, got {self.min_tokens}")

    def __call__(self, sub: Submission) -> Score:
        logprobs = [r.logprobs for r in sub.responses if r.logprobs is not None]
        tokens = sum(len(lp) for lp in logprobs)
        if not tokens:
            return Score(0.0, {"error": "no sampling log-probs reached the env: step with "
                                        "{'text': response, 'logprobs': ...} (code_gym.rewards.labelfree)"})
        details = {"tokens": tokens, "measure": self.measure}
        if tokens < self.min_tokens:
            return Score(0.0, {**details, "guard": f"length floor: {tokens} response tokens < min_tokens "
                                                   f"{self.min_tokens}"})
        if self.measure == "logprob":
            sampled = [x for lp in logprobs for x in lp.sampled if not math.isnan(x)]
            if not sampled:
                return Score(0.0, {**details, "error": "no sampled-token log-probs"})
            return Score(math.exp(sum(sampled) / len(sampled)), details)
        tops = [t for lp in logprobs for t in lp.top if len(t) >= 2]
        if not tops:
            return Score(0.0, {**details, "error": "measure 'kl' needs top-k log-probs (k >= 2): request "
                                                   "top_logprobs, or use measure 'logprob'"})
        return Score(sum(token_kl_from_uniform(t) for t in tops) / len(tops), {**details, "tokens": len(tops)})
