"""Go task statements: what a run's records tell of each failing test, in one sentence, for the
statements `code_gym.grading.statement` composes (and its check that a statement does not give the
solution away, `leak`).

A Go run's records carry each failing test's output (its first 500 characters: what `t.Errorf`
and friends wrote, `=== RUN` / `--- FAIL` lines and `file_test.go:12:` prefixes around it). The
sentences come from that output as Go tests write it: a panic, testify's `Error: Not equal:
expected / actual`, a go-cmp diff `(-want +got)`, the `got X, want Y` idiom, or the test's own
words. A statement names the file the problem is in and shows the function with its doc comment;
a test is named by its id without its file (`TestParse`)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from code_gym.grading.builder import Function
from code_gym.grading.statement import Wording, cut, leak

COLLATERAL = "the test did not run"  # the reader's message for a test its binary never reached
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOISE = re.compile(r"^\s*(=== (RUN|PAUSE|CONT|NAME)\b|--- (FAIL|PASS|SKIP):|FAIL\s*$|PASS\s*$|FAIL\s+\S+\s+[\d.]+s|"
                    r"exit status \d+$|goroutine \d+ \[|Error Trace:|Test:\s)")
_LOCATION = re.compile(r"^\s*[\w.\-/]+\.go:\d+: ?")
_PANIC = re.compile(r"^panic: (.+?)(?: \[recovered\])?$", re.M)
_TESTIFY = re.compile(r"Error:\s+Not equal:\s*\n\s*expected:\s*(.+)\n\s*actual\s*:\s*(.+)")
_TESTIFY_ERROR = re.compile(r"Error:\s+(.+)")
_GOT_WANT = re.compile(r"(?:\bgot:?\s*|\s=\s)(.+?)[,;]?\s+(?:but\s+)?(?:want|wanted|expected|expect):?\s*(.+)$", re.I)
_WANT_GOT = re.compile(r"\b(?:want|wanted|expected|expect):?\s*(.+?)[,;]?\s+(?:but\s+)?got:?\s*(.+)$", re.I)


@dataclass(frozen=True)
class Symptom:
    """What one failing test showed: its id and the output its record carried."""
    test: str  # "parse_test.go::TestParse"
    message: str


def collateral(message: str) -> bool:
    """Whether a failure message says only that the test never ran: an earlier test of its binary
    panicked or exited (the reader's words), so the test shows nothing of the bug itself."""
    return message.startswith(COLLATERAL)


def parse_failures(messages: Mapping[str, str], tests: Iterable[str]) -> dict[str, Symptom]:
    """The symptoms of `tests` (test ids) from the failure messages of a run's records (test id ->
    message; a failed test without a message, or one that never ran, has no symptom)."""
    return {t: Symptom(t, _ANSI.sub("", messages[t])) for t in tests
            if (messages.get(t) or "").strip() and not collateral(messages[t])}


def _lines(message: str) -> list[str]:
    """The lines a test wrote, without go test's own (`=== RUN`, `--- FAIL`) and the location prefix."""
    out = []
    for line in message.splitlines():
        if not line.strip() or _NOISE.match(line):
            continue
        out.append(_LOCATION.sub("", line).strip())
    return out


def _diff_pairs(lines: list[str]) -> list[tuple[str, str]]:
    """(got, wanted) line pairs of a go-cmp diff `(-want +got)` (or `(-got +want)`)."""
    header = next((line for line in lines if re.search(r"\(-\s*\w+\s+\+\s*\w+\)", line)), None)
    if header is None:
        return []
    minus_wanted = re.search(r"\(-\s*want", header, re.I) is not None or "-expected" in header.lower()
    body = lines[lines.index(header) + 1:]
    minus = [line[1:].strip().rstrip(",") for line in body if line.startswith("-")]
    plus = [line[1:].strip().rstrip(",") for line in body if line.startswith("+")]
    return list(zip(plus, minus)) if minus_wanted else list(zip(minus, plus))


def describe(symptom: Symptom) -> str:
    """One sentence: what the test saw."""
    message = symptom.message.strip()
    panic = _PANIC.search(message)
    if panic:
        return f"it panics: `{cut(panic.group(1))}`"
    testify = _TESTIFY.search(message)
    if testify:
        return f"the result is `{cut(testify.group(2))}` instead of `{cut(testify.group(1))}`"
    lines = _lines(message)
    if not lines:
        return "it fails without a message"
    first = lines[0]
    pairs = _diff_pairs(lines)
    if pairs:
        shown = "; ".join(f"`{cut(a)}` where `{cut(e)}` is expected" for a, e in pairs[:2])
        return f"the result differs from the expected value: {shown}"
    for pattern, got_first in ((_GOT_WANT, True), (_WANT_GOT, False)):
        found = pattern.search(first)
        if found:
            got, wanted = found.groups() if got_first else found.groups()[::-1]
            head = first[:found.start()].strip(" :,")
            return f"the result is `{cut(got)}` instead of `{cut(wanted)}`" + (f" (the test says: {cut(head)})"
                                                                               if head else "")
    error = _TESTIFY_ERROR.search(message)
    if error and "Error Trace:" in message:
        return f"the check fails: {cut(error.group(1))}"
    return f"it fails with `{cut(first)}`" if len(lines) == 1 else f"it fails with the message {cut(' '.join(lines))!r}"


def _test_name(test: str) -> str:
    """A test id's name without its file ("TestParse")."""
    return test.split("::", 1)[-1]


def _header(fn: Function) -> str:
    """The function's doc comment and signature, its body elided, as a Go block."""
    doc = "".join(f"// {line}".rstrip() + "\n" for line in fn.docstring.splitlines()) if fn.docstring else ""
    return f"```go\n{doc}{fn.signature} {{\n\t// ...\n}}\n```"


WORDING = Wording(test_name=_test_name, describe=describe, header=_header, module=lambda path: None,
                  not_names=frozenset(), name_chars=r"\w", doc="doc comment", kept_doc="its doc comment")

# what the builder calls: the statements told in this wording
pick_symptoms, write_statement, write_multi_statement = (
    WORDING.pick_symptoms, WORDING.write_statement, WORDING.write_multi_statement)

__all__ = ["Symptom", "collateral", "describe", "leak", "parse_failures", "pick_symptoms", "write_multi_statement",
           "write_statement"]
