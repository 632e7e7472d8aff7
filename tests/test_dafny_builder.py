"""The Dafny task builder (code_gym/languages/dafny/builder/): the annotations it finds and takes
out (pure functions over source), its corpus of verified programs, and the gates end to end with
the real verifier through the grader and the CLI."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from code_gym import languages
from code_gym.apps.cli import main
from code_gym.grading.builder import BuildError
from code_gym.grading.revalidate import revalidate
from code_gym.languages.dafny import source
from code_gym.languages.dafny.builder import CORPUS, expand_sources, read_as_folder_of_projects
from code_gym.languages.dafny.builder.strip import Annotation, annotations, strip, variants
from code_gym.tasks.task import load_task_dir
from sandbox_backends import IN_CI

PROGRAMS = sorted(CORPUS.glob("*.dfy"))

EXAMPLE = """\
// Examples of every kind of annotation.

function Sum(s: seq<int>): int
{
  if |s| == 0 then 0 else Sum(s[..|s| - 1]) + s[|s| - 1]
}

lemma SumAppend(s: seq<int>, x: int)
  ensures Sum(s + [x]) == Sum(s) + x
{
  assert (s + [x])[..|s + [x]| - 1] == s;
}

lemma Nothing(n: nat)
  ensures n >= 0
{
}

