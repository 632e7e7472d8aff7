"""Putting it together."""
from __future__ import annotations

from .aggregate import group_rows
from .errors import ReportError
from .loader import load_rows
from .render import render_table
from .spec import parse_spec


def build_report(csv_text: str, spec_text: str) -> str:
    spec = parse_spec(spec_text)
    columns, rows = load_rows(csv_text)
    for name in spec.group_by + tuple(m.column for m in spec.metrics):
        if name not in columns:
            raise ReportError(f"unknown column {name!r}")
    table = []
    for key, members in group_rows(rows, list(spec.group_by)).items():
        line: list[object] = list(key)
        for metric in spec.metrics:
            cells = [r[metric.column] for r in members if r[metric.column] != ""]
            line.append(metric.compute(cells))
        table.append(line)
    headers = list(spec.group_by) + [m.label for m in spec.metrics]
    return render_table(headers, table)
