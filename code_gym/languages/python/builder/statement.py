"""Task statements that read like issue reports, and the check that a statement does not give the
solution away.

A statement describes what a user would see: the failing tests' assertions with the values
pytest's assertion rewriting printed (`assert 30 == 15`, `where 30 = total([10, 20], 50)`), the
exceptions they hit, and the module the problem is in. It names the function to change only when
no symptom can be told without it (every failing assertion calls it directly) or when the task is
to write a missing body. No language model: templates filled with facts extracted from pytest's
output, phrasing varied by a seed (the task id)."""
from __future__ import annotations

import ast
import random
import re
import textwrap
from dataclasses import dataclass

from code_gym.grading.gates import MIN_LEAK_CHARS
from code_gym.languages.python import source as pysource
from code_gym.languages.python.builder.mutations import Change

MAX_VALUE_CHARS = 100  # a printed value longer than this is cut
MAX_SYMPTOMS = 3  # per region

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


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


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
        return f"no `{exc}` is raised where one is expected (`{_cut(symptom.line)}`)"
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
            text = f"`{_cut(left)}` gives `{_cut(got)}` instead of `{_cut(want)}`"
        elif sides:
            text = f"the check `{_cut(symptom.line)}` fails: `{_cut(shown)}`"
            if wheres:
                text += "".join(f", with `{_cut(call)}` giving `{_cut(value)}`" for value, call in wheres[:2])
        else:
            text = f"the check `{_cut(symptom.line)}` fails (`{_cut(shown)}`)"
        return text + (f" (the test says: {_cut(message)})" if message else "")
    if message:
        return f"`{_cut(symptom.line)}` fails with the message {_cut(message)!r}"
    if first:
        return f"`{_cut(symptom.line)}` raises `{_cut(first)}`" if symptom.line else f"it raises `{_cut(first)}`"
    return f"`{_cut(symptom.line)}` fails"


def _names(change: Change) -> set[str]:
    return {part for part in change.function.qualname.split(".") if part != "__init__"}


def _mentions(text: str, names: set[str]) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def pick_symptoms(change: Change, failing_tests, symptoms: dict[str, Symptom]) -> tuple[list[tuple[str, str]], bool]:
    """Up to MAX_SYMPTOMS (test name, sentence) pairs, and whether they name the changed function:
    sentences that do not name it are preferred; when every one does, those are used."""
    # one bullet per (name, sentence): a test inherited by several classes fails the same way in each
    described = list(dict.fromkeys((t.split("::")[-1], describe(symptoms[t]))
                                   for t in sorted(failing_tests) if t in symptoms))
    names = _names(change)
    silent = [d for d in described if not _mentions(d[1], names)]
    chosen = silent or described
    return chosen[:MAX_SYMPTOMS], bool(chosen) and not silent


def _module(change: Change) -> str:
    return change.function.path[:-3].replace("/", ".").removeprefix("src.")


def _first_paragraph(text: str | None) -> str | None:
    """The first paragraph as one line, without its final period (the caller punctuates)."""
    if not text or not text.strip():
        return None
    return " ".join(text.strip().split("\n\n")[0].split()).rstrip(".")


def _context(change: Change) -> str:
    fn = change.function
    module_doc, class_doc = _first_paragraph(fn.module_doc), _first_paragraph(fn.class_doc)
    sentences = [f"It lives in module `{_module(change)}` (`{fn.path}`)" + (f", described as: {module_doc}." if module_doc else ".")]
    if "." in fn.qualname and class_doc:
        sentences.append(f"It is a method of `{fn.qualname.split('.')[0]}`, described as: {class_doc}.")
    return " ".join(sentences)


def _header(change: Change) -> str:
    fn = change.function
    doc = textwrap.indent(f'"""{fn.docstring}"""', "    ") if fn.docstring else "    ..."
    return f"```python\n{fn.signature}:\n{doc}\n```"


