"""Re-validation of a built task set of any language, independent of the build: every gate again
(`code_gym.grading.gates.GATES`), through the grader (`code_gym.grading.grade.grade`: fresh copies and sandboxes, hidden tests laid out, canaries),
on the whole of each task's tests rather than the covering files the builder ran.

Gates, in order: `leak` (no changed line of the reference patch, 10 or more characters with spaces
ignored, is in the statement), `fails` (the untouched repo fails every FAIL_TO_PASS test and the
run itself works), `original` (the reference passes every test of the task), `flaky` (and does so
in every one of `runs` runs), `runtime` (each run within half the test timeout), `regions` (with
any one hunk of the reference patch left out, a test fails)."""
from __future__ import annotations

import random
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from code_gym.grading.gates import GATES, MIN_LEAK_CHARS, check_runs
from code_gym.grading.grade import grade
from code_gym.grading.reference import patch_changes, reference_changes
from code_gym.util.table import format_table
from code_gym.tasks.task import Task, TaskError


@dataclass(frozen=True)
class Revalidation:
    task_id: str
    gate: str | None  # the first gate that fails, or None
    reason: str = ""
    regions: int = 1


def _leak(task: Task) -> str | None:
    squashed = "".join(task.statement.split())
    for line in task.reference_patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            code = "".join(line[1:].split())
            if len(code) >= MIN_LEAK_CHARS and code in squashed:
                return f"the statement holds the reference's line {line[1:].strip()!r}"
    return None


def _split(patch: str) -> list[tuple[str, list[str]]]:
    """(file header, hunks) of each file of a unified diff."""
    files: list[tuple[str, list[str]]] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git ") or not files:
            files.append((line, []))
        elif line.startswith("@@"):
            files[-1][1].append(line)
        elif files[-1][1]:
            files[-1][1][-1] += line
        else:
            files[-1] = (files[-1][0] + line, files[-1][1])
    return files


def _without_hunk(patch: str, index: int) -> str:
    """The patch with its `index`-th hunk (counted over all files) left out; a file left with no
    hunk is left out too (git apply checks later hunks' positions with an offset)."""
    out, n = [], 0
    for header, hunks in _split(patch):
        kept = [h for i, h in enumerate(hunks, n) if i != index]
        n += len(hunks)
        if kept:
            out.append(header + "".join(kept))
    return "".join(out)


def _regions(task: Task) -> int:
    """How many regions the builder combined into `task` (its task.toml [source] regions)."""
    try:
        source = tomllib.loads((task.root / "task.toml").read_text()).get("source", {})
    except (OSError, TypeError, tomllib.TOMLDecodeError):
        return 1
    return int(source.get("regions", 1)) if isinstance(source, dict) else 1


def _hunks(patch: str) -> int:
    return sum(len(hunks) for _, hunks in _split(patch))


def revalidate_task(task: Task, runs: int = 3, isolation: str = "auto") -> Revalidation:
    """The first gate `task` fails now, with the reason (see the module docstring)."""
    check_runs(runs)
    hunks = _hunks(task.reference_patch)
    regions = _regions(task)

    def fail(gate: str, reason: str) -> Revalidation:
        return Revalidation(task.id, gate, reason, regions)

    reason = _leak(task)
    if reason:
        return fail("leak", reason)
    untouched = grade(task, {}, isolation=isolation)
    if not untouched.run_ok:
        return fail("fails", f"the untouched repo's test run does not work: {untouched.summary()}")
    passing = [t for t in task.fail_to_pass if untouched.tests.get(t) == "passed"]
    if passing or not task.fail_to_pass:
        return fail("fails", "FAIL_TO_PASS tests pass on the untouched repo: " + ", ".join(passing[:5])
                    if passing else "the task has no FAIL_TO_PASS tests")
    try:
        changes = reference_changes(task)
    except TaskError as exc:
        return fail("original", str(exc))
    for i in range(runs):
        result = grade(task, changes, isolation=isolation)
        if result.timed_out:
            return fail("runtime", f"run {i + 1}: {result.summary()}")
        if not result.resolved:
            return fail("original" if i == 0 else "flaky", f"run {i + 1} of the reference: {result.summary()}")
        if result.duration > task.timeouts.tests / 2:
            return fail("runtime", f"the reference's tests took {result.duration:.1f}s, over half the "
                        f"{task.timeouts.tests:g}s timeout")
    if hunks > 1:
        for i in range(hunks):
            partial = patch_changes(task.repo, _without_hunk(task.reference_patch, i))
            if grade(task, partial, isolation=isolation).resolved:
                return fail("regions", f"the reference without its hunk {i + 1} of {hunks} still passes every test")
    return Revalidation(task.id, None, "", regions)


@dataclass
class RevalidationReport:
    results: list[Revalidation]

    @property
    def fraction(self) -> float:
        return sum(r.gate is None for r in self.results) / len(self.results) if self.results else 0.0

    def by_gate(self) -> Counter:
        return Counter(r.gate for r in self.results if r.gate)

    def summary(self) -> str:
        counts = self.by_gate()
        rows = [[gate, counts.get(gate, 0), ", ".join(r.task_id for r in self.results if r.gate == gate)[:80] or "-"]
                for gate in GATES]
        multi = [r for r in self.results if r.regions > 1]
        text = format_table(["gate", "failed", "tasks"], rows)
        for r in self.results:
            if r.gate:
                text += f"\n{r.task_id}: {r.gate}: {r.reason[:200]}"
        return (text + f"\n\n{sum(r.gate is None for r in self.results)}/{len(self.results)} tasks still pass every "
                f"gate ({self.fraction:.1%}); multi-region {sum(r.gate is None for r in multi)}/{len(multi)}")


def revalidate(tasks: list[Task], runs: int = 3, isolation: str = "auto", workers: int = 2,
               sample: int | None = None, seed: int = 0, progress=None) -> RevalidationReport:
    """Re-run every gate on `tasks` (or a random `sample` of them), `workers` tasks at a time."""
    if sample is not None and sample < len(tasks):
        tasks = random.Random(seed).sample(tasks, sample)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        results = []
        for r in pool.map(lambda t: revalidate_task(t, runs, isolation), tasks):
            results.append(r)
            if progress:
                progress(r)
    return RevalidationReport(sorted(results, key=lambda r: r.task_id))
