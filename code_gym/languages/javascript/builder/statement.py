"""Task statements for JavaScript tasks that read like issue reports, and the check that a
statement does not give the solution away: the shape of Python's (`code_gym.languages.python.
builder.statement`), from what a JavaScript run tells.

A JavaScript run's records carry each failing test's message (its first 500 characters), not a
traceback: the statement's symptoms come from those messages as the assertion libraries write
them (node's `assert`, chai's `expected ... to ...`, jest's `Expected:` / `Received:`, an error
thrown), one sentence per failing test. It names the function to change only when every symptom
names it anyway or when the task is to write a missing body. No language model: templates filled
with facts from the messages, phrasing varied by a seed (the task id)."""
from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from code_gym.grading.gates import MIN_LEAK_CHARS
from code_gym.languages.javascript.builder.mutations import Change

MAX_VALUE_CHARS = 100  # a value longer than this is cut
MAX_SYMPTOMS = 3  # per region
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NODE_EQUAL = re.compile(r"^(.*) (!==|!=|==) (.*)$")
_CHAI = re.compile(r"^expected (.+?) to (?:strictly |deeply |loosely )*(?:equal|eql) (.+)$", re.S)
_JEST = re.compile(r"^Expected: (.*)$\n^Received: (.*)$", re.M)
_LOOSE = re.compile(r"deep-equal:\n\n(.+?)\n\nshould (?:loosely )?deep-equal\n\n(.+)$", re.S)
_HEADERS = ("Expected values to be", "expect(", "expected ", "Expected: ")
_MISSING = re.compile(r"^Missing expected (exception|rejection)(?: \((.+?)\))?", re.M)


@dataclass(frozen=True)
class Symptom:
    """What one failing test showed: its id and the failure message its record carried."""
    test: str  # "test/parse.test.js::parse > handles numbers"
    message: str


def parse_failures(messages: Mapping[str, str], tests: Iterable[str]) -> dict[str, Symptom]:
    """The symptoms of `tests` (test ids) from the failure messages of a run's records (test id ->
    message; a failed test without a message has no symptom)."""
    return {t: Symptom(t, _ANSI.sub("", messages[t])) for t in tests if (messages.get(t) or "").strip()}


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _diff_pairs(lines: list[str]) -> list[tuple[str, str]]:
    """(actual, expected) line pairs of an assertion's `+ actual - expected` diff (jest's
    `- Expected + Received` has the same signs)."""
    body = [line for line in lines if not re.match(r"^[+-] ?(actual|Expected|Received)\b", line)]
    actual = [line[1:].strip().rstrip(",") for line in body if line.startswith("+")]
    expected = [line[1:].strip().rstrip(",") for line in body if line.startswith("-")]
    return list(zip(actual, expected))


def _values(message: str) -> tuple[str, str] | None:
    """(got, expected) of an equality assertion's message, when it shows both values."""
    lines = [line for line in message.splitlines() if line.strip()]
    jest = _JEST.search(message)
    if jest:
        return jest.group(2).strip(), jest.group(1).strip()
    for pattern in (_CHAI, _LOOSE):
        found = pattern.search(message.strip())
        if found:
            return found.group(1), found.group(2)
    for line in lines[:4]:
        node = _NODE_EQUAL.match(line.strip())
        if node and node.group(2) in ("!==", "!="):
            return node.group(1), node.group(3)
    if len(lines) <= 2 and lines:
        node = _NODE_EQUAL.match(lines[-1].strip())  # assert.equal's bare "3 == 4"
        if node and node.group(2) == "==":
            return node.group(1), node.group(3)
    return None


