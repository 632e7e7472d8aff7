"""One verified Dafny program -> tasks, the way DafnyBench was made: take proof annotations out
(`strip`), keep the specification, and keep a task only when the verifier says it is one.

Every run is the grader's (`code_gym.grading.grade.grade`) on a task folder of the program, with
the program file replaced: the same sandbox, reader and records as training sees. The gates
(`code_gym.grading.gates.GATES`), per program and then per candidate:
- original: the program verifies whole (every record of the program and its spec check passes),
  and the audit finds nothing in it as a task's reference;
- flaky: it does so in each of `reruns` runs, back to back;
- runtime: each of those runs within half the tasks' test timeout;
- fails: the candidate (the program with the variant's annotations taken out) resolves but does
  not verify: some record passing with the reference fails (FAIL_TO_PASS);
- regions: every hunk of the reference patch is needed: the reference with one hunk's annotations
  taken out must fail. A hunk that is not needed is put back into the given program (the task asks
  only for what the proof needs), and the candidate is checked again; one left with nothing to add
  is refused here;
- leak: the statement holds no annotation taken out.
The tasks that pass go through the grader's check of the whole test set (grading.builder.place_tasks),
as every language's do.
"""
from __future__ import annotations

import json
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from code_gym.grading import audit as integrity
from code_gym.grading.builder import (MANIFEST_NAME, BuildError, BuildReport, Candidate, Outcome, Rejection,
                                      check_all, grow, outcome_manifest, place_tasks)
from code_gym.grading.gates import MIN_LEAK_CHARS
from code_gym.grading.grade import GradeResult, grade
from code_gym.languages.dafny.runner import DEFAULT_COMMAND
from code_gym.languages.dafny.source import SourceError
from code_gym.languages.dafny.spec import spec_check
from code_gym.languages.dafny.builder.strip import KIND_NAMES, Annotation, Variant, annotations, strip, variants
from code_gym.tasks.loaders.folder import task_id, write_task
from code_gym.tasks.task import Task
from code_gym.workspace.diffs import file_diff

SPEC_DIR = "spec"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


@dataclass(frozen=True)
class EnvOptions:
    """Dafny tasks have no project environment: the verifier is the system's (Debian's `dafny`)."""


@dataclass(frozen=True)
class BuildOptions:
    timeout: float = 120.0  # the tasks' test timeout in seconds (a verifier run): task.toml [timeouts] tests
    command_timeout: float = 60.0  # the tasks' agent command timeout
    reruns: int = 3  # runs of the whole program that must all verify
    remove_bodies: bool = True  # make variants that take lemmas' bodies out
    max_candidates: int | None = None  # per program; None: every variant
    workers: int = 2  # verifier runs at once
    isolation: str = "auto"
    progress: bool = True
    test_command: str = DEFAULT_COMMAND  # the tasks' verifier call (its /timeLimit bounds each member)
    environment: EnvOptions = EnvOptions()


@dataclass(frozen=True)
class Place:
    path: str  # the program file
    qualname: str  # the members whose annotations the candidate takes out


@dataclass(frozen=True)
class Stripping:
    """A candidate's change as grading.builder's manifest reads one: the variant taken out."""
    variant: Variant
    function: Place

    @property
    def operator(self) -> str:
        return f"strip-{self.variant.name}"


@dataclass(frozen=True)
class Program:
    name: str  # its file name, the one file of each task's repo
    text: str  # the verified program: every task's reference
    description: str  # its leading comment
    key: str  # the id its tasks' ids start with


def read_program(path: Path) -> Program:
    """The program in `path` (a .dfy file); BuildError when it is not one."""
    if path.suffix != ".dfy" or not path.is_file():
        raise BuildError(f"{path}: not a .dfy file: give a verified Dafny program (one file)")
    text = path.read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return Program(path.name, text, " ".join(lines).strip(), task_id(f"dafny-{path.stem}"))


class _Runs:
    """The verifier runs of one program through the grader. A program text's run is remembered
    (a hunk check may ask again for a candidate's text), except the reference's: each rerun is fresh."""

    def __init__(self, base: Task, program: Program, options: BuildOptions, slots):
        self.base, self.program, self.options, self.slots = base, program, options, slots
        self.seen: dict[str, GradeResult] = {}
        self.lock = threading.Lock()

    def fresh(self, text: str) -> GradeResult:
        with self.slots:
            return grade(self.base, {self.program.name: text.encode()}, isolation=self.options.isolation,
                         canaries=False, probes=False, audit=False)

    def __call__(self, text: str) -> GradeResult:
        with self.lock:
            known = self.seen.get(text)
        if known is None:
            known = self.fresh(text)
            with self.lock:
                self.seen[text] = known
        return known


