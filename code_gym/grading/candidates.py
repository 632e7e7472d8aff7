"""What the task builders of the languages whose tasks are made of changed functions share: the
source files parsed, the candidates (each function's body removal and mutations, named, in rounds
over the functions), what a run's records and coverage tell (failure messages, the tests that run a
line, the tests that fail on a code state, remembered), the statement's gates (written, leak,
regions each needed), the checking of the one-region candidates and then of their combinations, and
a build's frame (the output folder, the staging folder, the progress bar, the working folder, the
manifest).

A builder gives what is its own as arguments: its `remove_body` and `pick_mutations`, which tests
run a line (`covering`), its statement writers and leak check, its evaluation of one candidate."""
from __future__ import annotations

import itertools
import json
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from code_gym.grading.audit import audit
from code_gym.grading.builder import (MANIFEST_NAME, BuildReport, Candidate, Outcome, Rejection, check_all,
                                      check_reference_runs, combinations, grow, place_tasks, unique_id)
from code_gym.grading.multiregion import apply_changes as apply_region_changes
from code_gym.grading.multiregion import state, unneeded_regions
from code_gym.grading.reference import reference_changes
from code_gym.tasks.loaders.folder import task_id
from code_gym.tasks.task import Task
from code_gym.util.hostfs import owned_prefix
from code_gym.workspace.diffs import file_diff


def originals(root: Path, changes, encoding: str | None = "utf-8") -> dict[str, str]:
    """The original text of each file the changes change (path -> text)."""
    return {c.function.path: (root / c.function.path).read_text(encoding=encoding) for c in changes}


@dataclass(frozen=True)
class CandidateOptions:
    """The options of every builder of changed functions; a language's BuildOptions adds its own
    (its environment, ...) and sets its timeouts."""
    timeout: float = 60.0  # the tasks' test timeout in seconds (task.toml [timeouts] tests)
    command_timeout: float = 30.0  # the tasks' agent command timeout
    reruns: int = 3  # runs of the original that must all pass
    mutations_per_function: int = 2
    remove_bodies: bool = True
    max_candidates: int | None = None  # None: every candidate
    seed: int = 0
    workers: int = 2  # sandbox runs at once
    multi_ratio: float = 0.6  # multi-region candidates per accepted one-region task (0: none)
    isolation: str = "auto"
    progress: bool = True


