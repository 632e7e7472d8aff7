"""pytest's junit XML: the runner's own report of a graded run, read by node id and checked against
the streamed records (`code_gym.grading.records.check`)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path


def _node_id(case: ET.Element) -> str:
    """pytest's node id ("tests/test_x.py::TestC::test_y[1]") from a junit testcase (xunit1 has `file`)."""
    name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
    if not file:
        return f"{classname}::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    inner = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
    return "::".join([file] + ([*inner.split(".")] if inner else []) + [name])


def _junit_address(node_id: str) -> tuple[str, str]:
    """(classname, name) that pytest's junit XML gives the test `node_id` (its mangle_test_address)."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".").removesuffix(".py")
    return ".".join(names[:-1]), names[-1] + bracket + params


def parse_junit(path: Path, expected: tuple[str, ...] | None = None) -> dict[str, str]:
    """Per-test outcomes by pytest node id from a junit XML file (empty when missing or unreadable).
    With `expected` node ids, a testcase is matched by its (classname, name), which pytest derives
    from the node id; its `file` attribute names where the test function's code lives, which need
    not be the test file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    by_address = {_junit_address(t): t for t in expected or ()}
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = by_address.get((case.get("classname", ""), case.get("name", ""))) or _node_id(case)
        tags = {child.tag for child in case}
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        # a test reported twice (e.g. failing teardown) keeps its worst outcome
        if outcomes.get(name, "passed") == "passed":
            outcomes[name] = outcome
    return outcomes