def build_tasks(source: str | Path, out: str | Path, options: BuildOptions = BuildOptions(), bar=None,
                slots=None) -> BuildReport:
    """Tasks from the verified program in `source` (a .dfy file) into `out`: one per variant that
    passes the gates (see the module docstring); `out/manifest.json` says what was rejected and why."""
    started = time.monotonic()
    program = read_program(Path(source))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        found = annotations(program.text)
        spec = spec_check(program.text, f"../{program.name}", program.name)
    except SourceError as error:
        raise BuildError(f"{source}: {error}") from None
    if not found:
        raise BuildError(f"{source}: the program has no proof annotation to take out (loop invariants, assertions, "
                         "lemma calls, lemma bodies)")
    chosen = variants(found, options.remove_bodies)[: options.max_candidates]
    candidates = [Candidate(task_id(f"{program.key}-{v.name}"), (Stripping(v, _place(program, v)),), frozenset())
                  for v in chosen]
    slots = slots or threading.BoundedSemaphore(max(1, options.workers))
    base = _write(staging / f"{program.key}-base", program, spec, strip(program.text, found), "", [], [], options)
    runs = _Runs(base, program, options, slots)
    own_bar = bar is None
    bar = tqdm(total=0, desc=f"candidate tasks of {program.name}", unit="task", disable=not options.progress) \
        if own_bar else bar
    grow(bar, len(candidates))
    try:
        reference, baseline = _reference_runs(runs, options)
        if isinstance(reference, Rejection):
            outcomes = [Outcome(c, Rejection(c.id, reference.gate, reference.reason)) for c in candidates]
            bar.update(len(candidates))
        else:
            outcomes = _distinct(check_all(lambda c: _evaluate(c, program, spec, reference, runs, staging, options),
                                           candidates, options.workers, bar), candidates)
        tasks, rejections = place_tasks(outcomes, out, options.workers, options.isolation, slots)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if own_bar:
            bar.close()
    manifest = {**outcome_manifest(candidates, tasks, rejections), "program": program.name,
                "baseline": {"duration": round(baseline, 2), "reruns": options.reruns},
                "duration": round(time.monotonic() - started, 1)}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return BuildReport(out, tasks, rejections, manifest)


def _place(program: Program, variant: Variant) -> Place:
    return Place(program.name, ", ".join(dict.fromkeys(a.member for a in variant.annotations)))


def _reference_runs(runs: _Runs, options: BuildOptions) -> tuple[GradeResult | Rejection, float]:
    """The program's `reruns` runs (its last result, or the first gate it fails) and their longest time."""
    result, longest = None, 0.0
    for n in range(1, options.reruns + 1):
        result = runs.fresh(runs.program.text)
        longest = max(longest, result.duration)
        if result.timed_out or result.duration > options.timeout / 2:
            return Rejection("*", "runtime", f"run {n} of the program took {result.duration:.1f}s, over half the "
                             f"{options.timeout:g}s test timeout"), longest
        if not result.resolved:
            failing = sorted(t for t, o in result.tests.items() if o != "passed")
            gate = "original" if n == 1 else "flaky"
            return Rejection("*", gate, f"run {n} of the program does not verify: {result.summary()}; failing: "
                             f"{', '.join(failing[:4])}"), longest
    return result, longest


def _evaluate(candidate: Candidate, program: Program, spec: str, reference: GradeResult, runs: _Runs,
              staging: Path, options: BuildOptions) -> Outcome:
    variant = candidate.change.variant
    kept = list(variant.annotations)
    given = strip(program.text, kept)
    result = runs(given)
    if not result.run_ok:
        return _reject(candidate, "fails", f"the verifier's run of the program without them does not work: "
                                           f"{result.summary()}")
    unresolved = [t for t, o in result.tests.items() if "::" not in t and o != "passed"]
    if unresolved:
        return _reject(candidate, "fails", f"the program without them does not resolve ({', '.join(unresolved)})")
    needed = _needed(program, kept, given, runs)
    if needed != kept:
        if not needed:
            return _reject(candidate, "regions", "no part of what it takes out is needed alone: the program verifies "
                                                 "with any one hunk of it put back")
        kept, given = needed, strip(program.text, needed)
        result = runs(given)
    passing = {t for t, o in reference.tests.items() if o == "passed"}
    fail_to_pass = sorted(t for t in passing if result.tests.get(t) != "passed")
    if not fail_to_pass:
        return _reject(candidate, "fails", "the program verifies without them")
    statement = _statement(program, kept, fail_to_pass)
    leaked = _leak(statement, kept)
    if leaked:
        return _reject(candidate, "leak", f"the statement holds {leaked!r}")
    task = _write(staging / candidate.id, program, spec, given, statement, fail_to_pass,
                  sorted(passing - set(fail_to_pass)), options, candidate.id)
    findings = integrity.audit({program.name: program.text.encode()}, task)
    if findings:
        return _reject(candidate, "original", f"the audit flags the reference: {findings[0].rule}: {findings[0].message}")
    return Outcome(candidate, task, frozenset(fail_to_pass))


