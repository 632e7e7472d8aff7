"""Python task statements: what pytest's output tells of each failing test, in one sentence, for
the statements `code_gym.grading.statement` composes (and its check that a statement does not give
the solution away, `leak`).

A sentence tells what a user would see: the failing test's assertion with the values pytest's
assertion rewriting printed (`assert 30 == 15`, `where 30 = total([10, 20], 50)`), or the exception
it hit. A statement names the module the problem is in and shows the function as a Python header
with its docstring; a test is named by its function's name."""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from code_gym.grading.builder import Function
from code_gym.grading.statement import Wording, cut, leak
from code_gym.languages.python import source as pysource

# pytest flags that make the failure report parseable: one short traceback per failing test
REPORT_FLAGS = "--tb=short"
_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_FRAME = re.compile(r"^(\S+\.py):(\d+): in (\S+)$")
_WHERE = re.compile(r"^\+\s+where (.+?) = (.+)$")


@dataclass(frozen=True)
class Symptom:
    """What one failing test showed: the test's line that failed and pytest's `E` lines."""
    test: str  # node id
    line: str  # the statement of the test that failed ("assert total([10, 20], 50) == 15")
    errors: tuple[str, ...]  # the E lines, without "E   "


def parse_failures(output: str, tests) -> dict[str, Symptom]:
    """The symptoms of `tests` (node ids) in a pytest `--tb=short` report. Only the test's own
    frame is read: frames in the project's code would show its (changed) source lines."""
    by_header = {".".join(t.split("::")[1:]): t for t in sorted(tests, reverse=True)}
    found: dict[str, Symptom] = {}
    test = None
    line, errors, frames = "", [], 0
    for raw in output.splitlines() + ["_____ end _____"]:
        header = _HEADER.match(raw.strip())
        if header or raw.startswith("=" * 5):
            if test and errors and test not in found:
                found[test] = Symptom(test, line, tuple(errors))
            test = by_header.get(header.group(1)) if header else None
            line, errors, frames = "", [], 0
            continue
        if test is None:
            continue
        if _FRAME.match(raw):
            frames += 1
        elif raw.startswith("E   ") or raw == "E":
            errors.append(raw[4:].rstrip() if len(raw) > 4 else "")
        elif raw.startswith("    ") and frames == 1 and not line:
            line = raw.strip()
    return found


def _compare_sides(line: str) -> tuple[str, str, str] | None:
    """(left source, operator, right source) of `assert LEFT OP RIGHT`."""
    try:
        node = pysource.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare) or len(node.test.ops) != 1:
        return None
    ops = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Lt: "<", ast.Gt: ">",
           ast.LtE: "<=", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not"}
    op = ops.get(type(node.test.ops[0]))
    return (ast.unparse(node.test.left), op, ast.unparse(node.test.comparators[0])) if op else None


def describe(symptom: Symptom) -> str:
    """One sentence: what the test saw."""
    errors = [e for e in symptom.errors if e.strip()]
    first = errors[0] if errors else ""
    wheres = [m.groups() for m in (_WHERE.match(e.strip()) for e in errors) if m]
    if first.startswith("Failed: DID NOT RAISE"):
        exc = first.removeprefix("Failed: DID NOT RAISE").strip().removeprefix("<class '").removesuffix("'>")
        return f"no `{exc}` is raised where one is expected (`{cut(symptom.line)}`)"
    message = ""
    if first.startswith("AssertionError: "):
        message = first.removeprefix("AssertionError: ")
        errors = errors[1:]
        first = errors[0] if errors else ""
        if message.startswith("assert "):  # pytest's own rewritten message, not the test's
            first, message = message, ""
    if first.startswith("assert "):
        sides = _compare_sides(symptom.line)
        shown = first.removeprefix("assert ")
        if sides and sides[1] == "==" and " == " in shown and shown.count(" == ") == 1:
            got, expected = shown.split(" == ")
            left = next((call for value, call in wheres if value == got), sides[0])
            try:  # a literal in the test reads best as written; a name, by the value pytest printed
                ast.literal_eval(sides[2])
                want = sides[2]
            except (ValueError, SyntaxError):
                want = expected
            text = f"`{cut(left)}` gives `{cut(got)}` instead of `{cut(want)}`"
        elif sides:
            text = f"the check `{cut(symptom.line)}` fails: `{cut(shown)}`"
            if wheres:
                text += "".join(f", with `{cut(call)}` giving `{cut(value)}`" for value, call in wheres[:2])
        else:
            text = f"the check `{cut(symptom.line)}` fails (`{cut(shown)}`)"
        return text + (f" (the test says: {cut(message)})" if message else "")
    if message:
        return f"`{cut(symptom.line)}` fails with the message {cut(message)!r}"
    if first:
        return f"`{cut(symptom.line)}` raises `{cut(first)}`" if symptom.line else f"it raises `{cut(first)}`"
    return f"`{cut(symptom.line)}` fails"


def _test_name(test: str) -> str:
    """A node id's test name, without its file and class ("test_total")."""
    return test.split("::")[-1]


def _module(path: str) -> str:
    return path[:-3].replace("/", ".").removeprefix("src.")


def _header(fn: Function) -> str:
    doc = textwrap.indent(f'"""{fn.docstring}"""', "    ") if fn.docstring else "    ..."
    return f"```python\n{fn.signature}:\n{doc}\n```"


WORDING = Wording(test_name=_test_name, describe=describe, header=_header, module=_module,
                  not_names=frozenset({"__init__"}), name_chars=r"\w", doc="docstring",
                  kept_doc="the docstring")

# what the builder calls: the statements told in this wording
pick_symptoms, write_statement, write_multi_statement = (
    WORDING.pick_symptoms, WORDING.write_statement, WORDING.write_multi_statement)
