import pytest

from routes import Graph, NoPath, fewest_hops, shortest_path


def test_cheaper_longer_route_wins():
    g = Graph()
    g.add_edge("A", "B", 10)
    g.add_edge("A", "C", 1)
    g.add_edge("C", "B", 1)
    assert shortest_path(g, "A", "B") == (2, ["A", "C", "B"])


def test_relaxation_through_several_hops():
    g = Graph()
    g.add_edge("s", "t", 9)
    g.add_edge("s", "a", 1)
    g.add_edge("a", "b", 1)
    g.add_edge("b", "c", 1)
    g.add_edge("c", "t", 1)
    g.add_edge("a", "t", 7)
    assert shortest_path(g, "s", "t") == (4, ["s", "a", "b", "c", "t"])


def test_bidirectional_edge_keeps_weight_both_ways():
    g = Graph()
    g.add_edge("A", "B", 5, bidirectional=True)
    assert g.weight("B", "A") == 5
    assert shortest_path(g, "B", "A") == (5, ["B", "A"])


def test_undirected_road_network():
    g = Graph()
    for u, v, w in [("x", "y", 7), ("x", "z", 2), ("z", "w", 2), ("w", "y", 2)]:
        g.add_edge(u, v, w, bidirectional=True)
    assert shortest_path(g, "y", "x") == (6, ["y", "w", "z", "x"])


def test_unreachable_goal():
    g = Graph()
    g.add_edge("a", "b", 1)
    g.add_node("c")
    with pytest.raises(NoPath):
        shortest_path(g, "a", "c")


def test_hops_ignore_weights():
    g = Graph()
    g.add_edge("a", "b", 50, bidirectional=True)
    g.add_edge("a", "c", 1)
    g.add_edge("c", "b", 1)
    assert fewest_hops(g, "b", "a") == ["b", "a"]
