from throttle import FakeClock, TokenBucket


def test_starts_full_and_empties():
    clock = FakeClock()
    bucket = TokenBucket(capacity=3, rate=1, clock=clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_refills_over_time():
    clock = FakeClock()
    bucket = TokenBucket(capacity=4, rate=2, clock=clock)
    for _ in range(4):
        assert bucket.try_acquire()
    clock.advance(0.5)
    assert bucket.try_acquire()
    assert not bucket.try_acquire()
    assert bucket.wait_time() == 0.5
