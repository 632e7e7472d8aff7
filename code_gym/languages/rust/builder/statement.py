"""Rust task statements: what a run's records tell of each failing test, in one sentence, for the
statements `code_gym.grading.statement` composes (and its check that a statement does not give the
solution away, `leak`).

A failing libtest test's record carries its message: the test's captured output, whose panic line
says what went wrong. Both shapes rustc has printed are read: `thread 'NAME' panicked at 'MSG',
FILE:LINE:COL` (up to Rust 1.72, Debian's 1.63 among them) and `thread 'NAME' panicked at
FILE:LINE:COL:` followed by MSG (1.73 on). The sentence comes from MSG: `assert_eq!`'s left and
right values, `assert!`'s condition, a `todo!()` reached, or the panic message itself. The panic's
place is never told: it would point at the changed line. A test is named by its id without its
file (`tests::parses_ranges`); a statement names the file the problem is in and shows the function
with its doc comment."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from code_gym.grading.builder import Function
from code_gym.grading.statement import CLOSINGS_SEEN, Wording, cut, leak

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the panic line: old shape `panicked at 'MSG', FILE:L:C`, new shape `panicked at FILE:L:C:\nMSG`
_OLD_PANIC = re.compile(r"panicked at '(.*?)', [^\s']+:\d+:\d+$", re.S | re.M)
_NEW_PANIC = re.compile(r"panicked at [^\s']+:\d+:\d+:\n(.*)", re.S)
_TRAILER = re.compile(r"\n(stack backtrace:|note: ).*", re.S)
_EQ = re.compile(r"^assertion (?:failed: `\(left (==|!=) right\)`|`left (==|!=) right` failed)(?:: (.*?))?\n"
                 r"\s*left: `?(.*?)`?,?\n\s*right: `?(.*?)`?(?::\s*(.*))?$", re.S)
_ASSERT = re.compile(r"^assertion failed: (.*)$", re.S)
_PLACEHOLDER = ("not yet implemented", "not implemented")


@dataclass(frozen=True)
class Symptom:
    """What one failing test showed: its id and the failure message its record carried."""
    test: str  # "tests/parse.rs::parses_ranges"
    message: str


def parse_failures(messages: Mapping[str, str], tests: Iterable[str]) -> dict[str, Symptom]:
    """The symptoms of `tests` (test ids) from the failure messages of a run's records (test id ->
    message; a failed test without a message has no symptom)."""
    return {t: Symptom(t, _ANSI.sub("", messages[t])) for t in tests if (messages.get(t) or "").strip()}


def panic_message(message: str) -> str | None:
    """What a test's panic said (its place left out), or None when the output shows no panic."""
    found = _NEW_PANIC.search(message) or _OLD_PANIC.search(message)
    if found is None:
        return None
    return _TRAILER.sub("", found.group(1)).strip()


def _code(text: str) -> str:
    """`text` cut to one line as inline code (fenced with double backticks when it holds one)."""
    text = cut(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def describe(symptom: Symptom) -> str:
    """One sentence: what the test saw."""
    said = panic_message(symptom.message)
    if said is None:
        first = next((line.strip() for line in symptom.message.splitlines() if line.strip()), "")
        return f"it fails with {_code(first)}"
    equal = _EQ.match(said)
    if equal:
        operator = equal.group(1) or equal.group(2)
        left, right = equal.group(4).strip(), equal.group(5).strip()
        words = equal.group(3) or equal.group(6)
        note = f" (the test says: {cut(words)})" if words else ""
        if operator == "==":
            return f"the values compared differ: left {_code(left)}, right {_code(right)}{note}"
        return f"both sides are {_code(left)} where they should differ{note}"
    condition = _ASSERT.match(said)
    if condition:
        return f"the check {_code(condition.group(1))} fails"
    if said.startswith(_PLACEHOLDER):
        return "it reaches code that is not implemented (`todo!()`)"
    return f"it panics with {_code(said)}"


def _test_name(test: str) -> str:
    """A test id's name without its file (`tests::parses_ranges`)."""
    return test.split("::", 1)[-1]


def _header(fn: Function) -> str:
    """The function's doc comment and signature, its body elided, as a Rust block."""
    doc = "".join(f"/// {line}".rstrip() + "\n" for line in fn.docstring.splitlines()) if fn.docstring else ""
    return f"```rust\n{doc}{fn.signature} {{\n    // ...\n}}\n```"


WORDING = Wording(test_name=_test_name, describe=describe, header=_header, module=lambda path: None,
                  not_names=frozenset({"new", "fmt", "from", "default", "drop", "clone"}), name_chars=r"\w",
                  doc="doc comment", kept_doc="its doc comment",
                  closings=CLOSINGS_SEEN)  # unit tests live in the sources: a failing test may be one the agent sees

# what the builder calls: the statements told in this wording
pick_symptoms, write_statement, write_multi_statement = (
    WORDING.pick_symptoms, WORDING.write_statement, WORDING.write_multi_statement)

__all__ = ["Symptom", "describe", "leak", "panic_message", "parse_failures", "pick_symptoms", "write_multi_statement",
           "write_statement"]
