class NoPath(LookupError):
    def __init__(self, start, goal) -> None:
        super().__init__(f"no path from {start!r} to {goal!r}")
        self.start = start
        self.goal = goal
