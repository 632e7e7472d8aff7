"""A memoizing decorator backed by LRUCache."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from .keys import make_key
from .lru import LRUCache
from .stats import CacheStats

F = TypeVar("F", bound=Callable[..., Any])
_MISSING = object()


def memoize(maxsize: int = 128) -> Callable[[F], F]:
    def decorator(func: F) -> F:
        cache = LRUCache(maxsize)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(args, kwargs)
            result = cache.get(key, _MISSING)
            if result is _MISSING:
                result = func(*args, **kwargs)
                cache.put(key, result)
            return result

        def cache_info() -> CacheStats:
            s = cache.stats
            return CacheStats(s.hits, s.misses, s.evictions)

        def cache_clear() -> None:
            cache.clear()
            cache.stats.reset()

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_info = cache_info  # type: ignore[attr-defined]
        wrapper.cache_clear = cache_clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorator
