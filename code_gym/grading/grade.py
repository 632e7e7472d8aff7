"""Grade a final patch so that the patch cannot grade itself.

The test run itself is the task's language's (`code_gym.languages`: the command, the records
reporter, the runner's own report, the canary tests, the probes); what is done with it is here.

- The changed files are written into a pristine copy of the task's repository, except test files,
  protected paths and the files the grader owns: those keep the task's version (`file_policy`).
- The hidden tests are added, so they exist only in this copy.
- The tests run in a fresh sandbox; per-test outcomes come from the records the language's
  reporter streams out of the run as each result is made (a channel the code under test cannot
  rewrite after the fact: `code_gym.grading.records`), cross-checked with the runner's own report
  and the exit code, never from printed text. A broken stream, or one that disagrees with either,
  voids the run with a finding of rule "results".
- The graded tests are known before the run (the task's FAIL_TO_PASS/PASS_TO_PASS ids, else the ids
  the runner collects with the reference solution applied): a test missing from the records (its
  file failed to load, the run crashed or timed out) counts as an error. Test ids read
  "FILE::NAME" in every language.
- Test files and the files the grader owns must be untouched after the run (inode, size, mtime and
  ctime); code that rewrites them while the tests run voids the run.
- The integrity audit (`code_gym.grading.audit`) runs on the changes before the tests; its findings
  travel with the result and outrank the test verdict (see `code_gym.rewards`).
- Every run carries canary tests (`code_gym.grading.canary`) in a hidden file named per run; they
  are not graded. A canary with the wrong outcome or missing, or an exit code that disagrees with
  the per-test records, voids the run and adds a finding of rule "canary" to `integrity`.
- Behavioural probes (where the language has them): one more test file, run first, replays calls
  the tests never make; the grader compares their results with the reference's: a failed probe
  makes the run unresolved, and a test whose probes fail earns no credit (`credited`).
"""
from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from code_gym import languages
from code_gym.grading import audit as integrity
from code_gym.grading import canary as canary_tests
from code_gym.grading import records as run_records
from code_gym.grading.file_policy import apply_changes, guarded_keys, lay_hidden_tests
from code_gym.grading.reference import reference_test_ids
from code_gym.languages.base import Finding
from code_gym.sandbox import Limits, make_sandbox
from code_gym.sandbox.records import new_nonce
from code_gym.tasks.task import Task
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.working_copy import Workspace

RESULTS_DIR = "/results"


@dataclass
class GradeResult:
    tests: dict[str, str]  # test id -> "passed" | "failed" | "error" | "skipped"
    exit_code: int | None
    timed_out: bool
    output: str
    duration: float
    ignored: list[str] = field(default_factory=list)  # changes the grader did not apply (task's version kept)
    integrity: list[Finding] | None = None  # audit findings; None when the audit was off
    tampered: list[str] = field(default_factory=list)  # guarded files changed while the tests ran
    whole_run: bool = True  # the graded tests are every test that ran, so none other may fail
    canary: list[Finding] = field(default_factory=list)  # canary and results-stream cross-check failures: run void
    other_failures: int = 0  # failing records of tests that are neither graded nor canaries
    canaries: bool = False  # whether the run carried canaries (without them exit code 0 is required)
    probes: Any = None  # the behavioural probes' ProbeReport; None when they were off
    ok_exit_codes: tuple[int, ...] = (0, 1)  # the language's exit codes of a run that ran (all passed, some failed)

    @property
    def credited(self) -> dict[str, str]:
        """`tests` with every passing test the probes do not credit (`ProbeReport.uncredited`)
        counted as "failed": what rewards pay for."""
        if self.probes is None or self.probes.ok:
            return self.tests
        return {t: "failed" if o == "passed" and self.probes.uncredited(t) else o for t, o in self.tests.items()}

    @property
    def passed(self) -> int:
        return sum(1 for v in self.tests.values() if v == "passed")

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def run_ok(self) -> bool:
        return (not self.timed_out and not self.tampered and not self.canary and self.exit_code in self.ok_exit_codes
                and self.total > 0)

    @property
    def resolved(self) -> bool:
        """Every graded test passed (the test verdict alone; the audit is `violation`)."""
        if not self.whole_run:
            clean = True
        elif self.canaries:  # a canary must fail, so exit code 1 is expected: no other record may fail
            clean = self.other_failures == 0
        else:
            clean = self.exit_code == self.ok_exit_codes[0]
        return self.run_ok and self.passed == self.total and clean and (self.probes is None or self.probes.ok)

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.run_ok else 0.0

    @property
    def violation(self) -> bool:
        return bool(self.integrity)

    def summary(self) -> str:
        if self.timed_out:
            text = f"tests timed out after {self.duration:.1f}s"
        elif self.tampered:
            text = f"test files changed during the run ({', '.join(self.tampered[:3])}): run void"
        elif self.canary:
            text = f"the run's canary tests or results show tampering ({self.canary[0].message}): run void"
        else:
            text = f"{self.passed}/{self.total} tests passed (exit code {self.exit_code})"
        if self.integrity:
            rules = sorted({f.rule for f in self.integrity})
            text += f"; integrity audit failed: {len(self.integrity)} finding(s) ({', '.join(rules)})"
        if self.probes is not None:
            text += f"; {self.probes.summary()}"
        return text


