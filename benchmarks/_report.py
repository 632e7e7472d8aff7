"""Write one `## section` of docs/benchmarks.md, leaving the others as they are."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEach section is written by the script it names; numbers are from the project's 2-core machine.\n"


def write_section(title: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section `title` of `doc` (docs/benchmarks.md by default)."""
    text = doc.read_text() if doc.exists() else HEADER
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text)
    else:
        text = text.rstrip() + "\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text.rstrip() + "\n")
