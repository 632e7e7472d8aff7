from cachekit import LRUCache, memoize


def test_get_marks_key_as_recently_used():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert "a" in cache
    assert "b" not in cache
    assert cache.keys() == ["a", "c"]


def test_missed_get_does_not_change_order():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("nope")
    assert cache.keys() == ["a", "b"]


def test_keyword_arguments_are_part_of_the_key():
    @memoize()
    def area(width, height=1, *, scale=1):
        return width * height * scale

    assert area(2, scale=1) == 2
    assert area(2, scale=3) == 6
    assert area(2, height=5) == 10
    assert area(2, height=5, scale=2) == 20


def test_keyword_order_does_not_matter():
    calls = []

    @memoize()
    def f(a, *, x=0, y=0):
        calls.append((a, x, y))
        return a + x * 10 + y * 100

    assert f(1, x=2, y=3) == 321
    assert f(1, y=3, x=2) == 321
    assert len(calls) == 1


def test_memoized_hot_key_survives_eviction():
    calls = []

    @memoize(maxsize=2)
    def ident(x):
        calls.append(x)
        return x

    ident(1)
    ident(2)
    ident(1)
    ident(3)
    ident(1)
    assert calls == [1, 2, 3]
