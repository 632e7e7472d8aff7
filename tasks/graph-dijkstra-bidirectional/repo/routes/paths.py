"""Helpers shared by the search algorithms."""
from __future__ import annotations

from typing import Hashable

from .errors import NoPath


def reconstruct(prev: dict[Hashable, Hashable], start: Hashable, goal: Hashable) -> list[Hashable]:
    """Follow predecessor links back from ``goal`` to ``start``."""
    if goal != start and goal not in prev:
        raise NoPath(start, goal)
    path = [goal]
    while path[-1] != start:
        path.append(prev[path[-1]])
    path.reverse()
    return path
