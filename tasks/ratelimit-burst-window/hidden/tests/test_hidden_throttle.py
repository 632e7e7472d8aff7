from throttle import FakeClock, LimiterRegistry, SlidingWindowLog, TokenBucket


def test_idle_bucket_never_exceeds_capacity():
    clock = FakeClock()
    bucket = TokenBucket(capacity=5, rate=1, clock=clock)
    for _ in range(5):
        assert bucket.try_acquire()
    clock.advance(100)
    assert bucket.available == 5
    assert [bucket.try_acquire() for _ in range(6)] == [True] * 5 + [False]


def test_fresh_bucket_after_long_idle():
    clock = FakeClock()
    bucket = TokenBucket(capacity=2, rate=10, clock=clock)
    clock.advance(3600)
    assert [bucket.try_acquire() for _ in range(3)] == [True, True, False]


def test_partial_refill():
    clock = FakeClock()
    bucket = TokenBucket(capacity=5, rate=1, clock=clock)
    for _ in range(5):
        bucket.try_acquire()
    clock.advance(2)
    assert [bucket.try_acquire() for _ in range(3)] == [True, True, False]


def test_request_expires_exactly_at_window_end():
    clock = FakeClock()
    lim = SlidingWindowLog(limit=2, window=10, clock=clock)
    results = []
    for t in (0, 5, 9, 10, 14, 15):
        clock.set(t)
        results.append(lim.try_acquire())
    assert results == [True, True, False, True, False, True]


def test_in_window_count():
    clock = FakeClock()
    lim = SlidingWindowLog(limit=5, window=4, clock=clock)
    for t in (0, 1, 2):
        clock.set(t)
        lim.try_acquire()
    clock.set(4)
    assert lim.in_window() == 2
    clock.set(6)
    assert lim.in_window() == 0


def test_rejected_requests_are_not_recorded():
    clock = FakeClock()
    reg = LimiterRegistry(lambda: SlidingWindowLog(limit=1, window=10, clock=clock))
    assert reg.try_acquire("k")
    clock.set(3)
    assert not reg.try_acquire("k")
    clock.set(11)
    assert reg.try_acquire("k")
