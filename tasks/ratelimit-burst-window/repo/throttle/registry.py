"""One limiter per key."""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

L = TypeVar("L")


class LimiterRegistry(Generic[L]):
    def __init__(self, factory: Callable[[], L]) -> None:
        self._factory = factory
        self._limiters: dict[Hashable, L] = {}

    def get(self, key: Hashable) -> L:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = self._factory()
        return limiter

    def try_acquire(self, key: Hashable) -> bool:
        return self.get(key).try_acquire()  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self._limiters)