_OPENINGS = (
    "Something is wrong in `{module}` (`{path}`){about}.",
    "Wrong results from `{module}`{about}.",
    "A bug in `{path}`{about}: some of its behaviour is not what its callers expect.",
    "Since the last change, `{module}` misbehaves{about}.",
)
_SEEN = ("What I see:", "Observed:", "Steps to reproduce are in the project's tests; what happens:",
         "The failing checks:")
_CLOSINGS = (
    "The tests named here are hidden from you; they must pass after the fix, and every other test must keep "
    "passing. The tests are right; the code is wrong.",
    "Please fix the code (not the tests): the tests named above must pass and the others must keep passing.",
    "Find the cause and fix it in the source; the tests are correct and hidden from you.",
)


def _about(change: Change) -> str:
    doc = _first_paragraph(change.function.module_doc)
    return f" ({doc[0].lower() + doc[1:]})" if doc else ""


def _bullets(chosen: list[tuple[str, str]]) -> str:
    return "\n".join(f"- in `{name}`: {sentence}" for name, sentence in chosen)


def _region(change: Change, failing_tests, symptoms: dict[str, Symptom], rng: random.Random) -> str:
    """The part of a statement about one changed region, without the closing."""
    fn = change.function
    chosen, named = pick_symptoms(change, failing_tests, symptoms)
    facts = {"module": _module(change), "path": fn.path, "about": _about(change)}
    if change.kind == "feature":
        seen = f"\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}" if chosen else ""
        return (f"`{fn.qualname}` in `{fn.path}` is not implemented: its body is missing, only the signature "
                f"and the docstring are left, so its callers fail.{seen}\n\nIt should do what its docstring says "
                f"and what the rest of the project expects of it:\n\n{_header(change)}\n\n{_context(change)}")
    if not chosen:  # no parseable symptom: the function and its failing tests by name
        names = sorted({t.split("::")[-1] for t in failing_tests})
        shown = ", ".join(f"`{n}`" for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        return (f"`{fn.qualname}` has a bug: it does not do what its documentation and its callers expect.\n\n"
                f"{_header(change)}\n\n{_context(change)}\n\nThese tests of the project fail because of it: {shown}.")
    text = f"{rng.choice(_OPENINGS).format(**facts)}\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}"
    if named:  # the symptoms name the function anyway: show its contract too
        text += f"\n\nThe documented behaviour:\n\n{_header(change)}"
    return text


def write_statement(change: Change, failing_tests, symptoms: dict[str, Symptom] | None = None,
                    seed: str = "") -> str:
    """What the agent is told about a one-region task: see the module docstring."""
    rng = random.Random(f"statement:{seed}")
    return f"{_region(change, failing_tests, symptoms or {}, rng)}\n\n{rng.choice(_CLOSINGS)}"


def write_multi_statement(parts: list[tuple[Change, list[str], dict[str, Symptom]]], seed: str = "") -> str:
    """A statement for a task with several changed regions: one numbered report per region, each
    from (its change, the tests it fails, their symptoms)."""
    rng = random.Random(f"statement:{seed}")
    intro = rng.choice((f"{len(parts)} separate problems were reported against this project.",
                        f"Several users reported problems; they look unrelated ({len(parts)} reports).",
                        f"There are {len(parts)} independent bugs to fix here."))
    reports = [f"### Report {i}\n\n{_region(change, tests, symptoms, rng)}"
               for i, (change, tests, symptoms) in enumerate(parts, 1)]
    return "\n\n".join([intro, *reports, rng.choice(_CLOSINGS)])


def _squash(text: str) -> str:
    return "".join(text.split())


def leak(statement: str, change: Change) -> str | None:
    """The reason the statement reveals the fix (a fragment of the removed or original code appears
    in it, spaces ignored, unless the signature holds it too), or None."""
    squashed, signature = _squash(statement), _squash(change.function.signature)
    for fragment in change.removed:
        code = _squash(fragment)
        if len(code) >= MIN_LEAK_CHARS and code in squashed and code not in signature:
            return f"the statement reveals the original code {fragment!r}"
    return None
