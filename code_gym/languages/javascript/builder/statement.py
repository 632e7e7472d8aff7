"""JavaScript task statements: what a run's records tell of each failing test, in one sentence, for
the statements `code_gym.grading.statement` composes (and its check that a statement does not give
the solution away, `leak`).

A JavaScript run's records carry each failing test's message (its first 500 characters), not a
traceback: the sentences come from those messages as the assertion libraries write them (node's
`assert`, chai's `expected ... to ...`, jest's `Expected:` / `Received:`, an error thrown). A
statement names the file the problem is in and shows the function with its doc comment; a test is
named by its id without its file."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from code_gym.grading.builder import Function
from code_gym.grading.statement import Wording, cut, leak

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
        return f"the result is `{cut(values[0])}` instead of `{cut(values[1])}`" + (
            f" (the test says: {cut(first)})" if said else "")
    pairs = _diff_pairs(message.splitlines())
    if pairs:
        shown = "; ".join(f"`{cut(a)}` where `{cut(e)}` is expected" for a, e in pairs[:2])
        return f"the result differs from the expected value: {shown}"
    if first.startswith("The expression evaluated to a falsy value"):
        check = next((line.strip() for line in message.splitlines()[1:] if line.strip()), "")
        return f"the check `{cut(check)}` fails" if check else "a check fails"
    if re.match(r"^\w*Error\b", first) or not first.endswith((".", ":")):
        return f"it fails with `{cut(first)}`"
    return f"it fails with the message {cut(message)!r}"


def _test_name(test: str) -> str:
    """A test id's name without its file ("parse > handles numbers")."""
    return test.split("::", 1)[-1]


def _header(fn: Function) -> str:
    """The function's doc comment and signature, its body elided, as a JavaScript block."""
    doc = ""
    if fn.docstring:
        doc = "/**\n" + "".join(f" * {line}".rstrip() + "\n" for line in fn.docstring.splitlines()) + " */\n"
    return f"```js\n{doc}{fn.signature} {{\n  // ...\n}}\n```"


WORDING = Wording(test_name=_test_name, describe=describe, header=_header, module=lambda path: None,
                  not_names=frozenset({"constructor", "default"}), name_chars=r"[\w$]", doc="comment",
                  kept_doc="its comment")

# what the builder calls: the statements told in this wording
pick_symptoms, write_statement, write_multi_statement = (
    WORDING.pick_symptoms, WORDING.write_statement, WORDING.write_multi_statement)