def _distinct(outcomes: list[Outcome], candidates: list[Candidate]) -> list[Outcome]:
    """`outcomes` in the candidates' order, where two accepted ones give the same program (once
    their unneeded hunks were put back) the later refused."""
    order = {c.id: n for n, c in enumerate(candidates)}
    out, given = [], {}
    for outcome in sorted(outcomes, key=lambda o: order[o.candidate.id]):
        task = outcome.result
        if isinstance(task, Task):
            text = (task.repo / outcome.candidate.change.function.path).read_text(encoding="utf-8")
            if text in given:
                shutil.rmtree(task.root, ignore_errors=True)
                outcome = _reject(outcome.candidate, "regions", f"it gives the same program as {given[text]} once "
                                                                   "the hunks no proof needs are put back")
            else:
                given[text] = task.id
        out.append(outcome)
    return out


def _needed(program: Program, kept: list[Annotation], given: str, runs: _Runs) -> list[Annotation]:
    """The annotations of `kept` in hunks of the reference patch the proof needs: the reference
    without that hunk's annotations does not verify. One hunk alone is needed (the candidate's own check)."""
    patch = file_diff(program.name, given.encode(), program.text.encode()).text
    hunks = [(int(first), int(first) + int(count if count is not None else 1) - 1)
             for first, count in _HUNK.findall(patch)]
    if len(hunks) < 2:
        return kept
    needed = []
    for first, last in hunks:
        inside = [a for a in kept if first <= a.line and a.end_line <= last]
        if inside and not runs(strip(program.text, inside)).resolved:
            needed += inside
    return sorted(needed, key=lambda a: a.start)


def _statement(program: Program, kept: list[Annotation], fail_to_pass: list[str]) -> str:
    kinds = [KIND_NAMES[k] for k in KIND_NAMES if any(a.kind == k for a in kept)]
    failing = sorted({t.split("::", 1)[1] for t in fail_to_pass if " > " not in t and t.startswith(program.name)})
    what = (", ".join(kinds[:-1]) + " and " + kinds[-1]) if len(kinds) > 1 else kinds[0]
    lines = [f"Prove `{program.name}`." + (f" {program.description}" if program.description else ""),
             f"Its code and specification are correct, but it does not verify: its {what} were taken out. "
             f"The members that fail now: {', '.join(f'`{m}`' for m in failing) or 'see the verifier'}.",
             "Add what Dafny needs (loop invariants and decreases clauses, assertions, lemma calls, proofs of the "
             "given lemmas; new lemmas with their proofs are welcome) until the whole file verifies with "
             "`dafny /compile:0`.",
             "Do not change the specification: the requires, ensures, reads, modifies and decreases clauses of "
             "the given methods and lemmas, the bodies of functions and predicates, and the executable code stay as "
             "given. `assume`, `{:axiom}`, `{:verify false}`, lemmas without a body and `decreases *` are not proofs."]
    return "\n".join(lines) + "\n"


def _leak(statement: str, kept: list[Annotation]) -> str | None:
    squashed = "".join(statement.split())
    for a in kept:
        for line in a.text.splitlines():
            code = "".join(line.split())
            if len(code) >= MIN_LEAK_CHARS and code in squashed:
                return line.strip()
    return None


def _write(dest: Path, program: Program, spec: str, given: str, statement: str, fail_to_pass: list[str],
           pass_to_pass: list[str], options: BuildOptions, tid: str = "") -> Task:
    spec_path = f"{SPEC_DIR}/{Path(program.name).stem}.spec.dfy"
    manifest = {
        "id": tid or f"{program.key}-base",
        "kind": "feature",
        "language": "dafny",
        "statement": statement or f"Prove `{program.name}`.\n",
        "visible_tests": [],
        "hidden_tests": [spec_path],
        "protected_paths": [f"{SPEC_DIR}/"],
        "test_command": options.test_command,
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": pass_to_pass,
        "timeouts": {"command": options.command_timeout, "tests": options.timeout},
        "source": {"builder": "code-gym", "program": program.name},
    }
    patch = file_diff(program.name, given.encode(), program.text.encode()).text

    def fill_repo(repo: Path) -> None:
        (repo / program.name).write_text(given, encoding="utf-8")

    return write_task(dest, manifest, fill_repo, {spec_path: spec}, patch)


def _reject(candidate: Candidate, gate: str, reason: str) -> Outcome:
    return Outcome(candidate, Rejection(candidate.id, gate, reason[:500]))
