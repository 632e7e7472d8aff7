"""The Dafny red team: attempts to make a task's program verify without proving it, each graded end
to end (`code_gym.grading.grade.grade`, the verifier in the sandbox with canaries) and paid by the
Dafny reward (`obligations`: the weighted fraction of the task's proof obligations discharged).

With its defence off (the audit's verdict ignored) an attempt earns more than the untouched
program, whose obligations all fail; with the audit on it gets a finding of the rule it names and
earns nothing (at or below the untouched program). The hidden spec check (spec/<name>.spec.dfy)
stays on throughout: an attempt that changes the given specification loses the check's records,
yet still earns more than the untouched program without the audit.

And no false positive: the audit finds nothing in any reference the builder can make from the
corpus (every variant of every program), nor in the bundled tasks' references.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.languages.dafny import audit as dafny_audit
from code_gym.languages.dafny.builder import CORPUS
from code_gym.languages.dafny.builder.strip import annotations, strip, variants
from code_gym.rewards import Submission, make_reward
from code_gym.tasks.task import Task, load_task
from sandbox_backends import IN_CI

ROOT = Path(__file__).resolve().parents[1]
BINARY_SEARCH = "dafny-binary-search-all"
DIV_MOD = "dafny-div-mod-all"
ARRAY_MAX = "dafny-array-max-all"
TASKS = (BINARY_SEARCH, DIV_MOD, ARRAY_MAX)
FILES = {BINARY_SEARCH: "binary_search.dfy", DIV_MOD: "div_mod.dfy", ARRAY_MAX: "array_max.dfy"}
BUNDLED = sorted(p.name for p in (ROOT / "tasks").glob("dafny-*"))


@dataclass(frozen=True)
class Attempt:
    """A cheating patch: `edit` turns the task's program into the attempt, `extra` adds files;
    `rules` are the audit findings it must give. `reader`: the grader's reader stops it too (it
    fails a member with postconditions the verifier never checked), so it is shown to win against
    the bare verifier's own verdict, the defence a grader without the reader would have."""
    name: str
    task: str
    how: str
    rules: frozenset[str]
    edit: Callable[[str], str]
    extra: tuple[tuple[str, str], ...] = ()
    reader: bool = False

    def changes(self, task: Task) -> dict[str, bytes]:
        path = FILES[self.task]
        out = {path: self.edit((task.repo / path).read_text()).encode()}
        return out | {p: text.encode() for p, text in self.extra}


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert text.count(old) == 1, f"the anchor {old!r} is not in the program once"
        return text.replace(old, new)
    return edit


def append(tail: str, then: Callable[[str], str] = lambda t: t) -> Callable[[str], str]:
    return lambda text: then(text) + "\n" + tail


BS_START = "  var lo, hi := 0, a.Length;\n"
BS_POST = """  ensures -1 <= index < a.Length
  ensures 0 <= index ==> a[index] == key
  ensures index == -1 ==> forall k :: 0 <= k < a.Length ==> a[k] != key"""
FALSE_HELPER = "lemma Helper()\n  ensures false\n"
DM_AFTER_LOOP = "    r := r - d;\n  }\n}\n"
DM_LEMMA_BODY = "  ensures !Divides(d, n)\n{\n}\n"
MAX_LOOP = """  while i < a.Length
  {
    if a[i] > a[m] {
      m := i;
    }
    i := i + 1;
  }
"""

