"""A weighted directed graph stored as adjacency maps."""
from __future__ import annotations

from typing import Hashable, Iterator

Node = Hashable


class Graph:
    def __init__(self) -> None:
        self._adj: dict[Node, dict[Node, float]] = {}

    def add_node(self, node: Node) -> None:
        self._adj.setdefault(node, {})

    def add_edge(self, u: Node, v: Node, weight: float = 1, bidirectional: bool = False) -> None:
        if weight < 0:
            raise ValueError("edge weights must be non-negative")
        self.add_node(u)
        self.add_node(v)
        self._adj[u][v] = weight
        if bidirectional:
            self._adj[v][u] = 1

    def remove_edge(self, u: Node, v: Node) -> None:
        del self._adj[u][v]

    def weight(self, u: Node, v: Node) -> float:
        return self._adj[u][v]

    def has_node(self, node: Node) -> bool:
        return node in self._adj

    def nodes(self) -> list[Node]:
        return sorted(self._adj, key=repr)

    def neighbors(self, node: Node) -> Iterator[tuple[Node, float]]:
        """(neighbour, weight) pairs in a deterministic order."""
        for v in sorted(self._adj.get(node, {}), key=repr):
            yield v, self._adj[node][v]

    def __len__(self) -> int:
        return len(self._adj)
