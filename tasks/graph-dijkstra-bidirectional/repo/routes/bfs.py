"""Unweighted searches."""
from __future__ import annotations

from collections import deque
from typing import Hashable

from .errors import NoPath
from .graph import Graph
from .paths import reconstruct


def reachable(graph: Graph, start: Hashable) -> set[Hashable]:
    seen = {start}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v, _ in graph.neighbors(u):
            if v not in seen:
                seen.add(v)
                queue.append(v)
    return seen


def fewest_hops(graph: Graph, start: Hashable, goal: Hashable) -> list[Hashable]:
    if not graph.has_node(start) or not graph.has_node(goal):
        raise NoPath(start, goal)
    prev: dict[Hashable, Hashable] = {}
    seen = {start}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        if u == goal:
            break
        for v, _ in graph.neighbors(u):
            if v not in seen:
                seen.add(v)
                prev[v] = u
                queue.append(v)
    return reconstruct(prev, start, goal)