def parsed_sources(root: Path, paths, functions: Callable, checker: Callable, counts: dict) -> Iterator[tuple]:
    """(path, text, its functions, its mutations' checker) of each source file (UTF-8); a file that
    does not read or parse counts in `counts["unparsed_files"]`."""
    for path in paths:
        try:
            text = (root / path).read_text(encoding="utf-8")
            fns = functions(path, text)
            file_checker = checker(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            counts["unparsed_files"] += 1
            continue
        yield path, text, fns, file_checker


def failure_messages(raw: bytes | None, nonce: str) -> dict[str, str]:
    """The failure messages of a run's records by id (records.read has checked the stream)."""
    found = {}
    for line in (raw or b"").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("nonce") == nonce and isinstance(record.get("id"), str) \
                and isinstance(record.get("message"), str) and record.get("outcome") == "failed":
            found.setdefault(record["id"], record["message"])
    return found


def reaching(coverage: dict[str, dict[str, set[int]] | None], path: str, lines) -> list[str]:
    """The keys of `coverage` (a test file or folder -> the lines of each source file its tests
    ran; None: unknown) that reach any of `lines` of `path` (every one whose coverage is unknown)."""
    wanted = set(lines)
    return [f for f, ran in coverage.items() if ran is None or wanted & ran.get(path, set())]


def failing_tests(failed: dict, files: dict[str, str], changed: Callable[[], Any]) -> frozenset[str]:
    """The listed tests that fail on the code with `files` (path -> text) changed: remembered in
    `failed` (code state -> tests) from an earlier run of the same code (a region's own one-region
    run), else `changed()` runs them (and remembers)."""
    key = state(files)
    if key not in failed:
        run = changed()
        if not run.ok:
            return frozenset({f"(the test run itself fails: exit code {run.exit_code})"})
    return failed[key]


def candidate_id(project: str, module: str, qualname: str, operator: str, taken: set[str],
                 family: bool = True) -> str:
    """The id `PROJECT-MODULE-FUNCTION-OPERATOR`, unique among `taken` (and added to it); PROJECT- is
    left out when the module's name is the project's (with `family`, also when it starts PROJECT-)."""
    prefix = "" if module == project or (family and module.startswith(project + "-")) else project + "-"
    return unique_id(task_id(f"{prefix}{module}-{qualname}-{operator}"), taken)


def in_rounds(batches: list[list[Candidate]], cap: int | None = None) -> list[Candidate]:
    """The candidates of each function (a batch each) in round-robin order over the functions, so a
    cap (the first `cap`) keeps variety; the n-th batch starts at its n-th candidate (turned round),
    so the first round mixes kinds and operators."""
    turned = []
    for n, batch in enumerate(batches):
        turn = n % max(len(batch), 1)
        turned.append(batch[turn:] + batch[:turn])
    ordered = [c for round_ in itertools.zip_longest(*turned) for c in round_ if c is not None]
    return ordered if cap is None else ordered[:cap]


def function_changes(fn, text: str, options, remove_body: Callable, pick_mutations: Callable, file_checker=None,
                     covering: Callable[[str, Any], Any] | None = None, counts: dict | None = None) -> list[tuple]:
    """(change, what runs its line) of `fn`'s body removal (with `options.remove_bodies`, when it
    has a docstring) and mutations (`options.mutations_per_function`). Without `covering`, every
    mutation drawn, with None. With `covering(path, lines)` (the tests that run any of `lines`;
    empty: none), sites are drawn three times over and the first ones some test runs are kept; the
    others count in `counts["sites_not_run"]`."""
    out = []
    body = range(fn.body_lines[0], fn.body_lines[1] + 1)
    if options.remove_bodies and fn.docstring:
        change = remove_body(fn, text)
        if change is not None:
            out.append((change, covering(fn.path, body) if covering else None))
    rng = random.Random(f"{options.seed}:{fn.path}:{fn.qualname}")
    if covering is None:
        return out + [(c, None) for c in pick_mutations(fn, text, options.mutations_per_function, rng, file_checker)]
    kept = 0
    for change in pick_mutations(fn, text, 3 * options.mutations_per_function, rng, file_checker):
        runs = covering(fn.path, [change.line])
        if not runs:
            counts["sites_not_run"] += 1
        elif kept < options.mutations_per_function:
            out.append((change, runs))
            kept += 1
    return out


def region_source(base: dict, changes, extra: dict | None = None) -> dict:
    """A task's `source` table: `base`, then the one region's file, function, operator and line
    (then `extra`); several regions: `base`, `extra`, their count and a list per field (task.toml
    holds flat values: a region per index)."""
    regions = [{"file": c.function.path, "function": c.function.qualname, "operator": c.operator, "line": c.line}
               for c in changes]
    if len(regions) == 1:
        return {**base, **regions[0], **(extra or {})}
    return {**base, **(extra or {}), "regions": len(regions),
            **{f"{key}s": [r[key] for r in regions] for key in ("file", "function", "operator", "line")}}


def task_patch(changed: dict[str, str], original: dict[str, str]) -> str:
    """The reference patch: from each changed file back to its original."""
    return "".join(file_diff(path, changed[path].encode(), original[path].encode()).text for path in sorted(changed))


def statement_gates(cand: Candidate, fail_to_pass: list[str], symptoms, own: dict | None, *,
                    write_statement: Callable, write_multi_statement: Callable, leak: Callable,
                    read_originals: Callable[[], dict[str, str]],
                    failing: Callable[[dict[str, str]], frozenset[str]]) -> tuple[str, Outcome | None]:
    """The candidate's statement, and the outcome that rejects it (None: it passes these gates):
    `leak` (the statement names what changed) and, with several regions, `regions` (a region whose
    fix left out makes no test fail: `failing(files)` of a code state, `read_originals()` the
    changed files' original texts). A region's part of a multi-region statement tells what its own
    change did on its own (its one-region outcome in `own`, by change)."""
    if len(cand.changes) == 1:
        statement = write_statement(cand.change, fail_to_pass, symptoms, seed=cand.id)
    else:
        own = own or {}
        parts = [(c, sorted(own[c].fail_to_pass), own[c].symptoms) if c in own else (c, fail_to_pass, symptoms)
                 for c in cand.changes]
        statement = write_multi_statement(parts, seed=cand.id)
    for change in cand.changes:
        reason = leak(statement, change)
        if reason:
            return statement, Outcome(cand, Rejection(cand.id, "leak", reason), frozenset(fail_to_pass))
    if len(cand.changes) > 1:
        unneeded = unneeded_regions(read_originals(), cand.changes, failing)
        if unneeded:
            names = ", ".join(f"{c.function.path}:{c.function.qualname} ({c.operator})" for c in unneeded)
            return statement, Outcome(cand, Rejection(cand.id, "regions", f"no test fails with this region's fix "
                                                      f"left out: {names}"), frozenset(fail_to_pass))
    return statement, None


NO_TEST_FAILS = "no test fails after the change (an equivalent mutant, or behaviour no test checks)"


def changed_files(cand: Candidate, original: dict[str, str]) -> dict[str, str] | Outcome:
    """The changed files of the candidate's regions applied to `original`, or the `regions`
    rejection when they cannot be combined."""
    try:
        return apply_region_changes(original, cand.changes)
    except ValueError as exc:
        return Outcome(cand, Rejection(cand.id, "regions", f"the regions cannot be combined: {exc}"))


def broken_run(cand: Candidate, run) -> Outcome:
    """The `fails` rejection of a candidate whose changed code breaks the test run itself."""
    why = "; ".join(run.problems[:1]) or run.output[-200:].strip()
    return Outcome(cand, Rejection(cand.id, "fails", f"the changed code breaks the test run itself (exit code "
                                   f"{run.exit_code}), so no test can be singled out: {why}"))


def reference_outcome(cand: Candidate, task: Task, reference: tuple[list, frozenset[str] | None],
                      fail_to_pass: list[str], symptoms, timeout: float, stable: set[str], listed=None) -> Outcome:
    """The reference gates (`check_reference_runs`) on the task written for `cand`, from its
    reference runs and the tests rerun (None: all of them), and the audit on its reference (an
    original whose code the audit flags, such as bit-vec's `cfg!(test)`, is no task: the grader
    would fail the agent who wrote it back; gate "original"): rejected, the task's folder removed;
    accepted, the tests rerun join `stable` (no later candidate's reference reruns them)."""
    reference_runs, rerun = reference
    verdict = check_reference_runs(reference_runs, fail_to_pass, timeout, rerun, listed)
    findings = [] if verdict else audit(reference_changes(task), task)
    if findings:  # the grader would fail an agent who wrote the original code back
        verdict = ("original", f"the audit flags the reference: {findings[0]}")
    if verdict:
        shutil.rmtree(task.root, ignore_errors=True)
        return Outcome(cand, Rejection(cand.id, *verdict), frozenset(fail_to_pass))
    stable.update(fail_to_pass if rerun is None else rerun)
    return Outcome(cand, task, frozenset(fail_to_pass), symptoms)


@dataclass
class Checked:
    candidates: list[Candidate]  # those checked: the one-region ones (up to a give-up), then the combinations
    tasks: list[Task]
    rejections: list[Rejection]
    given_up: int  # one-region candidates not checked (the options' give_up_after)


def check_candidates(evaluate: Callable[[Candidate, dict | None], Outcome], candidates: list[Candidate], options,
                     bar, out: Path, slots) -> Checked:
    """The one-region candidates checked (`evaluate(candidate, None)`; `options.give_up_after`), then
    combinations of the accepted ones (`options.multi_ratio`; `evaluate(candidate, own)`, own: each
    accepted region's outcome by its change), and the accepted tasks checked by the grader and moved
    into `out`."""
    outcomes = check_all(lambda c: evaluate(c, None), candidates, options.workers, bar, options.give_up_after)
    given_up = len(candidates) - len(outcomes)
    candidates = [o.candidate for o in outcomes] if given_up else list(candidates)
    combined = combinations(outcomes, options.multi_ratio, options.seed) if options.multi_ratio > 0 else []
    grow(bar, len(combined))
    own = {o.candidate.change: o for o in outcomes if isinstance(o.result, Task)}
    outcomes += check_all(lambda c: evaluate(c, own), combined, options.workers, bar)
    tasks, rejections = place_tasks(outcomes, out, options.workers, options.isolation, slots)
    return Checked(candidates + combined, tasks, rejections, given_up)


@dataclass
class Build:
    """One build's frame: its output folder, the staging folder tasks are written to before they
    move, when it started, the sandbox slots, the progress bar (`own_bar`: made here), its working folder."""
    out: Path
    staging: Path
    started: float
    slots: Any
    bar: Any
    own_bar: bool
    workdir: Path

    def describe(self, text: str) -> None:
        """Say what the build does on its own progress bar (a shared one counts many builds)."""
        if self.own_bar:
            self.bar.set_description(text)

    def candidates(self, n: int) -> None:
        """`n` candidates made: the bar's total grows by them."""
        grow(self.bar, n)

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def report(self, tasks: list[Task], rejections: list[Rejection], manifest: dict) -> BuildReport:
        """`manifest` written to OUT/manifest.json, and the build's report."""
        (self.out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        return BuildReport(self.out, tasks, rejections, manifest)


@contextmanager
def build_frame(out: str | Path, options, bar=None, slots=None) -> Iterator[Build]:
    """A build's frame: `out` made, `slots` (default: `options.workers` at once), a progress bar
    of its own when none is given (shown with `options.progress`), a working folder; on the way
    out, the staging folder and the working folder removed and its own bar closed."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / ".staging"
    started = time.monotonic()
    slots = slots or threading.BoundedSemaphore(max(1, options.workers))
    own_bar = bar is None
    if own_bar:
        bar = tqdm(total=0, desc="candidate tasks", unit="task", disable=not options.progress)
    with tempfile.TemporaryDirectory(prefix=owned_prefix("builder")) as workdir:
        try:
            yield Build(out, staging, started, slots, bar, own_bar, Path(workdir))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            if own_bar:
                bar.close()
