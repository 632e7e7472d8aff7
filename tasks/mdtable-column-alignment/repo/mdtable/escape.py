"""Escaping cell text for Markdown tables."""
from __future__ import annotations


def cell_text(value: object) -> str:
    if value is None:
        return ""
    text = str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("\r\n", "\n").replace("\n", "<br>")
    return text.strip()
