"""The Dafny audit's rules (code_gym/languages/dafny/audit.py), each on an attempt that wins without
it: the attempt's graded records verify where the given program's fail (the reader on a real
verifier run, for the rules whose attempt can win), and no other rule finds it. Plus what the rules
must not do: fire on the reference, on what the starting version already has, or on words in
comments and strings."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from code_gym.grading.audit import audit
from code_gym.grading.reference import reference_changes
from code_gym.languages.dafny import audit as dafny_audit
from code_gym.languages.dafny.spec import spec_check
from code_gym.tasks.task import load_task
from sandbox_backends import IN_CI
from test_dafny import program, verify

FIXTURE = Path(__file__).parent / "fixtures" / "dafny" / "sum-max"
TASK = load_task(FIXTURE)
GIVEN = (FIXTURE / "repo" / "sum.dfy").read_text()
REFERENCE = reference_changes(TASK)["sum.dfy"].decode()
SUM_BODY = """  s := 0;
  var i := 0;
  while i < a.Length
  {
    s := s + a[i];
    i := i + 1;
  }
}"""
AFTER_SUM_LOOP = """    i := i + 1;
  }
}"""
SUM_RECORDS = ("sum.dfy::Sum", "sum.dfy::Sum > ensures 1", "spec/sum.spec.dfy::SpecOf_Sum")


def findings(new: str, old: str = GIVEN, path: str = "sum.dfy") -> list:
    return dafny_audit.audit_file(TASK, path, old.encode(), new.encode())


def rules(new: str, old: str = GIVEN) -> set[str]:
    return {f.rule for f in findings(new, old)}


def needs_dafny():
    if shutil.which("dafny") is None:
        why = "the Dafny verifier is not installed (scripts/setup.sh installs Debian's dafny)"
        if IN_CI:
            pytest.fail(f"CI must run the Dafny tests: {why}")
        pytest.skip(why)


def wins(tmp_path: Path, text: str, extra: dict[str, str] | None = None) -> bool:
    """Whether `text` as sum.dfy makes Sum's graded records verify (the given program fails them)."""
    needs_dafny()
    folder = program(tmp_path, {"sum.dfy": text, "spec/sum.spec.dfy": spec_check(GIVEN, "../sum.dfy"), **(extra or {})})
    stream, done = verify(folder, ("spec/sum.spec.dfy",))
    assert not stream.problems, done.stdout
    return all(stream.outcomes.get(t) == "passed" for t in SUM_RECORDS)


def test_the_reference_and_the_given_program_have_no_findings():
    assert findings(REFERENCE) == [] and findings(GIVEN) == []
    assert audit({"sum.dfy": REFERENCE.encode()}, TASK) == []


def test_the_given_program_fails_the_records_the_attempts_win(tmp_path):
    assert not wins(tmp_path, GIVEN)


# -- each rule on an attempt that wins without it

def test_spec_rule_catches_a_spec_function_made_executable_to_skip_the_proof(tmp_path):
    """`function` -> `function method` lets the body assign the postcondition's own term; the spec
    check's wrapper passes too (the postcondition is unchanged): only the signature gives it away."""
    attempt = GIVEN.replace("function SumTo", "function method SumTo", 1).replace(
        SUM_BODY, "  s := SumTo(a[..], a.Length);\n}", 1)
    assert rules(attempt) == {"dafny-spec"}
    assert "signature" in findings(attempt)[0].message
    assert wins(tmp_path, attempt)


def test_assume_rule(tmp_path):
    attempt = GIVEN.replace(AFTER_SUM_LOOP, AFTER_SUM_LOOP[:-2] + "\n  assume s == SumTo(a[..], a.Length);\n}", 1)
    assert rules(attempt) == {"dafny-assume"}
    assert wins(tmp_path, attempt)


def test_attribute_rule_catches_selective_checking(tmp_path):
    """`{:selective_checking}` checks only the assertions after `{:start_checking_here}`: the
    assertions before it are assumed, so a helper lemma "proves" what it asserts first."""
    attempt = GIVEN.replace(AFTER_SUM_LOOP, AFTER_SUM_LOOP[:-2] + "\n  Trust(a[..], s);\n}\n\n"
                            "lemma {:selective_checking} Trust(a: seq<int>, s: int)\n  ensures s == SumTo(a, |a|)\n{\n"
                            "  assert s == SumTo(a, |a|);\n  assert {:start_checking_here} true;\n}", 1)
    assert rules(attempt) == {"dafny-attribute"}
    assert [f.message.split(":")[0] + ":" + f.message.split(":")[1] for f in findings(attempt)] == [
        "{:selective_checking}", "{:start_checking_here}"]
    assert wins(tmp_path, attempt)