method Total(a: array<int>) returns (t: int)
  ensures t == Sum(a[..])
{
  t := 0;
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant t == Sum(a[..i])  // the sum so far
    decreases a.Length - i
  {
    assert a[..i + 1] == a[..i] + [a[i]];
    SumAppend(a[..i], a[i]);
    t := t + a[i];
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
  forall k | 0 <= k < a.Length
    ensures a[k] == a[k]
  {
    Nothing(k);
  }
  var b := new int[3];
  forall k | 0 <= k < 3 {
    b[k] := 0;
  }
  // a comment that says invariant or assert is not one
  print "assert false;"; calc { 1 + 1; 2; }
}
"""


def kinds(found: list[Annotation]) -> list[tuple[str, str]]:
    return [(a.kind, a.member) for a in found]


def test_annotations_of_every_kind_in_source_order():
    found = annotations(EXAMPLE)
    assert kinds(found) == [("body", "SumAppend"), ("assert", "SumAppend"),
                            ("invariant", "Total"), ("invariant", "Total"), ("decreases", "Total"),
                            ("assert", "Total"), ("call", "Total"), ("assert", "Total"), ("forall", "Total"),
                            ("calc", "Total")]
    assert [a.text for a in found if a.kind == "invariant"] == ["invariant 0 <= i <= a.Length",
                                                                "invariant t == Sum(a[..i])"]
    assert [a.loop for a in found if a.member == "Total" and a.kind in ("invariant", "decreases")] == [1, 1, 1]
    assert "Nothing(k)" in found[-2].text  # a call inside a forall proof goes with it, not on its own
    assert not any("b[k] := 0" in a.text for a in found)  # a forall that assigns is code
    assert not any(a.member == "Nothing" for a in found)  # an empty body has nothing to take out


def test_taking_everything_out_keeps_the_specification_code_and_comments():
    stripped = strip(EXAMPLE, annotations(EXAMPLE))
    assert "invariant" not in stripped.replace("says invariant", "")
    assert "decreases" not in stripped and "calc" not in stripped and "SumAppend(a" not in stripped
    assert "  assert a[..a.Length]" not in stripped and "ensures a[k] == a[k]" not in stripped
    assert "lemma SumAppend(s: seq<int>, x: int)\n  ensures Sum(s + [x]) == Sum(s) + x\n{\n}\n" in stripped
    assert "  while i < a.Length\n  {\n    t := t + a[i];\n" in stripped
    assert 'print "assert false;";\n' in stripped and "// a comment that says invariant" in stripped
    assert "b[k] := 0;" in stripped and "if |s| == 0 then 0 else" in stripped
    assert annotations(stripped) == []
    before, after = source.parse(EXAMPLE), source.parse(stripped)
    assert [(m.qualified, m.signature, [c.text for c in m.clauses]) for m in before.members] == \
           [(m.qualified, m.signature, [c.text for c in m.clauses]) for m in after.members]


def test_an_annotation_sharing_its_line_goes_alone():
    calc = next(a for a in annotations(EXAMPLE) if a.kind == "calc")
    assert '  print "assert false;";\n}\n' in strip(EXAMPLE, [calc])
    inline = "method M() {\n  var x := 1; assert x == 1; x := 2;\n}\n"
    assert strip(inline, annotations(inline)) == "method M() {\n  var x := 1; x := 2;\n}\n"


def test_a_comment_ending_an_annotations_line_goes_with_it():
    found = annotations(EXAMPLE)
    second = [a for a in found if a.kind == "invariant"][1]
    assert "    invariant 0 <= i <= a.Length\n    decreases a.Length - i\n" in strip(EXAMPLE, [second])


def test_variants_are_named_distinct_and_never_empty():
    found = annotations(EXAMPLE)
    named = {v.name: v for v in variants(found)}
    # member-Total takes out what "methods" does, member-SumAppend what "lemma-bodies" does
    assert list(named) == ["all", "invariants", "assertions", "lemma-calls", "lemma-bodies", "methods"]
    assert {a.kind for a in named["invariants"].annotations} == {"invariant", "decreases"}
    assert {a.kind for a in named["assertions"].annotations} == {"assert", "calc", "forall"}
    assert {a.member for a in named["methods"].annotations} == {"Total"}
    assert not any(a.kind == "body" for v in variants(found, lemma_bodies=False) for a in v.annotations)
    assert all(v.annotations for v in named.values())
    one_loop = "method M(n: nat) {\n  var i := 0;\n  while i < n\n    invariant i <= n\n  {\n    i := i + 1;\n  }\n}\n"
    assert [v.name for v in variants(annotations(one_loop))] == ["all"]  # the others would be the same task


def test_loops_of_several_members_make_a_variant_each():
    text = (CORPUS / "insertion_sort.dfy").read_text()
    named = {v.name: v for v in variants(annotations(text))}
    assert {"loop-1-InsertionSort", "loop-2-InsertionSort"} <= set(named)
    inner = strip(text, named["loop-2-InsertionSort"].annotations)
    assert "invariant Sorted(a[..i])" in inner and "invariant 0 <= j <= i" not in inner


# -- the corpus


def test_the_corpus_has_at_least_30_programs_of_every_kind_asked_for():
    assert len(PROGRAMS) >= 30
    found = {p.stem: annotations(p.read_text()) for p in PROGRAMS}
    assert all(found.values()), [name for name, a in found.items() if not a]
    with_lemmas = [name for name, a in found.items() if {"body", "call"} <= {x.kind for x in a}]
    assert len(with_lemmas) >= 10, with_lemmas
    classes = [p.stem for p in PROGRAMS if re.search(r"^class \w+", p.read_text(), re.M)]
    assert {"bounded_stack", "ring_buffer", "bank_account"} <= set(classes)
    assert "predicate Valid()" in (CORPUS / "ring_buffer.dfy").read_text()


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_variant_of_a_corpus_program_keeps_its_specification(path):
    text = path.read_text()
    given = source.parse(text)
    for variant in variants(annotations(text)):
        stripped = source.parse(strip(text, variant.annotations))
        for before, after in zip(given.members, stripped.members, strict=True):
            assert (after.qualified, after.signature) == (before.qualified, before.signature)
            assert [c.text for c in after.clauses] == [c.text for c in before.clauses], (variant.name, before.name)
            if before.spec_function:
                assert given.joined(*before.body) == stripped.joined(*after.body)


def needs_dafny():
    if shutil.which("dafny") is None:
        why = "the Dafny verifier is not installed (scripts/setup.sh installs Debian's dafny)"
        if IN_CI:
            pytest.fail(f"CI must run the Dafny tests: {why}")
        pytest.skip(why)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_corpus_program_verifies(path):
    needs_dafny()
    done = subprocess.run(["dafny", "/compile:0", "/timeLimit:20", path.name], cwd=path.parent, capture_output=True,
                          text=True, timeout=300)
    summary = re.findall(r"Dafny program verifier finished with (\d+) verified, (\d+) errors?(.*)", done.stdout)
    assert summary and summary[-1][1] == "0" and not summary[-1][2].strip(), done.stdout[-2000:]


# -- sources


def test_sources_are_dfy_files_folders_of_them_and_lists(tmp_path):
    (tmp_path / "a.dfy").write_text("")
    (tmp_path / "b.dfy").write_text("")
    (tmp_path / "notes.txt").write_text("")
    listing = tmp_path / "list.txt"
    listing.write_text(f"{tmp_path / 'b.dfy'}  # the second\n\n{tmp_path / 'a.dfy'}\n")
    assert expand_sources([str(tmp_path)]) == [str(tmp_path / "a.dfy"), str(tmp_path / "b.dfy")]
    assert expand_sources([str(listing), str(tmp_path / "a.dfy")]) == [str(tmp_path / "b.dfy"), str(tmp_path / "a.dfy")]
    assert "each .dfy file" in read_as_folder_of_projects(str(tmp_path))
    assert read_as_folder_of_projects(str(tmp_path / "a.dfy")) is None
    with pytest.raises(BuildError, match="not a file or a folder"):
        expand_sources([str(tmp_path / "missing.dfy")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BuildError, match="holds no .dfy file"):
        expand_sources([str(tmp_path / "empty")])


def test_the_adapter_reaches_the_builder():
    builder = languages.get("dafny").builder
    assert builder.build_tasks and builder.revalidate and builder.GATES and builder.EnvOptions() is not None


# -- end to end: the gates with the real verifier, through the CLI

SMALL = """\
// The sum of the first n odd numbers, the largest element of an array, and a double.

function SumOdds(n: nat): nat
{
  if n == 0 then 0 else (2 * n - 1) + SumOdds(n - 1)
}

lemma SumOddsIsSquare(n: nat)
  ensures SumOdds(n) == n * n
{
  if n > 0 {
    SumOddsIsSquare(n - 1);
  }
}

method OddSum(n: nat) returns (s: nat)
  ensures s == n * n
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == i * i
  {
    s := s + 2 * i + 1;
    i := i + 1;
  }
}