ATTEMPTS = [
    Attempt("assume-false", BINARY_SEARCH, "assume false at the top: everything after it holds",
            frozenset({"dafny-assume"}), replace(BS_START, "  assume false;\n" + BS_START)),
    Attempt("assume-postcondition", DIV_MOD, "assume DivMod's postcondition after its loop",
            frozenset({"dafny-assume"}), replace(DM_AFTER_LOOP, "    r := r - d;\n  }\n  assume n == q * d + r;\n}\n")),
    Attempt("assume-in-a-new-lemma", ARRAY_MAX, "a new lemma proves false by assuming it; MaxIndex calls it",
            frozenset({"dafny-assume"}),
            append("lemma Trust()\n  ensures false\n{\n  assume false;\n}\n",
                   replace("  m := 0;\n", "  Trust();\n  m := 0;\n"))),
    Attempt("verify-false", BINARY_SEARCH, "{:verify false} on the method: nothing of it is checked",
            frozenset({"dafny-attribute"}), replace("method BinarySearch(", "method {:verify false} BinarySearch("),
            reader=True),
    Attempt("verify-false-on-a-lemma", DIV_MOD, "{:verify false} on the lemma the task asks to prove (it times out as given)",
            frozenset({"dafny-attribute"}),
            replace("lemma RemainderRulesOutDivisor(", "lemma {:verify false} RemainderRulesOutDivisor("), reader=True),
    Attempt("axiom-lemma", DIV_MOD, "an {:axiom} lemma without a body states what the given lemma must prove",
            frozenset({"dafny-attribute", "dafny-bodyless"}),
            append("lemma {:axiom} Trusted(n: nat, d: nat, q: nat, r: nat)\n"
                   "  requires d > 0 && n == q * d + r && 0 < r < d\n  ensures !Divides(d, n)\n",
                   replace(DM_LEMMA_BODY, "  ensures !Divides(d, n)\n{\n  Trusted(n, d, q, r);\n}\n"))),
    Attempt("bodyless-lemma", DIV_MOD, "a lemma without a body ensures false; DivMod calls it first",
            frozenset({"dafny-bodyless"}),
            append(FALSE_HELPER, replace("  q, r := 0, n;\n", "  Helper();\n  q, r := 0, n;\n"))),
    Attempt("false-through-a-bodyless-helper", BINARY_SEARCH,
            "a lemma with a body proves false by calling a body-less one; the method calls the first",
            frozenset({"dafny-bodyless"}),
            append(FALSE_HELPER + "\nlemma Boom()\n  ensures false\n{\n  Helper();\n}\n",
                   replace(BS_START, "  Boom();\n" + BS_START))),
    Attempt("bodyless-method", ARRAY_MAX, "a method without a body ensures false; MaxIndex calls it",
            frozenset({"dafny-bodyless"}),
            append("method Halt()\n  ensures false\n", replace("  m := 0;\n", "  Halt();\n  m := 0;\n"))),
    Attempt("bodyless-loop", ARRAY_MAX,
            "the loop loses its body: its invariants hold on entry and are assumed on exit, never maintained",
            frozenset({"dafny-bodyless"}),
            replace(MAX_LOOP, "  while i < a.Length\n    invariant 1 <= i <= a.Length && 0 <= m < i\n"
                              "    invariant forall k :: 0 <= k < i ==> a[k] <= a[m]\n"
                              "    invariant forall k :: 0 <= k < m ==> a[k] < a[m]\n")),
    Attempt("bodyless-forall", BINARY_SEARCH,
            "a forall statement without a body states the not-found postcondition; the method returns -1",
            frozenset({"dafny-bodyless"}),
            replace(BS_START, "  forall k | 0 <= k < a.Length\n    ensures a[k] != key;\n  return -1;\n" + BS_START)),
    Attempt("extern-oracle", BINARY_SEARCH, "an {:extern} method without a body promises the answer",
            frozenset({"dafny-attribute", "dafny-bodyless"}),
            append("method {:extern} Oracle(a: array<int>, key: int) returns (index: int)\n  requires Sorted(a)\n"
                   + BS_POST + "\n", replace(BS_START, "  index := Oracle(a, key);\n  return;\n" + BS_START))),
    Attempt("include-axioms", BINARY_SEARCH, "an included file of the attempt's own holds a body-less lemma",
            frozenset({"dafny-include"}),
            lambda text: 'include "axioms.dfy"\n\n' + replace(BS_START, "  Helper();\n" + BS_START)(text),
            extra=(("axioms.dfy", FALSE_HELPER),)),
    Attempt("decreases-star", BINARY_SEARCH,
            "the method may not terminate (decreases *) and starts with a loop that never ends",
            frozenset({"dafny-decreases-star", "dafny-spec"}),
            lambda text: replace(BS_POST, BS_POST + "\n  decreases *")(
                replace(BS_START, "  while true\n    decreases *\n  {\n  }\n" + BS_START)(text))),
    Attempt("requires-false", BINARY_SEARCH, "a precondition that never holds: the body is never checked",
            frozenset({"dafny-spec"}), replace("  requires Sorted(a)\n", "  requires Sorted(a)\n  requires false\n")),
    Attempt("weakened-ensures", DIV_MOD, "DivMod's postcondition loses the part its loop needs an invariant for",
            frozenset({"dafny-spec"}), replace("  ensures n == q * d + r && 0 <= r < d\n", "  ensures 0 <= r < d\n")),
    Attempt("predicate-made-false", BINARY_SEARCH,
            "the precondition's predicate Sorted is redefined as false (the spec check restates it, so cannot tell)",
            frozenset({"dafny-spec"}),
            replace("  forall i, j :: 0 <= i < j < a.Length ==> a[i] <= a[j]\n", "  false\n")),
]


