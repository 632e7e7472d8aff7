"""The files a Go task's grader owns: every `_test.go` file (a new one could add an `init` or a
`TestMain` to a test binary), `testdata/` folders (the tests' inputs and golden outputs), go.mod
and go.sum, and `vendor/` folders (in GOPATH mode a package there replaces the Debian dependency
of that import path). The agent's changes to them never reach the graded copy (`grader_owned`),
and a run must leave them untouched (`guarded`): a test binary runs while go still compiles the
other packages, so it could rewrite their tests before they build."""
from __future__ import annotations

RULES = {
    "test-file": "changes a Go test file (_test.go) or a testdata folder, which the grader keeps as the task has them",
    "dependencies": "changes go.mod, go.sum or a vendor folder (the dependencies are the task's Debian packages)",
}


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule that makes the grader keep the task's own version of `path`, if any."""
    parts = path.split("/")
    if parts[-1].endswith("_test.go") or "testdata" in parts[:-1]:
        return "test-file"
    if parts[-1] in ("go.mod", "go.sum", "go.work", "go.work.sum") or "vendor" in parts[:-1]:
        return "dependencies"
    return None


def guarded(path: str) -> bool:
    """Whether a test run's verdict depends on `path` staying as it is."""
    return grader_owned(path, None, None) is not None
