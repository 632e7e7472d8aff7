class UnitError(ValueError):
    pass


class UnknownUnit(UnitError):
    def __init__(self, symbol: str) -> None:
        super().__init__(f"unknown unit {symbol!r}")
        self.symbol = symbol


class IncompatibleUnits(UnitError):
    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"cannot convert {a!r} to {b!r}")
