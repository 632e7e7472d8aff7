from slotplan import Calendar, find_slot, free_intervals


def test_find_slot():
    cal = Calendar()
    cal.book("blue", 60, 120)
    cal.book("blue", 120, 180)
    assert find_slot(cal, "blue", 30, 0, 240) == 0
    assert find_slot(cal, "blue", 90, 30, 300) == 180
    assert find_slot(cal, "blue", 90, 30, 250) is None


def test_free_intervals():
    cal = Calendar()
    cal.book("blue", 10, 20)
    cal.book("blue", 40, 50)
    assert [(i.start, i.end) for i in free_intervals(cal, "blue", 0, 60)] == [(0, 10), (20, 40), (50, 60)]
