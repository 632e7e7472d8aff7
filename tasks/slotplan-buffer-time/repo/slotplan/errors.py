class PlanningError(ValueError):
    pass


class Conflict(PlanningError):
    def __init__(self, room: str, existing: object) -> None:
        super().__init__(f"room {room!r} is taken by {existing}")
        self.room = room
        self.existing = existing
