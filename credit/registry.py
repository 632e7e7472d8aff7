"""Estimators by name, so a training stack switches estimator with a string.

The one list of names: `ESTIMATORS` (every name `get` accepts). DiDPO's names are its presets
(`PRESETS`, each a `credit.DiDPOConfig`, defined beside the options in `credit.config`):

  didpo            the paper's rules (the reference implementation's)
  didpo-contrast   the effect of making an edit instead of the spread among those who made it
  didpo-split      the rule measured best here: baseline="split", cover="call"

`STEP_LEVEL` names the estimators that read each step of a trajectory (its diff, observation,
step reward): trainers that compute outcome-only advantages themselves (GRPO, RLOO) need a step
record from the rollout only for these.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

from credit.baselines import dr_grpo, grpo, rloo
from credit.config import OPTIONS, PRESETS, DiDPOConfig, preset
from credit.didpo import didpo
from credit.gigpo import gigpo
from credit.types import Result, Trajectory

__all__ = ["ESTIMATORS", "PRESETS", "STEP_LEVEL", "Estimator", "check_options", "get", "preset"]


@dataclass(frozen=True)
class Estimator:
    name: str
    fn: Callable[..., Result]
    config: Optional[DiDPOConfig] = None  # a DiDPO preset's options
    step_level: bool = False  # reads the steps, not only the episode's outcome


_REGISTRY: dict[str, Estimator] = {e.name: e for e in (
    *(Estimator(name, didpo, config, step_level=True) for name, config in PRESETS.items()),
    Estimator("grpo", grpo),
    Estimator("dr_grpo", dr_grpo),
    Estimator("rloo", rloo),
    Estimator("gigpo", gigpo, step_level=True),
)}
ESTIMATORS: tuple[str, ...] = tuple(_REGISTRY)
STEP_LEVEL: tuple[str, ...] = tuple(name for name, e in _REGISTRY.items() if e.step_level)


def get(name: str) -> Callable[..., Result]:
    """The estimator function registered as `name` (one of `ESTIMATORS`); a DiDPO preset's takes
    keyword options that override the preset's (any field of `credit.DiDPOConfig`)."""
    try:
        entry = _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown estimator {name!r}; valid names: {', '.join(ESTIMATORS)}") from None
    return entry.fn if entry.config is None else _preset(entry.name, entry.config)


def check_options(name: str, options: dict[str, Any]) -> None:
    """Raise ValueError, naming the estimator and the options it takes, when estimator `name` takes
    no option of a given name or refuses a value: for launchers, to fail before a run's first
    rollouts rather than at its first advantage step. The values are checked by calling the
    estimator on the smallest batch (two episodes of one task, no steps)."""
    fn = get(name)
    accepted = OPTIONS if _REGISTRY[name].config is not None else [
        p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = [key for key in options if key not in accepted]
    if unknown:
        raise ValueError(f"estimator {name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"its options: {', '.join(accepted)}")
    try:
        fn([Trajectory("probe", (), 1.0), Trajectory("probe", (), 0.0)], **options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"estimator {name!r}: {exc}") from None


def _preset(name: str, config: DiDPOConfig) -> Callable[..., Result]:
    """`didpo` with preset `name`'s config; a call's keyword options override its fields, and its
    results carry the preset's name."""

    def estimator(trajectories, **overrides):
        return dataclasses.replace(didpo(trajectories, config=config, **overrides), estimator=name)

    estimator.__name__ = estimator.__qualname__ = name
    estimator.__doc__ = f"credit.didpo(trajectories, config={name!r}, **overrides): the preset, options overridden."
    return estimator
