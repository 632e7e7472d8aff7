"""Integrity audit: does a final patch try to win the tests instead of fixing the code?

`audit(changes, task)` is a pure function of the changed files (path -> new bytes, None when
deleted) and the task. It reads the starting version of each file from the task's repository.
A change to a path the grader keeps (`code_gym.grading.file_policy.kept_rule`) is a finding of
its rule; the task's language adds its own path rules and the code rules for its source files
(`Language.path_rule`, `Language.audit_file`), which report only what the patch added. Every
finding names the file, the line and the rule.

The grader runs the audit before the tests, and a finding outranks any test verdict. What the audit
cannot see is listed in docs/security.md.
"""
from __future__ import annotations

from code_gym import languages
from code_gym.grading.file_policy import kept_rule
from code_gym.languages.base import Finding
from code_gym.tasks.task import Task

__all__ = ["Finding", "audit", "path_rule", "rules"]

# rules of every language; each language adds its own (`Language.rules`)
COMMON_RULES: dict[str, str] = {
    "protected-path": "changes a test file or a path the task protects",
    "canary": "the graded run's canary tests came out wrong or went missing, or the run's exit code disagrees with the per-test records (found after the run, not by the audit: code_gym.grading.canary)",
    "results": "the per-test records the grader's reporter streamed out of the run are broken, were written to after the session ended, or disagree with the runner's own report or exit code (found after the run, not by the audit: code_gym.grading.records)",
}


def rules(language: str = "python") -> dict[str, str]:
    """Every rule a finding of a task in `language` may carry: name -> what it means."""
    return COMMON_RULES | languages.get(language).rules


def audit(changes: dict[str, bytes | None], task: Task) -> list[Finding]:
    """Every integrity finding in `changes` (path -> new content, None for a deleted file), sorted
    by path and line. Empty means the patch passes the audit."""
    language = languages.of(task)
    known = rules(task.language)
    findings: list[Finding] = []
    for path in sorted(changes):
        new = changes[path]
        old = _original(task, path)
        rule = path_rule(task, path, old, new)
        if rule:
            findings.append(Finding(path, 0, rule, known[rule]))
            continue
        if new is not None:  # the language tells which files it runs (a script without a suffix too)
            findings += language.audit_file(task, path, old, new)
    return sorted(findings, key=lambda f: (f.path, f.line, f.rule))


def path_rule(task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule a change to `path` breaks by its path alone, or None."""
    return kept_rule(task, path, old, new) or languages.of(task).path_rule(task, path, old, new)


def _original(task: Task, path: str) -> bytes | None:
    """The task's version of `path`: None also where the host cannot look the path up (a name over
    NAME_MAX, a path over PATH_MAX), as no task file can be there."""
    try:
        return task.original_file(path)
    except OSError:
        return None
