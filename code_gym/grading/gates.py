"""The gates a task must pass before it is used for training."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from code_gym import languages
from code_gym.grading.grade import GradeResult, grade
from code_gym.tasks.loaders.folder import dump_manifest
from code_gym.tasks.task import MANIFEST, Task, TaskError, load_task
from code_gym.grading.reference import reference_changes

# The builder's gates (every language's), in the order docs/tasks.md's table gives them: a candidate
# task's rejection names the first it fails, and `tasks revalidate` checks them again.
GATES = {
    "original": "the original code passes every test of the task, laid out as the grader lays it",
    "fails": "the changed code fails at least one test (FAIL_TO_PASS is not empty) and the run itself works",
    "flaky": "every FAIL_TO_PASS test passes in each rerun of the original, reruns back to back in one folder",
    "runtime": "the task's tests finish within half its test timeout (and the changed code's within all of it)",
    "leak": "the statement does not contain the removed or original code",
    "regions": "a multi-region task needs every region: with any one region's fix left out, a test fails",
}
# code fragments shorter than this (spaces ignored) are too generic to count as a leak ("return x")
MIN_LEAK_CHARS = 10

# APIs whose use in tests makes results depend on the clock or the network.
_NONDETERMINISTIC = re.compile(
    r"\b(time\.time|time\.monotonic|time\.perf_counter|datetime\.now|datetime\.utcnow|date\.today|"
    r"socket\.|urllib\.request|requests\.|http\.client|random\.(?!seed|Random\())")


@dataclass
class Verdict:
    task_id: str
    kind: str
    files: int
    hunks: int
    untouched_failing: int = 0
    untouched_total: int = 0
    reference_runs: list[str] = field(default_factory=list)  # each reference run's summary
    reference_passes: int = 0  # reference runs in which every graded test passed
    problems: list[str] = field(default_factory=list)
    # node ids that fail untouched and pass with the reference / pass both times (computed for a
    # task that declares none; `record_test_lists` stores them in its manifest)
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    probes: int = 0  # behavioural probes made for the task
    probes_dropped: tuple[str, ...] = ()  # the probes that could not be made, and why
    probe_census: dict[str, tuple[int, int]] = field(default_factory=dict)  # graded test -> (fix, regression) probes
    # FAIL_TO_PASS tests no fix probe checks -> why: their credit is withheld (rewards.tests.unchecked)
    without_fix_probes: dict[str, str] = field(default_factory=dict)
    probes_checked: bool = False  # whether the task's language makes probes (the census means something)
    census_fail_to_pass: tuple[str, ...] = ()  # the FAIL_TO_PASS tests the census was taken over

    @property
    def fix_probes(self) -> int:
        return sum(fix for fix, _ in self.probe_census.values())

    @property
    def ok(self) -> bool:
        return not self.problems


def _hunk_count(task: Task) -> tuple[int, int]:
    try:
        patch = PatchSet(task.reference_patch)
    except UnidiffParseError as exc:
        raise TaskError(f"{task.root}: reference patch is not a unified diff: {exc}") from None
    return len(patch), sum(len(f) for f in patch)


def _clock_or_network(task: Task) -> list[str]:
    found = []
    sources = [task.repo / t for t in task.visible_tests] + [task.hidden_dir / t for t in task.hidden_tests]
    for path in sources:
        text = path.read_text()
        seeded = "random.seed(" in text  # a file that seeds the global generator may draw from it
        for n, line in enumerate(text.splitlines(), 1):
            match = _NONDETERMINISTIC.search(line)
            if match and not line.lstrip().startswith("#") and not (seeded and match.group().startswith("random.")):
                found.append(f"{path.name}:{n} uses the clock, network or unseeded randomness")
    return found


def _not_passing(result: GradeResult, test_ids: tuple[str, ...]) -> list[str]:
    return [t for t in test_ids if result.tests.get(t) != "passed"]


def _swebench_gates(task: Task, verdict: Verdict, runs: int, isolation: str) -> Verdict:
    """What the SWE-bench harness checks: with the hidden tests laid, every FAIL_TO_PASS test fails
    before the reference and passes after it, every PASS_TO_PASS test passes both times. Only those
    node ids run."""
    selected = task.fail_to_pass + task.pass_to_pass
    before = grade(task, {}, isolation=isolation, tests=selected)
    verdict.untouched_total = len(task.fail_to_pass)
    verdict.untouched_failing = len(_not_passing(before, task.fail_to_pass))
    if before.timed_out:
        verdict.problems.append(f"before the reference: {before.summary()}")
    passing = sorted(set(task.fail_to_pass) - set(_not_passing(before, task.fail_to_pass)))
    if passing:
        verdict.problems.append(f"FAIL_TO_PASS tests pass before the reference: {', '.join(passing)}")
    failing = _not_passing(before, task.pass_to_pass)
    if failing:
        verdict.problems.append(f"PASS_TO_PASS tests do not pass before the reference: {', '.join(failing)}")
    try:
        changes = reference_changes(task)
    except TaskError as exc:
        verdict.problems.append(str(exc))
        return verdict
    _probe_gate(task, verdict, isolation)
    for _ in range(runs):
        after = grade(task, changes, isolation=isolation, tests=selected)
        verdict.reference_runs.append(after.summary())
        failing = _not_passing(after, selected)
        if failing or not after.resolved:
            verdict.problems.append(f"with the reference, tests do not pass ({after.summary()}): "
                                    f"{', '.join(failing) or 'the run itself failed'}")
            break
        verdict.reference_passes += 1
    return verdict


def _probe_gate(task: Task, verdict: Verdict, isolation: str) -> None:
    """Make the task's behavioural probes (the reference's graded runs must then pass them): how
    many, what could not be made, and the census over the task's lists. A task without probes is
    reported, not failed."""
    behavioural = languages.of(task).probes
    if behavioural is None:
        return
    made = behavioural.probe_set(task, isolation)
    verdict.probes, verdict.probes_dropped, verdict.probes_checked = len(made.probes), made.dropped, True
    _census(made, verdict, task.fail_to_pass, task.pass_to_pass)


def _census(made, verdict: Verdict, fail_to_pass: tuple[str, ...], pass_to_pass: tuple[str, ...]) -> None:
    """Fix and regression probes per graded test, and the FAIL_TO_PASS tests without fix probes
    (flagged: a pass of theirs earns no credit, `rewards.tests.unchecked`), with why."""
    verdict.probe_census, verdict.census_fail_to_pass = made.census(fail_to_pass + pass_to_pass), fail_to_pass
    verdict.without_fix_probes = {t: made.why_no_fix_probe(t) for t in made.without_fix_probes(fail_to_pass)}


def check_runs(runs: int) -> None:
    """Refuse a count of reference runs below 1: with 0, every reference gate passed unchecked."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1 (the reference's runs that must all pass), got {runs!r}")


