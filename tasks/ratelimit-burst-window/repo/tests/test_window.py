from throttle import FakeClock, LimiterRegistry, SlidingWindowLog


def test_limit_within_window():
    clock = FakeClock()
    lim = SlidingWindowLog(limit=3, window=60, clock=clock)
    assert all(lim.try_acquire() for _ in range(3))
    clock.advance(30)
    assert not lim.try_acquire()
    clock.advance(31)
    assert lim.try_acquire()


def test_registry_separates_keys():
    clock = FakeClock()
    reg = LimiterRegistry(lambda: SlidingWindowLog(limit=1, window=10, clock=clock))
    assert reg.try_acquire("alice")
    assert not reg.try_acquire("alice")
    assert reg.try_acquire("bob")
    assert len(reg) == 2
