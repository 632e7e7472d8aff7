"""The Config object and the loads() entry point."""
from __future__ import annotations

from typing import Any

from .errors import ConfigError
from .lexer import tokenize
from .values import Value, coerce

DEFAULT = "DEFAULT"
_MISSING = object()


class Config:
    def __init__(self, sections: dict[str, dict[str, Value]]) -> None:
        self._sections = sections

    def sections(self) -> list[str]:
        return list(self._sections)

    def section(self, name: str) -> dict[str, Value]:
        try:
            return dict(self._sections[name])
        except KeyError:
            raise ConfigError(f"no section {name!r}") from None

    def get(self, path: str, default: Any = _MISSING) -> Any:
        section, _, key = path.rpartition(".")
        values = self._sections.get(section or DEFAULT, {})
        if key in values:
            return values[key]
        if default is _MISSING:
            raise ConfigError(f"no value for {path!r}")
        return default


def loads(text: str) -> Config:
    sections: dict[str, dict[str, Value]] = {DEFAULT: {}}
    current = DEFAULT
    for token in tokenize(text):
        if token.kind == "section":
            current = token.name
            sections.setdefault(current, {})
            continue
        if token.name in sections[current]:
            raise ConfigError(f"duplicate key {token.name!r}", token.lineno)
        try:
            sections[current][token.name] = coerce(token.raw)
        except ConfigError as exc:
            raise ConfigError(str(exc), token.lineno) from None
    return Config(sections)