method Double(x: int) returns (y: int)
  ensures y == 2 * x
{
  y := x + x;
  assert y == x + x;
}

method Max(a: array<int>) returns (m: int)
  requires a.Length > 0
  ensures forall k :: 0 <= k < a.Length ==> a[k] <= m
{
  m := a[0];
  var i := 1;
  while i < a.Length
    invariant 1 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] <= m
  {
    if a[i] > m {
      m := a[i];
    }
    i := i + 1;
  }
}
"""


def test_the_builder_keeps_only_what_the_proof_needs_and_its_tasks_revalidate(tmp_path, capsys):
    """Dafny proves SumOddsIsSquare by induction on its own and Double's assertion is idle: the
    variants taking out only those are refused (fails), the others get them back (regions) and
    then repeat a task already made (regions); what is left revalidates through the grader."""
    needs_dafny()
    (tmp_path / "small.dfy").write_text(SMALL)
    out = tmp_path / "out"
    code = main(["tasks", "build", "--language", "dafny", str(tmp_path / "small.dfy"), "--out", str(out),
                 "--workers", "2", "--timeout", "120"])
    assert code == 0, capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    gates = {r["candidate"]: r["gate"] for r in manifest["rejections"]}
    built = sorted(t["id"] for t in manifest["tasks"])
    assert built == ["dafny-small-all", "dafny-small-member-max", "dafny-small-member-oddsum"], manifest["rejections"]
    assert gates == {"dafny-small-assertions": "fails", "dafny-small-lemma-calls": "fails",
                     "dafny-small-lemma-bodies": "fails", "dafny-small-invariants": "regions",
                     "dafny-small-methods": "regions"}
    assert manifest["baseline"]["reruns"] == 3
    tasks = {t.id: t for t in load_task_dir(out)}
    every = tasks["dafny-small-all"]
    given = (every.repo / "small.dfy").read_text()
    assert "assert y == x + x;" in given and "SumOddsIsSquare(n - 1);" in given  # put back: not needed
    assert "invariant" not in given
    assert every.fail_to_pass == ("small.dfy::Max", "small.dfy::Max > ensures 1", "small.dfy::OddSum",
                                  "small.dfy::OddSum > ensures 1")
    assert "spec/small.spec.dfy::SpecOf_Max" in every.pass_to_pass
    assert "loop invariants" in every.statement and "`Max`, `OddSum`" in every.statement
    assert "invariant s == i * i" not in every.statement
    assert every.hidden_tests == ("spec/small.spec.dfy",) and every.protected_paths == ("spec/",)
    assert (every.root / "hidden" / "spec" / "small.spec.dfy").read_text().count("method SpecOf_") == 3
    report = revalidate(list(tasks.values()), runs=1, workers=2)
    assert report.fraction == 1.0, report.summary()


def test_a_program_that_does_not_verify_makes_no_task(tmp_path):
    needs_dafny()
    wrong = SMALL.replace("invariant s == i * i", "invariant s == i * i + 1")
    (tmp_path / "wrong.dfy").write_text(wrong)
    report = languages.get("dafny").builder.build_tasks(
        tmp_path / "wrong.dfy", tmp_path / "out", languages.get("dafny").builder.BuildOptions(progress=False))
    assert report.tasks == []
    assert {r.gate for r in report.rejections} == {"original"}
    assert "OddSum" in report.rejections[0].reason
