import pytest

from routes import Graph, NoPath, fewest_hops, reachable, shortest_path


def line_graph():
    g = Graph()
    g.add_edge("a", "b", 2)
    g.add_edge("b", "c", 3)
    g.add_edge("c", "d", 1)
    return g


def test_shortest_path_on_a_line():
    assert shortest_path(line_graph(), "a", "d") == (6, ["a", "b", "c", "d"])


def test_start_is_goal():
    assert shortest_path(line_graph(), "b", "b") == (0, ["b"])


def test_directed_edges_are_one_way():
    with pytest.raises(NoPath):
        shortest_path(line_graph(), "d", "a")


def test_fewest_hops_and_reachable():
    g = line_graph()
    g.add_edge("a", "d", 100)
    assert fewest_hops(g, "a", "d") == ["a", "d"]
    assert reachable(g, "b") == {"b", "c", "d"}