def graded_test_ids(task: Task, tests: tuple[str, ...] | None = None,
                    isolation: str = "auto") -> tuple[tuple[str, ...] | None, bool]:
    """(the test ids a grade counts, whether they are every test that runs). None: unknown before
    the run, so the records decide. `tests` selects test files or test ids to run."""
    if tests is not None and tests and all("::" in t for t in tests):
        return tuple(tests), True
    declared = task.fail_to_pass + task.pass_to_pass
    ids = declared or reference_test_ids(task, isolation)
    if ids is None:
        return None, True
    if tests is not None:
        ids = tuple(t for t in ids if t.split("::")[0] in tests)
    return ids, not declared


def grade(task: Task, changes: dict[str, bytes | None], isolation: str = "auto",
          limits: Limits | None = None, tests: tuple[str, ...] | None = None, audit: bool = True,
          canaries: bool = True, probes: bool | None = None, records: bool = True) -> GradeResult:
    """Run the task's visible and hidden tests (or `tests`: files or test ids) on a pristine copy
    with `changes` applied. With `audit`, the integrity findings come with the result (the
    tests run either way, so a result shows what a violating patch would have scored).
    `canaries=False`, `probes=False` and `records=False` (outcomes from the runner's report alone) are
    for tests only: they show what an attack scores without that defence (`probes` None: as
    `canaries`, so `canaries=False` alone turns off the canaries and the probes)."""
    started = time.monotonic()
    language = languages.of(task)
    findings = integrity.audit(changes, task) if audit else None
    expected, whole_run = graded_test_ids(task, tests, isolation)
    copy = Workspace(task.repo, strategy="copy")
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("results")))
    try:
        ignored = apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        selected = tests if tests is not None else task.visible_tests + task.hidden_tests
        planted = None
        if canaries:
            planted = language.canaries(task.hidden_tests + task.visible_tests,
                                        lambda p: (copy.root / p).exists() or (copy.root / p).is_symlink(),
                                        task.test_command)
            (copy.root / planted.path).parent.mkdir(parents=True, exist_ok=True)
            (copy.root / planted.path).write_text(planted.source)
            at = secrets.randbelow(len(selected) + 1)
            selected = (*selected[:at], planted.path, *selected[at:])
        sandbox = make_sandbox(isolation, copy.root, limits or Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else (), image=task.image,
                               runtime=language.runtime(task))
        binds = {results: RESULTS_DIR}
        inside = sandbox.inside(results, binds)
        probed = None
        behavioural = language.probes if (canaries if probes is None else probes) else None
        if behavioural is not None:  # the probe file runs first, in this run's process, before the package serves a test
            probed = behavioural.plant(task, copy.root, results, inside, isolation)
            selected = (probed.path, *selected) if probed.path else selected
        plan = language.test_run(task.test_command, tuple(selected), inside, known_ids=expected is not None,
                                 canaries=planted is not None)
        extra = ((planted.path,) if planted else ()) + ((probed.path,) if probed and probed.path else ())
        before = guarded_keys(task, copy.root, extra)
        nonce = new_nonce() if records else None
        try:
            run = sandbox.exec(plan.command, timeout=task.timeouts.tests, binds=binds, records=nonce)
        finally:
            sandbox.close()
        after = guarded_keys(task, copy.root, extra)
        tampered = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        lookup = ((expected or ()) + (tuple(planted.expected) if planted else ())
                  + (probed.ids if probed else ()))
        outcomes_by_id, void = run_records.run_outcomes(language, run, nonce, results, lookup, plan)
        if planted and not run.timed_out:
            void += canary_tests.check(planted, outcomes_by_id, run.exit_code, language.run_ok)
        graded = {t: o for t, o in outcomes_by_id.items()
                  if not (planted and planted.is_canary(t)) and not (probed and probed.is_probe(t))}
        if expected is not None:
            other = sum(1 for t, o in graded.items() if t not in expected and o in ("failed", "error"))
            outcomes = {t: graded.get(t, "error") for t in expected}
        else:
            other, outcomes = 0, graded
        if tampered or void:
            outcomes = {t: "error" for t in outcomes}
        if void:
            findings = (findings or []) + void
        report = None
        if probed and not (run.timed_out or tampered or void):
            report = behavioural.collect(probed, run.exit_code, run.output)
        return GradeResult(outcomes, run.exit_code, run.timed_out, run.output, time.monotonic() - started,
                           ignored, findings, tampered, whole_run, void, other, planted is not None, report,
                           language.run_ok)
    finally:
        copy.close()
        shutil.rmtree(results, ignore_errors=True)