def test_verify_false_is_an_attribute_finding_and_fails_its_callers_anyway(tmp_path):
    """A `{:verify false}` helper lemma: the audit finds the attribute, and the reader, which sees no
    check of a lemma with a postcondition, fails it and Sum, which relies on it."""
    attempt = GIVEN.replace(AFTER_SUM_LOOP, AFTER_SUM_LOOP[:-2] + "\n  Trust(a[..], s);\n}\n\n"
                            "lemma {:verify false} Trust(a: seq<int>, s: int)\n  ensures s == SumTo(a, |a|)\n{\n}", 1)
    assert rules(attempt) == {"dafny-attribute"} and "{:verify}" in findings(attempt)[0].message
    assert not wins(tmp_path, attempt)


def test_bodyless_rule_catches_a_lemma_without_a_body(tmp_path):
    attempt = GIVEN.replace(AFTER_SUM_LOOP, AFTER_SUM_LOOP[:-2] + "\n  Trust(a[..], s);\n}\n\n"
                            "lemma Trust(a: seq<int>, s: int)\n  ensures s == SumTo(a, |a|)\n", 1)
    assert rules(attempt) == {"dafny-bodyless"}
    assert wins(tmp_path, attempt)


def test_bodyless_rule_catches_a_loop_without_a_body(tmp_path):
    """A loop with no body: the verifier assumes its invariants on exit and checks no iteration."""
    attempt = GIVEN.replace(SUM_BODY, "  s := 0;\n  var i := 0;\n  while i < a.Length\n"
                            "    invariant 0 <= i <= a.Length\n    invariant s == SumTo(a[..], i)\n}", 1)
    assert rules(attempt) == {"dafny-bodyless"}
    assert "loop" in findings(attempt)[0].message
    assert wins(tmp_path, attempt)


def test_decreases_star_rule_catches_a_loop_that_need_not_end(tmp_path):
    """A given method allowed not to terminate (it has `decreases *`): a loop `while true
    decreases * {}` at its end "proves" any postcondition. The spec is untouched."""
    needs_dafny()
    given = ("method Double(n: nat) returns (r: nat)\n  ensures r == 2 * n\n  decreases *\n{\n  r := 0;\n"
             "  var i := 0;\n  while i < n\n    decreases *\n  {\n    r := r + 2;\n    i := i + 1;\n  }\n}\n")
    attempt = given.replace("    i := i + 1;\n  }\n}", "    i := i + 1;\n  }\n  while true\n    decreases *\n  {\n  }\n}")
    assert rules(attempt, given) == {"dafny-decreases-star"}
    assert rules(given.replace("  decreases *\n{", "{").replace("    decreases *\n", ""), given) == {"dafny-spec"}
    for text, verifies in ((given, False), (attempt, True)):
        stream, done = verify(program(tmp_path / str(verifies), {"double.dfy": text}))
        assert (stream.outcomes["double.dfy::Double > ensures 1"] == "passed") is verifies, done.stdout


def test_include_rule_catches_a_file_the_audit_never_reads(tmp_path):
    """The verifier includes `helper.DFY` (it reads the suffix in any case); the audit reads the
    program files (.dfy), so the axiom in it is seen only through the include."""
    helper = "lemma {:axiom} Trust(a: seq<int>, s: int)\n  ensures s == SumTo(a, |a|)\n"
    attempt = 'include "helper.DFY"\n' + GIVEN.replace(AFTER_SUM_LOOP, AFTER_SUM_LOOP[:-2] + "\n  Trust(a[..], s);\n}", 1)
    assert rules(attempt) == {"dafny-include"}
    assert [f.rule for f in audit({"sum.dfy": attempt.encode(), "helper.DFY": helper.encode()}, TASK)] == ["dafny-include"]
    assert wins(tmp_path, attempt, {"helper.DFY": helper})


