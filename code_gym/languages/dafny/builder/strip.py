"""A verified program's proof annotations, and the program with some of them taken out: the way
DafnyBench made its tasks (pure functions over Dafny source; parsing is `source`'s).

An annotation is what a proof adds to code and specification:
- `invariant` and `decreases` clauses of a loop (a loop's `modifies` is a frame: kept);
- `assert` statements (with their `by` blocks), `calc` blocks and `forall` statements (a proof
  of a quantified fact, often by lemma calls inside);
- lemma calls: statements that call a lemma of the program;
- the body of a lemma (taken out, it leaves `{ }`: the lemma's requires/ensures stay, so the
  task is to prove it; a lemma without a body is what the audit refuses).
Everything else stays: the specification (requires, ensures, reads, modifies and decreases of
members, function and predicate bodies), the executable code, ghost variables and comments. An
annotation inside another one (a call in a `forall` statement's block) goes with it.

`variants` names subsets of a program's annotations that each make a task: all of them, each
kind alone, each member's, each loop's.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from code_gym.languages.dafny import source
from code_gym.languages.dafny.probes import statement_kind
from code_gym.languages.dafny.source import Program

LOOP_KINDS = ("invariant", "decreases")
STATEMENT_KINDS = ("assert", "calc", "forall", "call")
# a variant's kinds of annotation: the groups a task can leave out together
GROUPS = {
    "invariants": frozenset(LOOP_KINDS),
    "assertions": frozenset({"assert", "calc", "forall"}),
    "lemma-calls": frozenset({"call"}),
    "lemma-bodies": frozenset({"body"}),
}
# what a task's statement calls each kind
KIND_NAMES = {"invariant": "loop invariants", "decreases": "loop termination measures (decreases)",
              "assert": "assertions", "calc": "calculations (calc)", "forall": "forall proof statements",
              "call": "lemma calls", "body": "the proofs (bodies) of lemmas"}


@dataclass(frozen=True)
class Annotation:
    kind: str  # invariant | decreases | assert | calc | forall | call | body
    member: str  # the qualified name of the member it is in
    loop: int  # loop clauses: the loop's place among the member's loops (1-based); 0 otherwise
    start: int  # the characters it spans, [start, end); a body: what lies between its braces
    end: int
    line: int  # the lines it spans (1-based, inclusive)
    end_line: int
    text: str  # as written

    def within(self, other: Annotation) -> bool:
        return other is not self and other.start <= self.start and self.end <= other.end


@dataclass(frozen=True)
class Variant:
    name: str  # "all", "invariants", "member-InsertionSort", "loop-2-InsertionSort", ...
    annotations: tuple[Annotation, ...]  # what it takes out

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KIND_NAMES if any(a.kind == k for a in self.annotations))


def annotations(text: str) -> list[Annotation]:
    """Every proof annotation of the program `text`, in source order (a lemma's body before what
    is inside it). SourceError when it cannot be read."""
    program = source.parse(text)
    lemmas = {m.name for m in program.members if m.kind in source.PROOF_KINDS}
    found: list[Annotation] = []
    for member in program.members:
        if member.body is None or member.spec_function or member.kind == "iterator":
            continue
        opening, closing = member.body
        if member.kind in source.PROOF_KINDS and closing > opening + 1:
            found.append(_body(program, member.qualified, opening, closing))
        for k, loop in enumerate(source.loops(program, opening, closing), 1):
            found += [_span(program, c.keyword, member.qualified, k, c.first, c.last) for c in loop.clauses
                      if c.keyword in LOOP_KINDS]
        for statement in source.statements(program, opening):
            kind = statement_kind(program, statement, lemmas)
            if kind == "ghost" and _proof_forall(program, statement):
                kind = "forall"
            if kind in STATEMENT_KINDS:
                found.append(_span(program, kind, member.qualified, 0, statement.first, statement.last))
    bodies = [a for a in found if a.kind == "body"]
    statements = [a for a in found if a.kind in STATEMENT_KINDS]
    found = [a for a in found if a.kind == "body" or not any(a.within(s) for s in statements)]
    return sorted(found, key=lambda a: (a.start, a not in bodies))


def _proof_forall(program: Program, statement: source.Statement) -> bool:
    """A `forall` statement that proves a fact, not one that assigns (`forall i | ... { a[i] := 0; }`)."""
    tokens = program.tokens[statement.first:statement.last + 1]
    return tokens[0].text == "forall" and not any(t.text == ":=" and t.kind == "op" for t in tokens)


def _span(program: Program, kind: str, member: str, loop: int, first: int, last: int) -> Annotation:
    a, b = program.tokens[first], program.tokens[last]
    return Annotation(kind, member, loop, a.start, b.end, a.line, b.line, program.text[a.start:b.end])


def _body(program: Program, member: str, opening: int, closing: int) -> Annotation:
    a, b = program.tokens[opening], program.tokens[closing]
    return Annotation("body", member, 0, a.end, b.start, a.line, b.line, program.text[a.end:b.start])


def strip(text: str, chosen: Iterable[Annotation]) -> str:
    """`text` without the `chosen` annotations. A line left with nothing but spaces goes (with the
    comment that ends it: it spoke of the annotation); a lemma's body becomes `{` and `}` on two
    lines (`}` where it was)."""
    out, pos = [], 0
    for a in outermost(chosen):
        start, end, keep = _cut(text, a)
        out += [text[pos:start], keep]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def outermost(chosen: Iterable[Annotation]) -> list[Annotation]:
    """The annotations of `chosen` inside none of the others, in source order: what taking them out cuts."""
    chosen = list(chosen)
    return sorted((a for a in chosen if not any(a.within(o) for o in chosen)), key=lambda a: a.start)


def _cut(text: str, a: Annotation) -> tuple[int, int, str]:
    """(start, end, replacement) of what taking `a` out changes."""
    line_start = text.rfind("\n", 0, a.start) + 1
    line_end = text.find("\n", a.end)
    line_end = len(text) if line_end < 0 else line_end
    if a.kind == "body":
        closing_line = text.rfind("\n", 0, a.end) + 1
        indent = text[closing_line:a.end] if not text[closing_line:a.end].strip() else ""
        return a.start, a.end, "\n" + indent
    rest = text[a.end:line_end].strip()
    if not text[line_start:a.start].strip() and (not rest or rest.startswith("//")):
        return line_start, min(line_end + 1, len(text)), ""
    start = a.start
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return start, a.end, ""


def variants(found: list[Annotation], lemma_bodies: bool = True) -> list[Variant]:
    """The subsets of a program's annotations that make tasks, each named, none empty and no two
    taking out the same text: every annotation ("all"), each group of kinds alone (GROUPS), those outside lemmas (the
    lemmas' proofs given: "methods"), each member's when the proof spans several members, each
    loop's clauses when there are several loops. Without
    `lemma_bodies`, no variant takes a lemma's body out."""
    if not lemma_bodies:
        found = [a for a in found if a.kind != "body"]
    candidates = [Variant("all", tuple(found))]
    candidates += [Variant(name, tuple(a for a in found if a.kind in kinds)) for name, kinds in GROUPS.items()]
    lemmas = {a.member for a in found if a.kind == "body"}
    candidates.append(Variant("methods", tuple(a for a in found if a.member not in lemmas)))
    members = list(dict.fromkeys(a.member for a in found))
    if len(members) > 1:
        candidates += [Variant(f"member-{m}", tuple(a for a in found if a.member == m)) for m in members]
    loops = list(dict.fromkeys((a.member, a.loop) for a in found if a.loop))
    if len(loops) > 1:
        candidates += [Variant(f"loop-{loop}-{member}", tuple(a for a in found if a.member == member and a.loop == loop))
                       for member, loop in loops]
    out, seen = [], set()
    for variant in candidates:
        key = frozenset((a.start, a.end) for a in outermost(variant.annotations))
        if key and key not in seen:
            seen.add(key)
            out.append(variant)
    return out
