import pytest

from slotplan import Calendar, Conflict, PlanningError


def test_overlap_rejected_touching_allowed():
    cal = Calendar()
    cal.book("blue", 60, 120, "standup")
    cal.book("blue", 120, 180, "review")
    with pytest.raises(Conflict):
        cal.book("blue", 100, 130)
    assert [str(b) for b in cal.bookings("blue")] == ["standup [60, 120)", "review [120, 180)"]


def test_rooms_are_independent():
    cal = Calendar()
    cal.book("blue", 0, 60)
    cal.book("red", 0, 60)
    assert cal.rooms() == ["blue", "red"]


def test_empty_interval_rejected():
    with pytest.raises(PlanningError):
        Calendar().book("blue", 10, 10)