def changes_digest(changes: Mapping[str, bytes | None], *context: str) -> str:
    """A hash of final changes (path -> content, None when deleted) and `context` strings. Every text
    is hashed as its UTF-8 with surrogates passed through: a name that is not UTF-8 (surrogate
    escapes) must neither raise nor collide."""
    def encoded(text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    digest = hashlib.sha256()
    for part in context:
        digest.update(encoded(part) + b"\0")
    for path in sorted(changes):
        data = changes[path]
        digest.update(encoded(path) + (b"\0-" if data is None else b"\0+" + hashlib.sha256(data).digest()))
    return digest.hexdigest()


class Grader(Protocol):
    """What the env calls to grade a final patch: `grade` itself, or a decorator over it such as
    `GradeCache`. Pass one as `CodeRepoEnv(grader=...)`."""

    def __call__(self, task: Task, changes: dict[str, bytes | None], *, isolation: Any = "auto",
                 audit: bool = True) -> GradeResult: ...


class GradeCache:
    """A `Grader` that remembers: results by task and a hash of the final changed files (grading is
    deterministic given them), computed by `grader` once each. Thread-safe; `hits` and `misses`
    count lookups."""

    def __init__(self, grader: Grader = grade) -> None:
        self.grader = grader
        self._results: dict[str, GradeResult] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(task: Task, changes: Mapping[str, bytes | None], isolation: Any, audit: bool) -> str:
        """A hash of the grading's inputs (`changes_digest`)."""
        return changes_digest(changes, task.id, str(task.root), str(isolation), str(audit))

    def __call__(self, task: Task, changes: dict[str, bytes | None], *, isolation: Any = "auto",
                 audit: bool = True) -> GradeResult:
        key = self.key(task, changes, isolation, audit)
        with self._lock:
            if key in self._results:
                self.hits += 1
                return self._results[key]
        result = self.grader(task, changes, isolation=isolation, audit=audit)
        with self._lock:
            self.misses += 1
            self._results[key] = result
        return result
