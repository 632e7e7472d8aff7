"""Go's canary tests (`code_gym.grading.canary` says what they are for): one more test file in the
folder of the task's first test file, tested in the same `go test` run and the same test binary
as that folder's tests.

A Go file must name its folder's package, which the grader's canary call does not know (it sees
paths, not sources), so the file planted is `_code_gym_canary_<random>_test.go` with the clause
`package _`: go ignores files whose name starts with "_", and the reader writes the real
`code_gym_canary_<random>_test.go` beside it, with the package clause of the folder's test files,
removes it after the run, and files its records under the planted path (reader/gotest.py).

- must-fail canaries: a false comparison of values drawn per run (t.Errorf), and a subtest whose
  false comparison fails its top-level test. Both must come out "failed"; a run whose results are
  forced to pass (a forged test2json line, a patched testing package, records written by something
  other than the reader) passes them too.
- must-pass canaries: a true comparison, and one inside a subtest. They must come out "passed"; a
  run that drops or breaks records, or a test binary that dies early, fails them.
The testing package is imported under a name drawn per run, so no name of the package clashes.
"""
from __future__ import annotations

import posixpath
import secrets

from code_gym.languages.base import Canaries

_WORDS = ("Parse", "Merge", "Round", "Total", "Split", "Format", "Empty", "Large", "Order", "Value",
          "Update", "Lookup", "Repeat", "Nested", "Default", "Limit", "Reset", "Copy", "Range", "Count")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _token(n: int) -> str:
    return "".join(secrets.choice(_LETTERS) for _ in range(n))


PREFIX = "_code_gym_canary_"  # the planted file's name: the reader writes it without the "_"


def canary_path(test_files: tuple[str, ...], exists) -> str:
    folder = posixpath.dirname(test_files[0]) if test_files else ""
    while True:
        name = f"{PREFIX}{_token(8)}_test.go"
        path = posixpath.join(folder, name) if folder else name
        if path not in test_files and not exists(path):
            return path


def make(test_files: tuple[str, ...], exists) -> Canaries:
    """Canaries for one run: a new file name, test names and values."""
    path = canary_path(test_files, exists)
    rng = secrets.SystemRandom()
    testing = f"t{_token(6)}"
    a, b, c = (rng.randrange(2, 999) for _ in range(3))
    wrong = a * b + c + rng.randrange(1, 50)
    names: list[str] = []
    while len(names) < 4:
        name = f"Test{rng.choice(_WORDS)}{_token(5).capitalize()}"
        if name not in names:
            names.append(name)
    sub = _token(4)
    bodies = [
        (names[0], "failed", f"\tif got := {a} * {b} + {c}; got != {wrong} {{\n\t\tt.Errorf(\"got %d, want {wrong}\", got)\n\t}}\n"),
        (names[1], "failed", f"\tt.Run(\"{sub}\", func(t *{testing}.T) {{\n\t\tif {a} > {a + c} {{\n\t\t\treturn\n\t\t}}\n"
                             f"\t\tt.Errorf(\"{a} is not above {a + c}\")\n\t}})\n"),
        (names[2], "passed", f"\tif got := {a} * {b} + {c}; got != {a * b + c} {{\n\t\tt.Errorf(\"got %d, want {a * b + c}\", got)\n\t}}\n"),
        (names[3], "passed", f"\tt.Run(\"{sub}\", func(t *{testing}.T) {{\n\t\tif len(\"{sub}\") != 4 {{\n\t\t\tt.Fatal(\"length\")\n\t\t}}\n\t}})\n"),
    ]
    rng.shuffle(bodies)
    functions = "".join(f"\nfunc {name}(t *{testing}.T) {{\n{body}}}\n" for name, _, body in bodies)
    source = f"package _\n\nimport {testing} \"testing\"\n{functions}"
    return Canaries(path, source, {f"{path}::{name}": outcome for name, outcome, _ in bodies})
