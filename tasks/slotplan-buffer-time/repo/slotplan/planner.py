"""Searching for free time."""
from __future__ import annotations

from .calendar import Calendar
from .errors import PlanningError
from .interval import Interval


def free_intervals(calendar: Calendar, room: str, earliest: int, latest: int) -> list[Interval]:
    """Maximal free intervals of ``room`` inside ``[earliest, latest)``."""
    if earliest >= latest:
        return []
    free = []
    cursor = earliest
    for booking in calendar.bookings(room):
        start, end = booking.span.start, booking.span.end
        if start > cursor:
            free.append(Interval(cursor, min(start, latest)))
        cursor = max(cursor, end)
        if cursor >= latest:
            break
    if cursor < latest:
        free.append(Interval(cursor, latest))
    return [iv for iv in free if iv.start < iv.end]


def find_slot(calendar: Calendar, room: str, duration: int, earliest: int, latest: int) -> int | None:
    if duration <= 0:
        raise PlanningError("duration must be positive")
    for gap in free_intervals(calendar, room, earliest, latest):
        if gap.length >= duration:
            return gap.start
    return None
