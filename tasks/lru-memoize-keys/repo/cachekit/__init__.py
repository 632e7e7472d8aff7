from .lru import LRUCache
from .memoize import memoize
from .stats import CacheStats

__all__ = ["LRUCache", "memoize", "CacheStats"]
