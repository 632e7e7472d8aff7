"""Reading CSV text into row dictionaries."""
from __future__ import annotations

import csv
import io

from .errors import ReportError


def load_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text.strip() + "\n"))
    if not reader.fieldnames:
        raise ReportError("CSV data has no header row")
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if None in row:
            raise ReportError(f"line {lineno}: too many fields")
        rows.append({k: (v or "").strip() for k, v in row.items()})
    return list(reader.fieldnames), rows
