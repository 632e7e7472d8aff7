from .errors import InvalidRange, InvalidVersion
from .version import Version
from .ranges import Range, satisfies, max_satisfying
from .bump import bump

__all__ = ["Version", "Range", "satisfies", "max_satisfying", "bump", "InvalidVersion", "InvalidRange"]
