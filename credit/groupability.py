"""Groupability score: how much a group of similar sub-diffs is worth as a diff anchor.

DiDPO (the reference implementation, verl-code `didpo/core_didpo.py`, paper Eq. 9) scores a group
by the size of its sub-diffs and the number of rollouts that share it:

  GS = phi(L) * psi(n)

with L the mean number of compared lines of its occurrences and n its group size.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from credit._tensor import like, to_numpy

FORMS = ("saturating", "log", "linear")


def _check_form(form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")


def phi(lines: Any, s0: float = 8.0, form: str = "saturating") -> Any:
    r"""Size term phi(L).

      saturating: 1 - exp(-L / s0)
      log:        min(1, log(1 + L) / log(1 + s0))
      linear:     min(1, L / s0)

    Args:
      lines: array of mean line counts L >= 0.
      s0: length scale (8 in the reference).
      form: "saturating", "log" or "linear".
    """
    _check_form(form)
    if s0 <= 0:
        raise ValueError(f"s0 must be positive, got {s0}")
    L = np.maximum(to_numpy(lines, np.float64), 0.0)
    if form == "saturating":
        out = 1.0 - np.exp(-L / s0)
    elif form == "log":
        out = np.minimum(1.0, np.log1p(L) / np.log1p(s0))
    else:
        out = np.minimum(1.0, L / s0)
    return like(out, lines)


def psi(size: Any, g0: float = 8.0, form: str = "saturating") -> Any:
    r"""Group-size term psi(n), with psi(n) = 0 for n <= 1 (a singleton has no baseline).

      saturating: 1 - exp(-(n - 1) / g0)
      log:        min(1, log(n) / log(max(2, g0)))
      linear:     min(1, (n - 1) / (g0 - 1))

    Args:
      size: array of group sizes n.
      g0: group-size scale (8 in the reference).
      form: "saturating", "log" or "linear".
    """
    _check_form(form)
    if g0 <= 0 or (form == "linear" and g0 <= 1):
        raise ValueError(f"g0 must be positive (> 1 for the linear form), got {g0}")
    n = to_numpy(size, np.float64)
    if form == "saturating":
        out = 1.0 - np.exp(-(n - 1.0) / g0)
    elif form == "log":
        out = np.minimum(1.0, np.log(np.maximum(n, 1.0)) / np.log(max(2.0, g0)))
    else:
        out = np.minimum(1.0, (n - 1.0) / (g0 - 1.0))
    return like(np.where(n <= 1.0, 0.0, out), size)


def check_options(s0: float, g0: float, phi_form: str, psi_form: str) -> None:
    """Raise on invalid score parameters (what `phi` and `psi` would reject)."""
    phi(np.ones(1), s0, phi_form)
    psi(np.full(1, 2.0), g0, psi_form)


def groupability_score(
    lines: Any,
    size: Any,
    *,
    s0: float = 8.0,
    g0: float = 8.0,
    phi_form: str = "saturating",
    psi_form: str = "saturating",
) -> Any:
    r"""GS = phi(L) * psi(n); the defaults are the reference's (saturating, s0 = g0 = 8).

    Args:
      lines: (K,) mean compared lines L of each group.
      size: (K,) group size n of each group (same shape as `lines`).
      s0, g0, phi_form, psi_form: see `phi` and `psi`.

    Returns:
      (K,) scores in [0, 1]; 0 for singletons.
    """
    L = to_numpy(lines, np.float64)
    n = to_numpy(size, np.float64)
    if L.shape != n.shape:
        raise ValueError(f"lines {L.shape} and size {n.shape} must have the same shape")
    return like(phi(L, s0, phi_form) * psi(n, g0, psi_form), lines)


def score_one(lines: float, size: float, *, s0: float = 8.0, g0: float = 8.0, phi_form: str = "saturating",
              psi_form: str = "saturating") -> float:
    """`groupability_score` of one group, in Python floats (the greedy anchor pass rescored a cut
    group per call; the numpy version costs 40 us a call). Same formulas; math's exp and log
    may differ from numpy's in the last bit."""
    L = max(lines, 0.0)
    if phi_form == "saturating":
        p = 1.0 - math.exp(-L / s0)
    elif phi_form == "log":
        p = min(1.0, math.log1p(L) / math.log1p(s0))
    else:
        p = min(1.0, L / s0)
    if size <= 1.0:
        return 0.0
    if psi_form == "saturating":
        q = 1.0 - math.exp(-(size - 1.0) / g0)
    elif psi_form == "log":
        q = min(1.0, math.log(max(size, 1.0)) / math.log(max(2.0, g0)))
    else:
        q = min(1.0, (size - 1.0) / (g0 - 1.0))
    return p * q
