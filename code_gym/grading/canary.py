"""Canary tests: tamper evidence in every graded run.

Each graded run gets one more test file, laid in the grading copy only (never in the agent's
workspace), in a test folder the task already uses, under a name drawn per run from the system's
random source. Its tests look like ordinary tests and have names drawn the same way:

- must-fail canaries: an assertion that is false, and a plain exception raised in the test body.
  Both must come out "failed"; a run whose reports are forced to "passed" (a patched
  `TestReport`, a `pytest_runtest_makereport` wrapper, a no-op `runtest`, rewritten assertions)
  passes them too.
- equality canaries: a known value compared with `==`, its exact type checked with `type(x) is T`
  and `x != object()`: a value of the wrong type or an always-equal object cannot pass them. They
  must come out "passed"; a run that drops or breaks tests fails them.

After the run `check` compares the canaries' outcomes in the per-test records with what they must
be, and the records with pytest's exit code: a must-fail canary makes exit code 0 impossible, and
exit code 1 needs a failing record. Any mismatch (or a canary missing from the records) voids the
run with a finding of rule "canary". The canaries never count as graded tests.
"""
from __future__ import annotations

import posixpath
import secrets
from dataclasses import dataclass, field

from code_gym.grading.audit import Finding

RULE = "canary"
_WORDS = ("parse", "merge", "round", "total", "split", "format", "empty", "large", "order", "value",
          "update", "lookup", "repeat", "nested", "default", "limit", "reset", "copy", "range", "count")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Canaries:
    path: str  # the canary file, relative to the repository root
    source: str
    expected: dict[str, str] = field(default_factory=dict)  # node id -> "passed" | "failed"

    def is_canary(self, node_id: str) -> bool:
        return node_id == self.path or node_id.startswith(self.path + "::")


def _token(n: int = 6) -> str:
    return "".join(secrets.choice(_LETTERS) for _ in range(n))


def _name(taken: set[str]) -> str:
    while True:
        name = f"test_{secrets.choice(_WORDS)}_{secrets.choice(_WORDS)}_{_token(4)}"
        if name not in taken:
            taken.add(name)
            return name


def canary_path(test_files: tuple[str, ...], exists) -> str:
    """A fresh test file name in the folder of the task's first test file, named like it
    (`test_*.py` or `*_test.py`); `exists(path)` tells whether a path is already taken."""
    first = test_files[0] if test_files else "tests/test_x.py"
    folder, base = posixpath.split(first)
    while True:
        stem = f"{secrets.choice(_WORDS)}_{_token(8)}"
        name = f"{stem}_test.py" if base.endswith("_test.py") and not base.startswith("test_") else f"test_{stem}.py"
        path = posixpath.join(folder, name) if folder else name
        if path not in test_files and not exists(path):
            return path


def make(test_files: tuple[str, ...], exists) -> Canaries:
    """Canaries for one run: a new file name and test names, fresh values."""
    path = canary_path(test_files, exists)
    rng = secrets.SystemRandom()
    taken: set[str] = set()
    tests: list[tuple[str, str, str]] = []  # (name, outcome, body)

    a, b, c = (rng.randrange(2, 999) for _ in range(3))
    tests.append((_name(taken), "failed",
                  f"    items = [{a}, {b}, {c}]\n    total = sum(items)\n    assert total == {a + b + c + rng.randrange(1, 50)}\n"))
    word = _token(rng.randrange(5, 9))
    tests.append((_name(taken), "failed",
                  f"    text = {word!r}\n    number = int(text)\n    assert number >= 0\n"))
    k, n = rng.randrange(2, 60), rng.randrange(3, 12)
    word2 = _token(n)
    tests.append((_name(taken), "passed",
                  f"    value = len({word2!r}) * {k}\n    assert value == {n * k}\n    assert type(value) is int\n"
                  f"    assert value != object()\n    assert not (value == object())\n"))
    parts = [_token(rng.randrange(2, 6)) for _ in range(3)]
    joined = "-".join(parts)
    tests.append((_name(taken), "passed",
                  f"    pieces = {parts!r}\n    text = '-'.join(pieces)\n    assert text == {joined!r}\n"
                  f"    assert type(text) is str\n    assert text != object()\n    assert text.split('-') == pieces\n"))
    rng.shuffle(tests)
    source = "".join(f"\n\ndef {name}():\n{body}" for name, _, body in tests).lstrip("\n") + ""
    return Canaries(path, source, {f"{path}::{name}": outcome for name, outcome, _ in tests})


def check(canaries: Canaries, records: dict[str, str], exit_code: int | None) -> list[Finding]:
    """Findings of a finished run (pytest exit code 0 or 1) whose canaries or exit code do not match
    its per-test records: `records` are every junit outcome by node id, canaries included."""
    if exit_code not in (0, 1):
        return []  # the run itself failed (crash, usage error, timeout): it scores nothing already
    findings = []
    for node_id, want in canaries.expected.items():
        got = records.get(node_id)
        if got is None:
            findings.append(Finding(canaries.path, 0, RULE, f"a canary test is missing from the results "
                                                            f"(must come out {want})"))
        elif got != want:
            findings.append(Finding(canaries.path, 0, RULE, f"a canary test that must come out {want} came out {got}"))
    failing = [t for t, outcome in records.items() if outcome in ("failed", "error")]
    if exit_code == 0:
        findings.append(Finding(canaries.path, 0, RULE, "pytest exited 0 although a canary test must fail"))
    elif not failing:
        findings.append(Finding(canaries.path, 0, RULE, "pytest exited 1 but no test is recorded as failing"))
    return findings
