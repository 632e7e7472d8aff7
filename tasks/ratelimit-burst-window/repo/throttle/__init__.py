from .clock import Clock, FakeClock, MonotonicClock
from .bucket import TokenBucket
from .window import SlidingWindowLog
from .registry import LimiterRegistry

__all__ = ["Clock", "FakeClock", "MonotonicClock", "TokenBucket", "SlidingWindowLog", "LimiterRegistry"]
