"""Bookings per room."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import Conflict
from .interval import Interval


@dataclass(frozen=True)
class Booking:
    room: str
    span: Interval
    label: str = ""

    def __str__(self) -> str:
        return f"{self.label or 'booking'} {self.span}"


class Calendar:
    def __init__(self) -> None:
        self._bookings: dict[str, list[Booking]] = {}

    def book(self, room: str, start: int, end: int, label: str = "") -> Booking:
        span = Interval(start, end)
        for existing in self._bookings.get(room, []):
            if existing.span.overlaps(span):
                raise Conflict(room, existing)
        booking = Booking(room, span, label)
        self._bookings.setdefault(room, []).append(booking)
        self._bookings[room].sort(key=lambda b: b.span)
        return booking

    def cancel(self, booking: Booking) -> None:
        self._bookings[booking.room].remove(booking)

    def bookings(self, room: str) -> list[Booking]:
        """Bookings of ``room`` sorted by start time."""
        return list(self._bookings.get(room, []))

    def rooms(self) -> list[str]:
        return sorted(self._bookings)
