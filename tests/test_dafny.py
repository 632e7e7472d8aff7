"""Dafny tasks end to end: the reader's records from real verifier runs (verified, failed, timed
out, a file that does not parse), the obligations reward's partial credit, the reference proof's
probes, grading through `grade` in bubblewrap and Docker, an episode through
gym.make("CodeRepo-v0"), the hidden spec check, and credit's brace blocks for .dfy diffs.

The verifier is Debian's `dafny` (scripts/setup.sh installs it); without it these tests skip,
and in CI (CI=true) they fail instead."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import credit
from code_gym import languages
from code_gym.actions.parse import ToolCall
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.actions.tools import run_tool
from code_gym.grading import records
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.languages.dafny import probes as dafny_probes
from code_gym.languages.dafny import runner, source
from code_gym.languages.dafny.spec import spec_check
from code_gym.rewards.base import Submission
from code_gym.rewards.spec import make_reward
from code_gym.tasks.task import load_task
from sandbox_backends import IN_CI, require

FIXTURE = Path(__file__).parent / "fixtures" / "dafny" / "sum-max"
TASK = load_task(FIXTURE)
GIVEN = (FIXTURE / "repo" / "sum.dfy").read_text()
REFERENCE = reference_changes(TASK)["sum.dfy"].decode()
SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
SUM_LOOP = """  while i < a.Length
  {
    s := s + a[i];"""
MAX_LOOP = """  while i < a.Length
  {
    if a[i] > m {"""


@pytest.fixture(autouse=True)
def needs_dafny():
    if shutil.which("dafny") is None:
        why = "the Dafny verifier is not installed (scripts/setup.sh installs Debian's dafny)"
        if IN_CI:
            pytest.fail(f"CI must run the Dafny tests: {why}")
        pytest.skip(why)


def verify(folder: Path, files: tuple[str, ...] = (), command: str = runner.DEFAULT_COMMAND,
           results: Path | None = None) -> tuple[records.Records, subprocess.CompletedProcess]:
    """Run the grader's reader on the host (no sandbox) in `folder`, reading its records as the grader does."""
    reader = folder.parent / f"{folder.name}-reader"
    reader.mkdir(exist_ok=True)
    laid, _ = runner.DafnyReporter().setup(str(reader), 0, "", {})
    for name, text in laid.items():
        (reader / name).write_text(text)
    spec = {"command": command.split(), "files": list(files), "results": str(results or "")}
    read_end, write_end = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != "CODE_GYM_RECORDS"} | {"CODE_GYM_RECORDS": f"{write_end} n0nce"}
    try:
        done = subprocess.run(["python3", "-I", str(reader / "verify.py"), json.dumps(spec)], cwd=folder, env=env,
                              pass_fds=(write_end,), capture_output=True, text=True, timeout=600)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        raw = stream.read()
    return records.read(raw, "n0nce"), done


def program(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "repo"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def with_sum_proof(text: str) -> str:
    return text.replace(SUM_LOOP, SUM_LOOP.replace("\n  {", "\n    invariant 0 <= i <= a.Length\n"
                                                                "    invariant s == SumTo(a[..], i)\n  {"), 1)


def with_half_max_proof(text: str) -> str:
    """Max's invariants for its first postcondition only: the second cannot go through."""
    return text.replace(MAX_LOOP, MAX_LOOP.replace("\n  {", "\n    invariant 1 <= i <= a.Length\n"
                                                            "    invariant forall k :: 0 <= k < i ==> a[k] <= m\n  {"), 1)


# -- the reader's records

def test_records_per_member_and_postcondition_from_a_real_run(tmp_path):
    """The untouched program: Sum and Max fail with their postconditions, SumTo verifies; a
    proof of Sum and half of Max's: Sum and its postcondition verify, Max's first postcondition is
    discharged (nothing but the other postcondition fails in Max) while Max itself is not."""
    stream, done = verify(program(tmp_path, {"sum.dfy": GIVEN}))
    assert done.returncode == 1 and stream.end == 1 and not stream.problems, done.stdout + done.stderr
    assert stream.outcomes == {"sum.dfy::SumTo": "passed", "sum.dfy::Sum": "failed", "sum.dfy::Sum > ensures 1": "failed",
                               "sum.dfy::Max": "failed", "sum.dfy::Max > ensures 1": "failed",
                               "sum.dfy::Max > ensures 2": "failed"}
    assert "postcondition might not hold" in stream.messages["sum.dfy::Sum"]
    assert "Prover error" not in done.stdout and "Dafny program verifier finished with" in done.stdout

    partial = with_half_max_proof(with_sum_proof(GIVEN))
    stream, _ = verify(program(tmp_path / "partial", {"sum.dfy": partial}))
    assert stream.outcomes["sum.dfy::Sum"] == stream.outcomes["sum.dfy::Sum > ensures 1"] == "passed"
    assert stream.outcomes["sum.dfy::Max > ensures 1"] == "passed"
    assert stream.outcomes["sum.dfy::Max"] == stream.outcomes["sum.dfy::Max > ensures 2"] == "failed"


def test_a_failed_assertion_makes_every_postcondition_of_its_member_fail(tmp_path):
    """`assert false` fails, and the verifier assumes it afterwards, so every postcondition of the
    member is reported as holding: the reader gives them no credit."""
    cheat = GIVEN.replace("  s := 0;\n", "  s := 0;\n  assert false;\n", 1)
    stream, done = verify(program(tmp_path, {"sum.dfy": cheat}))
    assert "postcondition" not in "".join(line for line in done.stdout.splitlines() if "sum.dfy(1" in line)
    assert stream.outcomes["sum.dfy::Sum"] == "failed" and "assertion" in stream.messages["sum.dfy::Sum"]
    assert stream.outcomes["sum.dfy::Sum > ensures 1"] == "failed"
    assert "vacuously" in stream.messages["sum.dfy::Sum > ensures 1"]


HARD = ("lemma Hard(a: int, b: int, c: int)\n  requires a > 0 && b > 0 && c > 0\n"
        "  ensures a * a * a + b * b * b != c * c * c\n{\n}\n\nlemma Easy(n: nat)\n  ensures n + 1 > n\n{\n}\n")


@pytest.mark.parametrize("limit", ["/timeLimit:1", "/rlimit:1000000"])
def test_a_solver_limit_is_a_failed_record_not_an_error(tmp_path, limit):
    """A lemma the solver can neither prove nor refute (Fermat for cubes) under a tiny time limit
    (the solver times out, or gives up: both "failed") or a resource limit (below about 10^6 Z3
    answers neither lemma, so the limit is what an easy lemma fits in)."""
    stream, done = verify(program(tmp_path, {"hard.dfy": HARD}), command=f"dafny /compile:0 {limit}")
    assert done.returncode == 1 and stream.end == 1 and not stream.problems, done.stdout
    assert stream.outcomes["hard.dfy::Hard"] == stream.outcomes["hard.dfy::Hard > ensures 1"] == "failed"
    if limit.startswith("/rlimit"):
        assert stream.messages["hard.dfy::Hard"].startswith("verification out of resource")
    assert stream.outcomes["hard.dfy::Easy"] == "passed"


def test_a_timed_out_implementation_reads_as_failed_with_why():
    """The verifier's own lines for a time-out (as dafny 2.3 printed them here), read back."""
    from code_gym.languages.dafny.reader import verify as reader

    out = ("Verifying Impl$$_module.__default.Hard ...\n  [1.886 s, 1 proof obligation]  timed out\n"
           "hard.dfy(1,6): Verification of 'Impl$$_module.__default.Hard' timed out after 1 seconds\n"
           "hard.dfy(4,0): Timed out on BP5003: A postcondition might not hold on this return path.\n"
           "hard.dfy(3,32): Related location: This is the postcondition that might not hold.\n"
           "Dafny program verifier finished with 0 verified, 0 errors, 1 time out\n")
    outcome = reader.read_output(out)
    assert [(b.name, b.status, len(b.errors)) for b in outcome.blocks] == [("Impl$$_module.__default.Hard", "timed out", 1)]
    program = source.parse(HARD)
    declared = reader.Declared("hard.dfy", program.member("Hard"), program)
    records = reader.member_records(declared, outcome.blocks, True)
    assert records[0]["outcome"] == "failed" and records[0]["message"].startswith("verification timed out")
    assert records[1] == {"id": "hard.dfy::Hard > ensures 1", "outcome": "failed",
                          "message": "the implementation's verification came to no answer"}
    unchecked = reader.member_records(declared, [], True)  # a postcondition the verifier never looked at
    assert [r["outcome"] for r in unchecked] == ["failed", "failed"]


def test_a_file_that_does_not_parse_is_a_collect_record_and_the_others_still_verify(tmp_path):
    """The verifier stops at a parse error for the whole run; the reader verifies the files that
    neither are nor include the broken one again, so they (the canaries) keep their records."""
    broken = GIVEN.replace("s := s + a[i];", "s := s + ;", 1)
    folder = program(tmp_path, {"sum.dfy": broken, "spec/sum.spec.dfy": spec_check(GIVEN, "../sum.dfy"),
                                "spec/ok.dfy": "lemma Fine(n: nat)\n  ensures n >= 0\n{\n}\n"})
    stream, done = verify(folder, ("spec/sum.spec.dfy", "spec/ok.dfy"))
    assert done.returncode == 1 and stream.end == 1 and not stream.problems, done.stdout
    assert stream.outcomes["sum.dfy"] == "error" and "sum.dfy(" in stream.messages["sum.dfy"]
    assert stream.outcomes["spec/ok.dfy::Fine"] == "passed"
    assert not any(t.startswith(("sum.dfy::", "spec/sum.spec.dfy::")) for t in stream.outcomes)


def test_included_members_are_filed_under_their_own_file(tmp_path):
    folder = program(tmp_path, {"sum.dfy": REFERENCE, "spec/sum.spec.dfy": spec_check(GIVEN, "../sum.dfy")})
    stream, done = verify(folder, ("spec/sum.spec.dfy",))
    assert done.returncode == 0 and stream.end == 0, done.stdout
    assert set(stream.outcomes.values()) == {"passed"}
    assert {"sum.dfy::Sum", "sum.dfy::Max > ensures 2", "spec/sum.spec.dfy::SpecOf_Max"} <= set(stream.outcomes)


def test_boogie_names_map_back_to_dafny_members():
    from code_gym.languages.dafny.reader import verify as reader

    assert reader.boogie_key("Impl$$_module.__default.Sum") == ("", "", "Sum")
    assert reader.boogie_key("CheckWellformed$$_0_M.C.my__meth") == ("M", "C", "my_meth")
    assert reader.boogie_key("Impl$$_1_A.Cell.__ctor") == ("A", "Cell", "_ctor")
    assert reader.boogie_key("Impl$$_0_B.__default.L_kx_q") == ("B", "", "L'x?")


# -- the spec check

def test_the_hidden_spec_check_is_the_generators_and_catches_a_weakened_specification(tmp_path):
    assert spec_check(GIVEN, "../sum.dfy", "sum.dfy") == (FIXTURE / "hidden/spec/sum.spec.dfy").read_text()
    weaker = REFERENCE.replace("  ensures exists k :: 0 <= k < a.Length && a[k] == m\n", "  ensures true\n", 1)
    folder = program(tmp_path, {"sum.dfy": weaker, "spec/sum.spec.dfy": spec_check(GIVEN, "../sum.dfy")})
    stream, _ = verify(folder, ("spec/sum.spec.dfy",))
    assert stream.outcomes["sum.dfy::Max"] == "passed"  # the program proves what it now claims ...
    assert stream.outcomes["spec/sum.spec.dfy::SpecOf_Max"] == "failed"  # ... which is less than was given


# -- grading, the reward and the probes

@pytest.mark.parametrize("isolation", ["bwrap", "docker"])
def test_untouched_fails_and_reference_verifies_with_records_canaries_and_probes(isolation):
    require(isolation)
    untouched = grade(TASK, {}, isolation=isolation)
    assert untouched.canaries and not untouched.canary and not untouched.integrity, untouched.output[-2000:]
    assert all(untouched.tests[t] == "failed" for t in TASK.fail_to_pass), untouched.tests
    assert all(untouched.tests[t] == "passed" for t in TASK.pass_to_pass), untouched.tests
    assert untouched.probes.total == 5 and untouched.probes.passed == 0 and not untouched.resolved
    fixed = grade(TASK, reference_changes(TASK), isolation=isolation)
    assert not fixed.canary and not fixed.integrity and not fixed.tampered, fixed.output[-2000:]
    assert set(fixed.tests) == set(TASK.fail_to_pass + TASK.pass_to_pass)
    assert set(fixed.tests.values()) == {"passed"} and fixed.resolved, fixed.tests
    assert fixed.probes.passed == fixed.probes.total == 5
    reward = make_reward({"obligations": 0.75, "probes": 0.25})
    assert reward.outcome(Submission(TASK, {}, untouched))[0] == 0.0
    assert reward.outcome(Submission(TASK, reference_changes(TASK), fixed))[0] == 1.0


def test_partial_proofs_earn_partial_reward_weighted_by_the_given_specification():
    """Sum proven, Max's first postcondition discharged: f2p counts 3 of 5 obligations; the
    obligations reward weighs the postconditions 2 and the members 1: (1 + 2 + 2) / (1 + 2 + 1 + 2 + 2)."""
    changes = {"sum.dfy": with_half_max_proof(with_sum_proof(GIVEN)).encode()}
    result = grade(TASK, changes, isolation="auto")
    assert not result.integrity and result.run_ok and not result.resolved, result.output[-2000:]
    value = make_reward("obligations").outcome(Submission(TASK, changes, result))[0]
    assert value == pytest.approx(5 / 8)
    assert make_reward("f2p").outcome(Submission(TASK, changes, result))[0] == pytest.approx(3 / 5)
    assert make_reward("binary").outcome(Submission(TASK, changes, result))[0] == 0.0
    partial_probes = result.probes
    assert 0 < partial_probes.passed < partial_probes.total  # Sum's two invariants hold, Max's do not


def test_a_proof_that_leaves_the_references_way_earns_less_through_the_probes():
    """A candidate that changes Sum's loop guard (`i != a.Length`) and proves it: every obligation
    verifies and the audit finds nothing, so it is resolved, but the reference's invariants have
    no loop `while i < a.Length` to go into: the probes component, and the reward, drop."""
    rewritten = REFERENCE.replace("while i < a.Length\n    invariant 0 <= i <= a.Length\n    invariant s ==",
                                  "while i != a.Length\n    invariant 0 <= i <= a.Length\n    invariant s ==", 1)
    changes = {"sum.dfy": rewritten.encode()}
    result = grade(TASK, changes, isolation="auto")
    assert result.resolved and not result.integrity, result.output[-2000:]
    assert result.probes.total == 5 and result.probes.passed == 3
    assert all("no loop `while i < a . Length`" in f for f in result.probes.failures)
    default = make_reward(None)  # f2p 0.75 + probes 0.25
    assert default.outcome(Submission(TASK, changes, result))[0] == pytest.approx(0.75 + 0.25 * 3 / 5)


def test_a_probe_that_does_not_resolve_in_the_candidate_fails_and_the_rest_are_checked(tmp_path):
    """The reader blanks out a probe the verifier cannot resolve (a name the candidate lacks) and
    verifies the probe file again (here a probe file in a process of its own: not "merged")."""
    folder = program(tmp_path, {"sum.dfy": REFERENCE})
    text = REFERENCE.replace("    invariant s == SumTo(a[..], i)\n",
                             "    invariant s == SumTo(a[..], i)\n\n    invariant total == s\n\n", 1)
    (folder / "sum_probes.dfy").write_text(text)
    line = text.splitlines().index("    invariant total == s") + 1
    held = text.splitlines().index("    invariant s == SumTo(a[..], i)") + 1
    results = tmp_path / "results"
    results.mkdir()
    (results / dafny_probes.MANIFEST).write_text(json.dumps({"file": "sum_probes.dfy", "program": "sum.dfy", "probes": [
        {"id": "sum_probes.dfy::Sum > invariant 1.9", "member": "Sum", "own": "Sum", "lines": [line, line]},
        {"id": "sum_probes.dfy::Sum > invariant 1.2", "member": "Sum", "own": "Sum", "lines": [held, held]}]}))
    stream, done = verify(folder, ("sum.dfy",), results=results)
    outcomes = json.loads((results / dafny_probes.OUTCOMES).read_text())
    assert outcomes["sum_probes.dfy::Sum > invariant 1.9"]["outcome"] == "failed"
    assert "does not resolve" in outcomes["sum_probes.dfy::Sum > invariant 1.9"]["message"]
    assert outcomes["sum_probes.dfy::Sum > invariant 1.2"] == {"outcome": "passed"}
    assert stream.outcomes["sum_probes.dfy::Sum > invariant 1.2"] == "passed"


def test_probes_are_the_annotations_the_reference_adds():
    made = dafny_probes.make_probes(TASK)
    assert [p.id for p in made.probes] == ["Sum > invariant 1.1", "Sum > invariant 1.2", "Max > invariant 1.1",
                                           "Max > invariant 1.2", "Max > invariant 1.3"]
    assert made.probes[1].text == "invariant s == SumTo ( a [ .. ] , i )" and made.probes[1].guard == "i < a . Length"
    assert made.census(("sum.dfy::Sum",)) == {"sum.dfy::Sum": (2, 0)}
    candidate = source.parse(GIVEN.replace("  s := 0;\n", "  s := 0;\n  assert s == 0;\n", 1))
    text, placed, missing = dafny_probes.probe_text(candidate, source.parse(REFERENCE), made)
    assert not missing and [p["lines"] for p in placed][:1] == [[text.splitlines().index(
        "    invariant 0 <= i <= a . Length") + 1] * 2]


def test_statement_probes_go_before_the_same_executable_statement():
    """An assertion and a lemma call of the reference: inserted into the candidate's matching loop
    body before the statement that follows them in the reference."""
    given = ("lemma Step(n: nat)\n  ensures n + 1 > n\n{\n}\n\nmethod Count(n: nat) returns (c: nat)\n  ensures c == n\n"
             "{\n  c := 0;\n  while c < n\n  {\n    c := c + 1;\n  }\n}\n")
    reference = given.replace("  {\n    c := c + 1;", "    invariant c <= n\n  {\n    Step(c);\n    assert c < n;\n"
                              "    c := c + 1;", 1)
    made = dafny_probes.ProbeSet(tuple(dafny_probes.member_probes(source.parse(given), source.parse(reference),
                                                                  source.parse(reference).member("Count"))))
    assert [(p.kind, p.block, p.before) for p in made.probes] == [
        ("invariant", "", ""), ("call", "loop 1", "c := c + 1"), ("assert", "loop 1", "c := c + 1")]
    text, placed, missing = dafny_probes.probe_text(source.parse(given), source.parse(reference), made)
    lines = text.splitlines()
    assert not missing and lines.index("    Step ( c ) ;") < lines.index("    assert c < n ;") < lines.index("    c := c + 1;")


# -- the env and credit

def test_an_episode_verifies_with_run_tests_and_the_reference_earns_the_full_reward():
    env = gym.make("CodeRepo-v0", task=TASK)
    env.reset(seed=0)
    result = run_tool(env.unwrapped.ctx, ToolCall("run_tests", {}))
    assert result.records is not None, result.output[-2000:]
    assert result.records.tests["sum.dfy::Sum"] == "failed" and result.records.tests["sum.dfy::SumTo"] == "passed"
    assert "postcondition might not hold" in result.output
    env.step(hermes(patch_to_calls(TASK.reference_patch, TASK.repo)))
    _, reward, terminated, _, info = env.step(SUBMIT)
    env.close()
    assert terminated and reward == pytest.approx(1.0), info


def test_dafny_diffs_split_into_member_and_loop_units():
    diff = (
        "diff --git a/sum.dfy b/sum.dfy\n--- a/sum.dfy\n+++ b/sum.dfy\n@@ -12,8 +12,17 @@ method Sum(a: array<int>)\n"
        "   s := 0;\n   var i := 0;\n   while i < a.Length\n+    invariant 0 <= i <= a.Length\n"
        "+    invariant s == SumTo(a[..], i)\n   {\n-    s := s + a[i];\n+    s := s + a[i] + 0;\n"
        "+    assert s == s;\n     i := i + 1;\n   }\n }\n+\n+lemma Helper(n: nat)\n+  ensures n + 0 == n\n+{\n"
        "+  assert n == n;\n+}\n")
    units = credit.split_diff(diff, levels=("syntax",), min_syntax_lines=2)
    texts = [units.unit_text(u) for u in range(units.n_units)]
    assert any("invariant 0 <= i" in t and "assert s == s;" in t and "Helper" not in t for t in texts), texts
    assert any(t.startswith("lemma Helper") and "assert n == n;" in t and "invariant" not in t for t in texts), texts


def test_the_adapter_reads_dafny_without_the_verifier():
    dafny = languages.get("dafny")
    assert dafny.enclosing_definition(REFERENCE.encode(), [14, 15]) == "Sum"
    assert dafny.static_check("sum.dfy", None, REFERENCE.encode()).compiles
    assert not dafny.static_check("sum.dfy", None, b"method M() {").compiles
    with pytest.raises(ValueError, match="not a Dafny verifier call"):
        dafny.test_run("python -m pytest", (), "/results")


def test_a_helper_lemma_that_does_not_verify_lends_nothing_to_its_callers(tmp_path):
    """A new lemma claiming the postcondition, with a failed proof: Dafny still lets Sum use its
    postcondition, and the lemma has no graded record of its own to lose; the reader fails every
    member that relies on it (Max, which does not, keeps its own verdict)."""
    attempt = with_sum_proof(GIVEN).replace("    invariant s == SumTo(a[..], i)\n", "", 1).replace(
        "    i := i + 1;\n  }\n}", "    i := i + 1;\n  }\n  Claim(a[..], s);\n}\n\nlemma Claim(a: seq<int>, s: int)\n"
        "  ensures s == SumTo(a, |a|)\n{\n}", 1)
    stream, done = verify(program(tmp_path, {"sum.dfy": attempt}))
    assert stream.outcomes["sum.dfy::Claim"] == "failed", done.stdout
    sum_lines = range(source.parse(attempt).member("Sum").line, source.parse(attempt).member("Sum").end_line + 1)
    errors = [int(line.split("(")[1].split(",")[0]) for line in done.stdout.splitlines() if ": Error" in line]
    assert errors and not any(n in sum_lines for n in errors)  # Sum has no error of its own
    assert stream.outcomes["sum.dfy::Sum"] == stream.outcomes["sum.dfy::Sum > ensures 1"] == "failed"
    assert stream.messages["sum.dfy::Sum"] == "relies on Claim, which does not verify"
    assert stream.outcomes["sum.dfy::SumTo"] == "passed"


def test_the_bars_of_a_length_end_a_clause_or_a_guard_before_a_body():
    text = ("method M(s: seq<int>) returns (n: nat)\n  requires |s| > 0\n  ensures n <= |s|\n{\n  n := 0;\n"
            "  while n < |s|\n  {\n    if n < |s| {\n      n := n + 1;\n    }\n  }\n}\n")
    parsed = source.parse(text)
    member = parsed.member("M")
    assert member.body is not None and [c.text for c in member.clauses] == ["requires | s | > 0", "ensures n <= | s |"]
    (loop,) = source.loops(parsed, *member.body)
    assert loop.guard == "n < | s |" and loop.body is not None
    assert [dafny_probes.head(parsed, s) for s in source.statements(parsed, member.body[0])] == [
        "n := 0", "while n < | s |", "if n < | s |", "n := n + 1"]


def test_probes_in_the_references_own_proof_structure_are_optional():
    """A lemma the given program leaves empty: the reference's case split is its own, so a
    candidate that proves the lemma another way is not asked for it; a given loop's probes are."""
    given = ("function Sum(n: nat): nat { if n == 0 then 0 else n + Sum(n - 1) }\n\n"
             "lemma SumBound(n: nat)\n  ensures Sum(n) <= n * n\n{\n}\n\n"
             "method Total(n: nat) returns (t: nat)\n  ensures t == Sum(n)\n{\n  t := 0;\n  var i := 0;\n"
             "  while i < n\n  {\n    i := i + 1;\n    t := t + i;\n  }\n}\n")
    reference = given.replace("{\n}\n\nmethod", "{\n  if n > 0 {\n    SumBound(n - 1);\n  }\n}\n\nmethod", 1).replace(
        "  while i < n\n  {", "  while i < n\n    invariant i <= n && t == Sum(i)\n  {", 1)
    before, after = source.parse(given), source.parse(reference)
    made = [p for m in ("SumBound", "Total") for p in dafny_probes.member_probes(before, after, after.member(m))]
    assert [(p.id, p.required) for p in made] == [("SumBound > call 1", False), ("Total > invariant 1.1", True)]
