"""npm-style version ranges."""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from .errors import InvalidRange, InvalidVersion
from .version import Version

_OPS: dict[str, Callable[[Version, Version], bool]] = {
    "=": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_COMPARATOR = re.compile(r"^(>=|<=|>|<|=|\^|~)?(.+)$")


@dataclass(frozen=True)
class Comparator:
    op: str
    version: Version

    def test(self, version: Version) -> bool:
        return _OPS[self.op](version, self.version)


def _parse_version(text: str) -> Version:
    try:
        return Version.parse(text)
    except InvalidVersion as exc:
        raise InvalidRange(str(exc)) from None


def _tilde(v: Version) -> list[Comparator]:
    upper = Version(v.major, v.minor + 1, 0)
    return [Comparator(">=", v), Comparator("<", upper)]


def _caret(v: Version) -> list[Comparator]:
    upper = Version(v.major + 1, 0, 0)
    return [Comparator(">=", v), Comparator("<", upper)]


def _parse_comparators(text: str) -> list[Comparator]:
    result: list[Comparator] = []
    for part in text.split():
        m = _COMPARATOR.match(part)
        if not m:
            raise InvalidRange(f"bad comparator {part!r}")
        op, ver = m.group(1) or "=", _parse_version(m.group(2))
        if op == "~":
            result.extend(_tilde(ver))
        elif op == "^":
            result.extend(_caret(ver))
        else:
            result.append(Comparator(op, ver))
    if not result:
        raise InvalidRange("empty comparator set")
    return result


class Range:
    def __init__(self, text: str) -> None:
        self.text = text
        self.alternatives = [_parse_comparators(alt) for alt in text.split("||")]

    def test(self, version: Version | str) -> bool:
        if isinstance(version, str):
            version = Version.parse(version)
        return any(all(c.test(version) for c in alt) for alt in self.alternatives)

    def __repr__(self) -> str:
        return f"Range({self.text!r})"


def satisfies(version: Version | str, range_text: str) -> bool:
    return Range(range_text).test(version)


def max_satisfying(versions: Iterable[Version | str], range_text: str) -> Version | None:
    rng = Range(range_text)
    best: Version | None = None
    for item in versions:
        v = Version.parse(item) if isinstance(item, str) else item
        if rng.test(v) and (best is None or v > best):
            best = v
    return best
