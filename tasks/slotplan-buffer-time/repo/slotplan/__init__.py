from .errors import Conflict, PlanningError
from .interval import Interval
from .calendar import Booking, Calendar
from .planner import find_slot, free_intervals

__all__ = ["Interval", "Booking", "Calendar", "find_slot", "free_intervals", "Conflict", "PlanningError"]