def describe(symptom: Symptom) -> str:
    """One sentence: what the test saw."""
    message = symptom.message.strip()
    first = message.splitlines()[0].strip()
    missing = _MISSING.search(message)
    if missing:
        kind = f"`{missing.group(2)}`" if missing.group(2) else missing.group(1)
        return f"no {kind} is {'thrown' if missing.group(1) == 'exception' else 'rejected'} where one is expected"
    values = _values(message)
    if values:
        said = first != values[0] and not first.startswith(_HEADERS) and not _NODE_EQUAL.match(first)
        return f"the result is `{_cut(values[0])}` instead of `{_cut(values[1])}`" + (
            f" (the test says: {_cut(first)})" if said else "")
    pairs = _diff_pairs(message.splitlines())
    if pairs:
        shown = "; ".join(f"`{_cut(a)}` where `{_cut(e)}` is expected" for a, e in pairs[:2])
        return f"the result differs from the expected value: {shown}"
    if first.startswith("The expression evaluated to a falsy value"):
        check = next((line.strip() for line in message.splitlines()[1:] if line.strip()), "")
        return f"the check `{_cut(check)}` fails" if check else "a check fails"
    if re.match(r"^\w*Error\b", first) or not first.endswith((".", ":")):
        return f"it fails with `{_cut(first)}`"
    return f"it fails with the message {_cut(message)!r}"


def _names(change: Change) -> set[str]:
    return {part for part in change.function.qualname.split(".") if part not in ("constructor", "default")}


def _mentions(text: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![\w$]){re.escape(n)}(?![\w$])", text) for n in names)


def _test_name(test: str) -> str:
    """A test id's name without its file ("parse > handles numbers")."""
    return test.split("::", 1)[-1]


def pick_symptoms(change: Change, failing_tests, symptoms: dict[str, Symptom]) -> tuple[list[tuple[str, str]], bool]:
    """Up to MAX_SYMPTOMS (test name, sentence) pairs, and whether they name the changed function:
    sentences that do not name it are preferred; when every one does, those are used."""
    described = list(dict.fromkeys((_test_name(t), describe(symptoms[t])) for t in sorted(failing_tests)
                                   if t in symptoms))
    names = _names(change)
    silent = [d for d in described if not _mentions(d[1], names)]
    chosen = silent or described
    return chosen[:MAX_SYMPTOMS], bool(chosen) and not silent


def _first_paragraph(text: str | None) -> str | None:
    """The first paragraph as one line, without its final period (the caller punctuates)."""
    if not text or not text.strip():
        return None
    return " ".join(text.strip().split("\n\n")[0].split()).rstrip(".")


def _context(change: Change) -> str:
    fn = change.function
    module_doc, class_doc = _first_paragraph(fn.module_doc), _first_paragraph(fn.class_doc)
    sentences = [f"It lives in `{fn.path}`" + (f", described as: {module_doc}." if module_doc else ".")]
    if "." in fn.qualname and class_doc:
        sentences.append(f"It is a method of `{fn.qualname.rsplit('.', 1)[0]}`, described as: {class_doc}.")
    return " ".join(sentences)


def _header(change: Change) -> str:
    """The function's doc comment and signature, its body elided, as a JavaScript block."""
    fn = change.function
    doc = ""
    if fn.docstring:
        doc = "/**\n" + "".join(f" * {line}".rstrip() + "\n" for line in fn.docstring.splitlines()) + " */\n"
    return f"```js\n{doc}{fn.signature} {{\n  // ...\n}}\n```"


_OPENINGS = (
    "Something is wrong in `{path}`{about}.",
    "Wrong results from `{path}`{about}.",
    "A bug in `{path}`{about}: some of its behaviour is not what its callers expect.",
    "Since the last change, `{path}` misbehaves{about}.",
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
    if change.kind == "feature":
        seen = f"\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}" if chosen else ""
        return (f"`{fn.qualname}` in `{fn.path}` is not implemented: its body is missing, only the signature "
                f"and its comment are left, so its callers fail.{seen}\n\nIt should do what its comment says "
                f"and what the rest of the project expects of it:\n\n{_header(change)}\n\n{_context(change)}")
    if not chosen:  # no message to tell: the function and its failing tests by name
        names = sorted({_test_name(t) for t in failing_tests})
        shown = ", ".join(f"`{n}`" for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        return (f"`{fn.qualname}` has a bug: it does not do what its documentation and its callers expect.\n\n"
                f"{_header(change)}\n\n{_context(change)}\n\nThese tests of the project fail because of it: {shown}.")
    text = f"{rng.choice(_OPENINGS).format(path=fn.path, about=_about(change))}\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}"
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
