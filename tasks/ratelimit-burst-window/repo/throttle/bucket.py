"""Token bucket rate limiter."""
from __future__ import annotations

from .clock import Clock, MonotonicClock


class TokenBucket:
    def __init__(self, capacity: int, rate: float, clock: Clock | None = None) -> None:
        if capacity < 1 or rate <= 0:
            raise ValueError("capacity must be >= 1 and rate > 0")
        self.capacity = capacity
        self.rate = rate
        self.clock = clock or MonotonicClock()
        self._tokens = float(capacity)
        self._updated = self.clock.now()

    def _refill(self) -> None:
        now = self.clock.now()
        elapsed = now - self._updated
        if elapsed > 0:
            self._tokens = self._tokens + elapsed * self.rate
            self._updated = now

    @property
    def available(self) -> float:
        self._refill()
        return self._tokens

    def try_acquire(self, tokens: int = 1) -> bool:
        if tokens > self.capacity:
            raise ValueError("request larger than bucket capacity")
        self._refill()
        if self._tokens >= tokens:
            self._tokens -= tokens
            return True
        return False

    def wait_time(self, tokens: int = 1) -> float:
        """Seconds until ``tokens`` could be acquired (0 if now)."""
        self._refill()
        missing = tokens - self._tokens
        return max(0.0, missing / self.rate)
