"""The Version type and its ordering."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .errors import InvalidVersion

_NUM = r"0|[1-9]\d*"
_IDENT = r"[0-9A-Za-z-]+"
_PATTERN = re.compile(
    rf"^v?(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    rf"(?:\+(?P<build>{_IDENT}(?:\.{_IDENT})*))?$"
)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Version":
        m = _PATTERN.match(text.strip())
        if not m:
            raise InvalidVersion(f"invalid version: {text!r}")
        pre = tuple(m["pre"].split(".")) if m["pre"] else ()
        for ident in pre:
            if ident.isdigit() and len(ident) > 1 and ident.startswith("0"):
                raise InvalidVersion(f"leading zero in pre-release: {text!r}")
        build = tuple(m["build"].split(".")) if m["build"] else ()
        return cls(int(m["major"]), int(m["minor"]), int(m["patch"]), pre, build)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def release(self) -> "Version":
        """The same version without pre-release and build parts."""
        return Version(self.major, self.minor, self.patch)

    def _key(self) -> tuple:
        return (self.major, self.minor, self.patch, self.prerelease)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: "Version") -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text
