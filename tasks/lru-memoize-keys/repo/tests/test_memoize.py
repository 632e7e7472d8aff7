from cachekit import memoize


def test_positional_calls_are_cached():
    calls = []

    @memoize(maxsize=8)
    def square(x):
        calls.append(x)
        return x * x

    assert square(4) == 16
    assert square(4) == 16
    assert square(5) == 25
    assert calls == [4, 5]
    info = square.cache_info()
    assert (info.hits, info.misses) == (1, 2)
