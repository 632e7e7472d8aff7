class CalcError(Exception):
    """Base class for all calculator errors."""


class LexError(CalcError):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at position {pos}")
        self.pos = pos


class ParseError(CalcError):
    pass
