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
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from credit.baselines import dr_grpo, grpo, rloo
from credit.didpo import didpo
from credit.gigpo import gigpo
from credit.types import Result, Trajectory


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


def check_options(name: str, options: dict[str, Any]) -> None:
    """Raise ValueError, naming the estimator and the options it takes, when estimator `name` takes
    no option of a given name or refuses a value: for launchers, to fail before a run's first
    rollouts rather than at its first advantage step. The values are checked by calling the
    estimator on the smallest batch (two episodes of one task, no steps)."""
    fn = get(name)
    accepted = [p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = [key for key in options if key not in accepted]
    if unknown:
        raise ValueError(f"estimator {name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"its options: {', '.join(accepted)}")
    try:
        fn([Trajectory("probe", (), 1.0), Trajectory("probe", (), 0.0)], **options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"estimator {name!r}: {exc}") from None


def _preset(entry: Estimator) -> Callable[..., Result]:
    """`entry.fn` with the preset's options bound; its results carry the preset's name, and
    `inspect.signature` gives the function's (the options a call may still set)."""

    @functools.wraps(entry.fn)
    def preset(trajectories, **options):
        return dataclasses.replace(entry.fn(trajectories, **{**entry.options, **options}), estimator=entry.name)

    preset.__name__ = preset.__qualname__ = entry.name
    preset.__doc__ = f"{entry.fn.__name__} with {entry.options} bound (a call's options override them).\n\n{entry.fn.__doc__}"
    return preset