def validate_task(task: Task, runs: int = 3, isolation: str = "auto") -> Verdict:
    """Gates: the patch parses and applies; the untouched repo fails >= 1 hidden test; the reference
    passes every test and every behavioural probe `runs` times in a row; tests use no clock, network or unseeded randomness
    (and run in a sandbox with no network). A task with `fail_to_pass` node ids gets the SWE-bench
    gates instead of the hidden-test ones (see `_swebench_gates`)."""
    check_runs(runs)
    files, hunks = _hunk_count(task)
    verdict = Verdict(task.id, task.kind, files, hunks)
    verdict.problems += _clock_or_network(task)
    if task.fail_to_pass:
        return _swebench_gates(task, verdict, runs, isolation)
    untouched = grade(task, {}, isolation=isolation)
    hidden_ids = {t for t in untouched.tests if any(Path(h).stem in t for h in task.hidden_tests)}
    verdict.untouched_total = len(hidden_ids)
    verdict.untouched_failing = sum(1 for t in hidden_ids if untouched.tests[t] != "passed")
    if untouched.timed_out or untouched.exit_code not in languages.of(task).run_ok:
        verdict.problems.append(f"untouched repo: the test run itself failed ({untouched.summary()})")
    elif verdict.untouched_failing == 0:
        verdict.problems.append("untouched repo passes every hidden test: the task asks for nothing")
    try:
        changes = reference_changes(task)
    except TaskError as exc:
        verdict.problems.append(str(exc))
        return verdict
    _probe_gate(task, verdict, isolation)
    for _ in range(runs):
        result = grade(task, changes, isolation=isolation)
        verdict.reference_runs.append(result.summary())
        if not result.resolved:
            verdict.problems.append(f"reference does not pass: {result.summary()}")
            break
        verdict.reference_passes += 1
    else:
        verdict.fail_to_pass, verdict.pass_to_pass = test_lists(untouched, result)
        _probe_census(task, verdict, isolation)
    return verdict


def _probe_census(task: Task, verdict: Verdict, isolation: str) -> None:
    """The census of a task that declares no lists, over the lists its runs computed."""
    behavioural = languages.of(task).probes
    if behavioural is not None and verdict.fail_to_pass:
        _census(behavioural.probe_set(task, isolation), verdict, verdict.fail_to_pass, verdict.pass_to_pass)


def test_lists(untouched: GradeResult, reference: GradeResult) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(FAIL_TO_PASS, PASS_TO_PASS): the tests that pass with the reference and, respectively, do
    not pass / pass on the untouched repository."""
    passing = sorted(t for t, outcome in reference.tests.items() if outcome == "passed")
    return (tuple(t for t in passing if untouched.tests.get(t) != "passed"),
            tuple(t for t in passing if untouched.tests.get(t) == "passed"))


def record_test_lists(task: Task, verdict: Verdict) -> bool:
    """Store the verdict's FAIL_TO_PASS / PASS_TO_PASS in the task's manifest (task.toml), for a
    task that passed every gate and declares no lists; returns whether it wrote them."""
    if not verdict.ok or not verdict.fail_to_pass or task.fail_to_pass or task.root is None:
        return False
    manifest = task.root / MANIFEST
    data = tomllib.loads(manifest.read_text())
    data["fail_to_pass"], data["pass_to_pass"] = list(verdict.fail_to_pass), list(verdict.pass_to_pass)
    manifest.write_text(dump_manifest(data))
    load_task(task.root)  # what was written reads back as a task
    return True
