"""Estimators by name, so a training stack switches estimator with a string."""

from __future__ import annotations

from typing import Callable

from credit.baselines import dr_grpo, grpo, rloo
from credit.didpo import didpo
from credit.gigpo import gigpo
from credit.types import Result

_ESTIMATORS: dict[str, Callable[..., Result]] = {
    "didpo": didpo,
    "grpo": grpo,
    "dr_grpo": dr_grpo,
    "rloo": rloo,
    "gigpo": gigpo,
}
ESTIMATORS: tuple[str, ...] = tuple(_ESTIMATORS)


def get(name: str) -> Callable[..., Result]:
    """The estimator function registered as `name` (one of `ESTIMATORS`)."""
    try:
        return _ESTIMATORS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown estimator {name!r}; valid names: {', '.join(ESTIMATORS)}") from None