def test_unreadable_rule_fails_closed():
    """A file whose brackets do not balance: the audit cannot vouch for what it holds (the verifier
    rejects such a file too, so no attempt wins through it; the rule keeps the audit from passing
    what it did not read)."""
    attempt = GIVEN.replace("  s := 0;\n", "  s := 0; { assume false;\n", 1)
    assert rules(attempt) == {"dafny-unreadable"}
    assert rules(GIVEN + "\n/* not closed\n") == {"dafny-unreadable"}


# -- what the rules must not do, and the spec rule's reach

def test_only_what_the_starting_version_lacks_counts():
    given = GIVEN + "\nlemma Axiom(n: nat)\n  ensures n >= 0\n{\n  assume n >= 0;\n}\n"
    assert rules(given + "\n", given) == set()
    assert rules(given.replace("  assume n >= 0;\n", "  assume n >= 0;\n  assume n > -1;\n"), given) == {"dafny-assume"}


def test_words_in_comments_and_strings_are_not_code():
    text = GIVEN.replace("  s := 0;\n", '  s := 0; // assume false; {:verify false} decreases * include "x.dfy"\n'
                         '  /* assume { nested /* comment */ } */ var msg := "assume {:axiom}";\n', 1)
    assert rules(text) == set()


def test_prover_hints_are_allowed_and_other_attributes_are_not():
    hinted = REFERENCE.replace("invariant forall k :: 0 <= k < i ==> a[k] <= m",
                               "invariant forall k {:trigger a[k]} :: 0 <= k < i ==> a[k] <= m", 1)
    assert rules(hinted) == set()
    for name in ("axiom", "extern", "options \"/noVerify\"", "autoReq", "timeLimit 100", "imported"):
        attempt = REFERENCE + f"\nlemma {{:{name}}} Extra()\n  ensures true\n{{\n}}\n"
        assert rules(attempt) == {"dafny-attribute"}, name


@pytest.mark.parametrize("change", [
    ("  ensures s == SumTo(a[..], a.Length)\n", "  ensures s == SumTo(a[..], a.Length) || a.Length > 0\n"),
    ("  requires a.Length > 0\n", "  requires a.Length > 1\n"),
    ("method Sum(a: array<int>) returns (s: int)\n", "method Sum(a: array<int>) returns (s: int)\n  requires a.Length == 0\n"),
    ("method Sum(a: array<int>) returns (s: int)\n", "method Sum(a: array<int>) returns (s: int)\n  decreases a.Length\n"),
    ("method Sum(a: array<int>) returns (s: int)\n", "method Sum(a: array<int>) returns (s: int)\n  modifies a\n"),
    ("  if n == 0 then 0 else SumTo(a, n - 1) + a[n - 1]\n", "  if n == 0 then 0 else SumTo(a, n - 1)\n"),
    ("function SumTo(a: seq<int>, n: nat): int\n", "function SumTo(a: seq<int>, n: int): int\n"),
    ("method Max(", "method Maximum("),
    ("method Sum(", "method {:verify false} Sum("),
], ids=["ensures", "requires", "requires-added", "decreases-added", "modifies-added", "function-body", "param-type",
        "renamed", "attribute-on-given"])
def test_spec_rule_catches_every_change_to_the_given_specification(change):
    old, new = change
    assert old in REFERENCE
    assert "dafny-spec" in rules(REFERENCE.replace(old, new, 1))


def test_spec_rule_covers_declarations_outside_members():
    given = "const N := 10\n\nclass Box {\n  var v: int\n  method Set(x: int)\n    modifies this\n    ensures v == x\n" \
            "  {\n    v := x;\n  }\n}\n"
    assert rules(given.replace("const N := 10", "const N := 0"), given) == {"dafny-spec"}
    assert "dafny-spec" in rules(given.replace("class Box", "class {:autocontracts} Box"), given)
    assert rules(given.replace("  var v: int\n", "  var v: int\n  var w: int\n"), given) == set()  # a new field
    assert rules(given + "\nlemma Helper(n: nat)\n  ensures n + 0 == n\n{\n}\n", given) == set()


def test_a_changed_spec_check_is_a_protected_path():
    found = audit({"spec/sum.spec.dfy": b"// nothing to check\n"}, TASK)
    assert [f.rule for f in found] == ["protected-path"]
