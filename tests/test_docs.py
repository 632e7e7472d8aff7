"""docs/benchmarks.md stays a results page: short, one `## section` per title a benchmark script
writes (so the next run replaces it instead of appending a copy), each naming its script, and
opening with the header `benchmarks/_report.py` starts a new page with. Reads source text only."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BENCHMARKS = ROOT / "benchmarks"
MAX_LINES = 450  # five languages: each builder a section of ~20 lines
HAND_KEPT = {"Measurements cited elsewhere"}  # sections that no script writes


def _written_titles(path: Path) -> set[str]:
    """The titles `write_section` gets in one script: a literal, a module-level constant, or an
    argparse default (`args.section` -> `--section`'s default)."""
    tree = ast.parse(path.read_text(), str(path))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    defaults = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and node.args and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("--")):
            for keyword in node.keywords:
                if keyword.arg == "default" and isinstance(keyword.value, ast.Constant):
                    defaults[node.args[0].value.lstrip("-").replace("-", "_")] = keyword.value.value
    titles = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "write_section"):
            continue
        title = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "title")
        if isinstance(title, ast.Constant) and isinstance(title.value, str):
            titles.add(title.value)
        elif isinstance(title, ast.Name) and title.id in constants:
            titles.add(constants[title.id])
        elif isinstance(title, ast.Attribute) and isinstance(title.value, ast.Name) and title.attr in defaults:
            titles.add(defaults[title.attr])
        else:
            raise AssertionError(f"{path.name}:{node.lineno}: write_section's title is not a string this test can "
                                 "read (a literal, a module constant or an argparse default); make it one")
    return titles


def _scripts_titles() -> dict[str, set[str]]:
    return {path.name: titles for path in sorted(BENCHMARKS.glob("*.py"))
            if path.name != "_report.py" and (titles := _written_titles(path))}


def _sections() -> dict[str, list[str]]:
    """Each `## title` of the page and its body, in order; a title seen twice is kept twice."""
    sections: list[tuple[str, str]] = []
    for match in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", DOC.read_text(), re.S | re.M):
        sections.append((match.group(1), match.group(2)))
    found: dict[str, list[str]] = {}
    for title, body in sections:
        found.setdefault(title, []).append(body)
    return found


def test_benchmarks_page_stays_short():
    lines = DOC.read_text().splitlines()
    assert len(lines) <= MAX_LINES, (
        f"docs/benchmarks.md has {len(lines)} lines (at most {MAX_LINES}): keep each benchmark's command, current "
        "table, date and a short paragraph of what its history taught; the rest stays in git")


def test_every_section_a_script_writes_is_there_once_and_names_its_script():
    scripts = _scripts_titles()
    assert len(scripts) >= 8, f"too few scripts found writing sections: {sorted(scripts)}"
    sections = _sections()
    for script, titles in scripts.items():
        for title in titles:
            assert title in sections, f"benchmarks/{script} writes '## {title}', which docs/benchmarks.md lacks"
            assert len(sections[title]) == 1, f"'## {title}' appears {len(sections[title])} times"
            assert f"benchmarks/{script}" in sections[title][0], f"'## {title}' does not name benchmarks/{script}"


def test_every_section_is_written_by_a_script_or_kept_by_hand():
    written = set().union(*_scripts_titles().values())
    for title, bodies in _sections().items():
        assert len(bodies) == 1, f"'## {title}' appears {len(bodies)} times"
        if title in written or title in HAND_KEPT:
            continue
        # a section written by `learning_efficiency.py --section TITLE` names that command
        assert f'--section "{title}"' in re.sub(r"\s+", " ", bodies[0]), (
            f"'## {title}' is written by no script in benchmarks/ and is not kept by hand ({sorted(HAND_KEPT)}): "
            "fold what a reader needs into another section and leave the rest in git")


def test_page_opens_with_the_header_the_scripts_write():
    tree = ast.parse((BENCHMARKS / "_report.py").read_text())
    header = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "HEADER" for t in node.targets))
    assert DOC.read_text().startswith(header.rstrip("\n") + "\n\n## "), (
        "docs/benchmarks.md should open with benchmarks/_report.py's HEADER, then its first section")
