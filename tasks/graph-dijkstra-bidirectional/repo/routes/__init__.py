from .errors import NoPath
from .graph import Graph
from .bfs import fewest_hops, reachable
from .dijkstra import shortest_path

__all__ = ["Graph", "NoPath", "fewest_hops", "reachable", "shortest_path"]
