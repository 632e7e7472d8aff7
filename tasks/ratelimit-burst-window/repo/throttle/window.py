"""Sliding-window-log rate limiter."""
from __future__ import annotations

from collections import deque

from .clock import Clock, MonotonicClock


class SlidingWindowLog:
    def __init__(self, limit: int, window: float, clock: Clock | None = None) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be >= 1 and window > 0")
        self.limit = limit
        self.window = window
        self.clock = clock or MonotonicClock()
        self._log: deque[float] = deque()

    def _expire(self, now: float) -> None:
        cutoff = now - self.window
        while self._log and self._log[0] < cutoff:
            self._log.popleft()

    def in_window(self) -> int:
        self._expire(self.clock.now())
        return len(self._log)

    def try_acquire(self) -> bool:
        now = self.clock.now()
        self._expire(now)
        if len(self._log) >= self.limit:
            return False
        self._log.append(now)
        return True
