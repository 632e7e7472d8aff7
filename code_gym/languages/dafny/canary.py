"""Dafny's canary tests (`code_gym.grading.canary` says what they are for): one more file of lemmas,
named like the task's test files under a name drawn per run, verified in the same verifier process
as the graded files.

- must-fail canaries: a lemma whose postcondition is false arithmetic on values drawn per run, and
  one whose postcondition claims a property of a sequence that the body does not establish. Both
  must come out "failed"; a program that switches verification off for the whole run (an
  `{:options}` attribute, a verifier setting smuggled in) or a reader whose records were forged
  passes them too.
- must-verify canaries: lemmas that hold (arithmetic, a sequence's length). They must come out
  "passed"; a run that drops or breaks records fails them.
The lemmas sit in a module of their own (names drawn per run), so no name of the program clashes.
"""
from __future__ import annotations

import posixpath
import secrets

from code_gym.languages.base import Canaries

_WORDS = ("bounds", "order", "count", "split", "merge", "shift", "total", "range", "prefix", "window",
          "pivot", "carry", "scale", "index", "limit", "parity", "rotate", "fold", "step", "level")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _token(n: int) -> str:
    return "".join(secrets.choice(_LETTERS) for _ in range(n))


def _name(taken: set[str]) -> str:
    while True:
        name = f"{secrets.choice(_WORDS).capitalize()}{_token(5).capitalize()}"
        if name not in taken:
            taken.add(name)
            return name


def canary_path(test_files: tuple[str, ...], exists) -> str:
    """A fresh .dfy file name in the folder of the task's first test file."""
    folder = posixpath.dirname(test_files[0]) if test_files else ""
    while True:
        name = f"{secrets.choice(_WORDS)}_{_token(8)}.dfy"
        path = posixpath.join(folder, name) if folder else name
        if path not in test_files and not exists(path):
            return path


def _lemmas(taken: set[str]) -> list[tuple[str, str, str]]:
    """(name, outcome, text) of the four canaries, with values drawn for this run."""
    rng = secrets.SystemRandom()
    a, b, c = (rng.randrange(2, 999) for _ in range(3))
    wrong = a * b + c + rng.randrange(1, 50)
    n = rng.randrange(3, 12)
    names = [_name(taken) for _ in range(4)]
    return [
        (names[0], "failed", f"lemma {names[0]}(x: int)\n  requires x == {a}\n  ensures x * {b} + {c} == {wrong}\n{{\n}}\n"),
        (names[1], "failed", f"lemma {names[1]}(s: seq<int>)\n  requires |s| >= {n}\n  ensures s[0] <= s[1]\n{{\n}}\n"),
        (names[2], "passed", f"lemma {names[2]}(x: int)\n  requires x == {a}\n  ensures x * {b} + {c} == {a * b + c}\n{{\n}}\n"),
        (names[3], "passed", f"lemma {names[3]}(s: seq<int>)\n  requires |s| == {n}\n  ensures |s + s| == {2 * n}\n{{\n}}\n"),
    ]


def make(test_files: tuple[str, ...], exists) -> Canaries:
    """Canaries for one run: a new file name, module name, lemma names and values."""
    path = canary_path(test_files, exists)
    taken: set[str] = set()
    module = _name(taken)
    lemmas = _lemmas(taken)
    secrets.SystemRandom().shuffle(lemmas)
    body = "\n".join("  " + text.replace("\n", "\n  ").rstrip(" ") for _, _, text in lemmas)
    source = f"module {module} {{\n{body}}}\n"
    return Canaries(path, source, {f"{path}::{module}.{name}": outcome for name, outcome, _ in lemmas})