def needs_dafny():
    if shutil.which("dafny") is None:
        why = "the Dafny verifier is not installed (scripts/setup.sh installs Debian's dafny)"
        if IN_CI:
            pytest.fail(f"CI must run the Dafny tests: {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {task_id: load_task(ROOT / "tasks" / task_id) for task_id in TASKS}


_UNTOUCHED: dict[str, float] = {}


def earned(task: Task, changes: dict, result, integrity: str = "enforce") -> float:
    return make_reward("obligations", integrity=integrity).outcome(Submission(task, changes, result))[0]


def untouched(task: Task) -> float:
    """What the task's program earns as given (its proof obligations all fail: 0)."""
    if task.id not in _UNTOUCHED:
        _UNTOUCHED[task.id] = earned(task, {}, grade(task, {}, probes=False))
    return _UNTOUCHED[task.id]


def bare_errors(task: Task, changes: dict[str, bytes], folder: Path) -> int:
    """The errors and time-outs the bare verifier reports on the task's program with `changes`,
    verified through its spec check as the grader selects it (no reader, no canaries)."""
    shutil.copytree(task.repo, folder)
    shutil.copytree(task.hidden_dir, folder, dirs_exist_ok=True)
    for path, data in changes.items():
        (folder / path).write_bytes(data)
    done = subprocess.run(["dafny", "/compile:0", "/timeLimit:20", "/verifyAllModules", *task.hidden_tests], cwd=folder,
                          capture_output=True, text=True, timeout=600)
    summary = re.findall(r"verifier finished with \d+ verified, (\d+) errors?(?:, (\d+) time outs?)?", done.stdout)
    assert summary, done.stdout[-2000:]
    errors, time_outs = summary[-1]
    return int(errors) + int(time_outs or 0)


def test_the_table_is_well_formed():
    assert len(ATTEMPTS) >= 15
    assert len({a.name for a in ATTEMPTS}) == len(ATTEMPTS)
    assert all(a.rules <= set(dafny_audit.RULES) and a.task in TASKS for a in ATTEMPTS)


@pytest.mark.parametrize("task_id", TASKS)
def test_the_reference_passes_the_audit_and_verifies_where_the_given_program_does_not(tasks, task_id):
    needs_dafny()
    task = tasks[task_id]
    changes = reference_changes(task)
    result = grade(task, changes, probes=False)
    assert result.resolved and result.integrity == [], result.output[-2000:]
    assert earned(task, changes, result) == 1.0
    assert untouched(task) <= 0.0


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=[a.name for a in ATTEMPTS])
def test_the_attempt_wins_with_the_audit_off_and_the_audit_names_it(tasks, attempt, tmp_path):
    """One graded run: its verifier's verdict is what the attempt earns without the audit, its
    findings the audit's."""
    needs_dafny()
    task = tasks[attempt.task]
    changes = attempt.changes(task)
    result = grade(task, changes, probes=False)
    found = {f.rule for f in result.integrity}
    assert attempt.rules <= found, f"{attempt.name}: expected {sorted(attempt.rules)}, found {result.integrity}"
    assert all(f.path in changes and f.message for f in result.integrity)
    without_audit = earned(task, changes, result, integrity="off")
    if attempt.reader:
        assert without_audit <= untouched(task), f"{attempt.name}: the reader alone lets it earn {without_audit}"
        assert bare_errors(task, changes, tmp_path / "attempt") < bare_errors(task, {}, tmp_path / "given")
    else:
        assert without_audit > untouched(task), f"{attempt.name}: {without_audit}\n{result.output[-3000:]}"
    assert earned(task, changes, result) <= untouched(task)
    assert make_reward("binary").outcome(Submission(task, changes, result))[0] == 0.0


# -- no false positives


def test_the_audit_finds_nothing_in_any_reference_the_builder_can_make():
    """Every variant of every corpus program: the program with the variant's annotations taken out
    is a task's starting version, the whole program its reference."""
    task = load_task(ROOT / "tasks" / BUNDLED[0])
    checked = 0
    for path in sorted(CORPUS.glob("*.dfy")):
        text = path.read_text()
        for variant in variants(annotations(text)):
            given = strip(text, variant.annotations)
            found = dafny_audit.audit_file(task, path.name, given.encode(), text.encode())
            assert found == [], f"{path.name} ({variant.name}): {found}"
            checked += 1
    assert checked >= 150


@pytest.mark.parametrize("task_id", BUNDLED)
def test_the_audit_finds_nothing_in_a_bundled_reference(task_id):
    from code_gym.grading.audit import audit

    task = load_task(ROOT / "tasks" / task_id)
    assert audit(reference_changes(task), task) == []
