"""Parsing report specifications such as ``"region; units:sum"``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import aggregate
from .errors import SpecError

FUNCTIONS: dict[str, Callable[[list[str]], object]] = {
    "sum": aggregate.total,
    "count": aggregate.count,
    "min": aggregate.minimum,
    "max": aggregate.maximum,
}


@dataclass(frozen=True)
class Metric:
    column: str
    function: str

    @property
    def label(self) -> str:
        return f"{self.function}({self.column})"

    def compute(self, cells: list[str]) -> object:
        return FUNCTIONS[self.function](cells)


@dataclass(frozen=True)
class ReportSpec:
    group_by: tuple[str, ...]
    metrics: tuple[Metric, ...]


def parse_spec(text: str) -> ReportSpec:
    if ";" not in text:
        raise SpecError("spec must look like 'group columns; metrics'")
    group_part, metric_part = text.split(";", 1)
    group_by = tuple(c.strip() for c in group_part.split(",") if c.strip())
    metrics = []
    for item in metric_part.split(","):
        item = item.strip()
        if not item:
            continue
        column, sep, function = item.partition(":")
        column, function = column.strip(), function.strip().lower()
        if not sep or not column:
            raise SpecError(f"metric must look like 'column:function', got {item!r}")
        if function not in FUNCTIONS:
            raise SpecError(f"unknown function {function!r}; expected one of {', '.join(FUNCTIONS)}")
        metrics.append(Metric(column, function))
    if not metrics:
        raise SpecError("at least one metric is required")
    return ReportSpec(group_by, tuple(metrics))
