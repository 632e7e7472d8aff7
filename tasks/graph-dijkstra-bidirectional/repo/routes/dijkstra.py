"""Cheapest paths on non-negative weights."""
from __future__ import annotations

import heapq
import itertools
from typing import Hashable

from .errors import NoPath
from .graph import Graph
from .paths import reconstruct


def shortest_path(graph: Graph, start: Hashable, goal: Hashable) -> tuple[float, list[Hashable]]:
    """Return ``(cost, path)`` of a cheapest path from ``start`` to ``goal``."""
    if not graph.has_node(start) or not graph.has_node(goal):
        raise NoPath(start, goal)
    counter = itertools.count()  # tie-breaker so nodes never get compared
    dist: dict[Hashable, float] = {start: 0}
    prev: dict[Hashable, Hashable] = {}
    seen = {start}
    heap = [(0, next(counter), start)]
    while heap:
        d, _, u = heapq.heappop(heap)
        if u == goal:
            break
        for v, w in graph.neighbors(u):
            if v in seen:
                continue
            seen.add(v)
            dist[v] = d + w
            prev[v] = u
            heapq.heappush(heap, (d + w, next(counter), v))
    if goal not in dist:
        raise NoPath(start, goal)
    return dist[goal], reconstruct(prev, start, goal)
