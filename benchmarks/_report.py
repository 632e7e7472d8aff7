"""Write one `## section` of docs/benchmarks.md, leaving the others as they are."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n"
    "\n"
    "The latest result of each benchmark in `benchmarks/`: the command, the table, when it was\n"
    "measured, and what the benchmark's history taught. Predictions, abandoned runs and earlier tables\n"
    "stay in git: `git show 461fca0:docs/benchmarks.md` is the full journal up to 2026-12-02.\n"
    "\n"
    "Machine, unless a section says otherwise: the project's 2-core virtual machine with 24 GiB of\n"
    "memory and no GPU, Python 3.11 (3.11.7), usually shared with other jobs (the load average is given\n"
    "where it mattered). Each `## section` is written by the script it names, through\n"
    "`benchmarks/_report.write_section`, which replaces that section and leaves the others; the last\n"
    "section, \"Measurements cited elsewhere\", is kept by hand.\n"
)


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
