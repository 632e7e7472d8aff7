"""Estimators by name, so a training stack switches estimator with a string.

The one list of names: `ESTIMATORS` (every name `get` accepts). A preset is a registered
estimator with options bound ("didpo-contrast" is DiDPO with the contrast baseline). `STEP_LEVEL`
names the estimators that read each step of a trajectory (its diff, observation, step reward):
trainers that compute outcome-only advantages themselves (GRPO, RLOO) need a step record from
the rollout only for these.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from credit.baselines import dr_grpo, grpo, rloo
from credit.didpo import didpo
from credit.gigpo import gigpo
from credit.types import Result


@dataclass(frozen=True)
class Estimator:
    name: str
    fn: Callable[..., Result]
    options: dict[str, Any] = field(default_factory=dict)  # bound keyword options (a preset)
    step_level: bool = False  # reads the steps, not only the episode's outcome


_REGISTRY: dict[str, Estimator] = {e.name: e for e in (
    Estimator("didpo", didpo, step_level=True),
    Estimator("grpo", grpo),
    Estimator("dr_grpo", dr_grpo),
    Estimator("rloo", rloo),
    Estimator("gigpo", gigpo, step_level=True),
    Estimator("didpo-contrast", didpo, {"baseline": "contrast"}, step_level=True),
)}
ESTIMATORS: tuple[str, ...] = tuple(_REGISTRY)
STEP_LEVEL: tuple[str, ...] = tuple(name for name, e in _REGISTRY.items() if e.step_level)


def get(name: str) -> Callable[..., Result]:
    """The estimator function registered as `name` (one of `ESTIMATORS`), a preset's options bound;
    keyword options given at the call override a preset's."""
    try:
        entry = _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown estimator {name!r}; valid names: {', '.join(ESTIMATORS)}") from None
    return _preset(entry) if entry.options else entry.fn


def _preset(entry: Estimator) -> Callable[..., Result]:
    """`entry.fn` with the preset's options bound; its results carry the preset's name, and
    `inspect.signature` gives the function's (the options a call may still set)."""

    @functools.wraps(entry.fn)
    def preset(trajectories, **options):
        return dataclasses.replace(entry.fn(trajectories, **{**entry.options, **options}), estimator=entry.name)

    preset.__name__ = preset.__qualname__ = entry.name
    preset.__doc__ = f"{entry.fn.__name__} with {entry.options} bound (a call's options override them).\n\n{entry.fn.__doc__}"
    return preset
