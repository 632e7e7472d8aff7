import pytest

from slotplan import Calendar, Conflict, find_slot, free_intervals


def test_buffer_after_existing_booking():
    cal = Calendar(buffer=10)
    cal.book("blue", 0, 30)
    with pytest.raises(Conflict):
        cal.book("blue", 35, 60)
    cal.book("blue", 40, 60)


def test_buffer_before_existing_booking():
    cal = Calendar(buffer=10)
    cal.book("blue", 100, 130)
    with pytest.raises(Conflict):
        cal.book("blue", 60, 95)
    cal.book("blue", 60, 90)


def test_buffer_is_per_room():
    cal = Calendar(buffer=15)
    cal.book("blue", 0, 30)
    cal.book("red", 30, 60)
    assert len(cal.bookings("red")) == 1


def test_default_calendar_has_no_buffer():
    cal = Calendar()
    cal.book("blue", 0, 30)
    cal.book("blue", 30, 60)
    assert find_slot(cal, "blue", 10, 0, 100) == 60


def test_negative_buffer_rejected():
    with pytest.raises(ValueError):
        Calendar(buffer=-1)


def test_find_slot_respects_buffer():
    cal = Calendar(buffer=10)
    cal.book("blue", 0, 30)
    cal.book("blue", 60, 90)
    assert find_slot(cal, "blue", 20, 0, 200) == 100
    assert find_slot(cal, "blue", 10, 0, 200) == 40
    assert find_slot(cal, "blue", 20, 0, 115) is None


def test_buffer_not_applied_at_search_window_edges():
    cal = Calendar(buffer=10)
    cal.book("blue", 50, 60)
    assert find_slot(cal, "blue", 40, 0, 200) == 0
    assert find_slot(cal, "blue", 30, 70, 100) == 70
    assert [(i.start, i.end) for i in free_intervals(cal, "blue", 0, 100)] == [(0, 40), (70, 100)]


def test_found_slot_can_be_booked():
    cal = Calendar(buffer=5)
    cal.book("blue", 10, 20)
    cal.book("blue", 26, 40)
    start = find_slot(cal, "blue", 3, 12, 100)
    cal.book("blue", start, start + 3)
    assert start == 45
