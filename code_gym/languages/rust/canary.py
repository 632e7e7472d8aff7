"""Rust's canary tests (`code_gym.grading.canary` says what they are for): one more integration
test, `tests/<word>_<token>.rs` (cargo builds every file of tests/ as a test target of its own),
whose tests look like ordinary tests.

- must-fail canaries: an `assert_eq!` that is false, and a panic of `unwrap` on a parse error.
  Both must come out "failed"; a run whose results are forced to pass passes them too.
- equality canaries: a known value compared with `assert_eq!`, a joined string split back. They
  must come out "passed"; a run that drops or breaks tests fails them.

The file uses nothing but std, so the reader can build it on its own when the library does not
compile (its records then still show that the run's results are the reader's). Ids read
`tests/<file>.rs::<name>` (top-level functions: libtest names them by the bare name).
"""
from __future__ import annotations

import json
import posixpath
import secrets

from code_gym.languages.base import Canaries

_WORDS = ("parse", "merge", "round", "total", "split", "format", "empty", "large", "order", "value",
          "update", "lookup", "repeat", "nested", "default", "limit", "reset", "copy", "range", "count")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _token(n: int = 6) -> str:
    return "".join(secrets.choice(_LETTERS) for _ in range(n))


def _name(taken: set[str]) -> str:
    while True:
        name = f"{secrets.choice(_WORDS)}_{secrets.choice(_WORDS)}_{_token(4)}"
        if name not in taken:
            taken.add(name)
            return name


def canary_path(test_files: tuple[str, ...], exists) -> str:
    """A fresh integration-test file in tests/ (the crate's integration tests live there, whatever
    the task's test files are: a unit-test target root is src/lib.rs)."""
    while True:
        path = f"tests/{secrets.choice(_WORDS)}_{_token(8)}.rs"
        if path not in test_files and not exists(path):
            return path


def _bodies() -> list[tuple[str, list[str]]]:
    """(outcome, statements) of the four canaries, with values drawn for this run."""
    rng = secrets.SystemRandom()
    a, b, c = (rng.randrange(2, 999) for _ in range(3))
    word = _token(rng.randrange(6, 10))
    k, n = rng.randrange(2, 60), rng.randrange(3, 12)
    parts = [_token(rng.randrange(2, 6)) for _ in range(3)]
    return [
        ("failed", [f"let items: [i64; 3] = [{a}, {b}, {c}];", "let total: i64 = items.iter().sum();",
                    f"assert_eq!(total, {a + b + c + rng.randrange(1, 50)});"]),
        ("failed", [f"let text = {json.dumps(word)};", "let number: i64 = text.parse().unwrap();",
                    "assert!(number >= 0);"]),
        ("passed", [f"let value = {json.dumps(_token(n))}.len() * {k};", f"assert_eq!(value, {n * k});"]),
        ("passed", [f"let pieces = [{', '.join(json.dumps(p) for p in parts)}];", "let text = pieces.join(\"-\");",
                    f"assert_eq!(text, {json.dumps('-'.join(parts))});",
                    "assert_eq!(text.split('-').collect::<Vec<_>>(), pieces);"]),
    ]


def make(test_files: tuple[str, ...], exists) -> Canaries:
    """Canaries for one run: a new file name, test names and values."""
    path = canary_path(test_files, exists)
    taken: set[str] = set()
    tests = [(_name(taken), outcome, body) for outcome, body in _bodies()]
    secrets.SystemRandom().shuffle(tests)
    source = "".join(f"#[test]\nfn {name}() {{\n" + "".join(f"    {s}\n" for s in body) + "}\n\n"
                     for name, _, body in tests).rstrip("\n") + "\n"
    return Canaries(path, source, {f"{path}::{name}": outcome for name, outcome, _ in tests})
