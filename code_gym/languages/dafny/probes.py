"""Probes from the reference proof: the reference's own annotations checked against the candidate.

A task's reference (solution.patch) adds proof annotations to the given program: loop invariants,
intermediate assertions, `calc` blocks and lemma calls. Each one the given program lacks is a probe.
At grading, `plant` copies the candidate's program into a probe file and inserts every probe
where it applies: a loop invariant into the candidate's matching loop (same member, the same
guard, the loop's place among the member's loops breaking ties), a statement into the matching
block, before the same next executable statement (or at the block's end). A probe whose place is
in the given program (a given loop or block) must find it in the candidate (a candidate that
rewrote that code fails it); one whose place is the reference's own proof structure (an `if` in a
lemma body the given program leaves empty) does not apply to a candidate that proves it otherwise,
and is left out of the count. Reference helpers the
candidate lacks (a lemma only the reference has) are appended, and the members without a probe
are marked `{:verify false}` in the copy (the graded run verifies them). The reader verifies the
probe file with the graded files, in a module of its own (reader/verify.py): a probe passes when no
error falls on its line, its member verifies whole with it, and the candidate's member verified on
its own in the graded run (else the untouched program plus the reference's annotations, which is
the reference, would pass); a probe that does not resolve in the candidate (a name it renamed) is
blanked out and the file verified again.

So a candidate that verifies the way the reference does passes them (the reference's invariants
are invariants of its loops too), and one that verifies through something else (a rewritten loop,
code that no longer computes what the reference's invariants describe) fails the probes that no
longer apply or hold. A probe of a member whose graded record is in FAIL_TO_PASS is a fix probe
(the untouched program fails it: its member does not verify); the others are regression probes.

Probes lower the `probes` reward component (`code_gym.rewards.probes`); they never make a Dafny
run unresolved ("resolved" is the unchanged specification fully verified) and withhold no credit
of a FAIL_TO_PASS record (a verifier's verdict has no inputs to special-case).
"""
from __future__ import annotations

import json
import posixpath
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path

from code_gym.grading.reference import reference_changes
from code_gym.languages.dafny import source
from code_gym.languages.dafny.source import Member, Program, SourceError
from code_gym.tasks.task import Task, TaskError

MANIFEST = "probes-manifest.json"  # the reader's names (reader/verify.py)
OUTCOMES = "probes.json"
GHOST_STARTS = frozenset({"assert", "assume", "calc", "reveal", "ghost", "forall"})


@dataclass(frozen=True)
class Probe:
    id: str  # "<member> > invariant 2.1", "<member> > assert 3", ...: the probe file's path goes before it
    member: str  # the qualified name of the member it sits in
    kind: str  # invariant | assert | call | calc
    text: str  # the annotation as the reference writes it (its tokens on one line)
    loop: int = 0  # invariants: the loop's place among the member's loops (1-based)
    guard: str = ""  # invariants: the loop's guard
    block: str = ""  # statements: the block it sits in ("body", "loop 2", or the head of its statement)
    before: str = ""  # statements: the head of the executable statement after it ("": the block's end)
    required: bool = True  # its place is in the given program (a given loop or block): a candidate must keep it


@dataclass(frozen=True)
class ProbeSet:
    probes: tuple[Probe, ...] = ()
    dropped: tuple[str, ...] = ()  # what could not be made, and why
    program: str = ""  # the program file the probes are for (repo-relative)
    helpers: tuple[str, ...] = ()  # the reference's top-level members' texts, by qualified name order
    helper_names: tuple[str, ...] = ()
    fail_to_pass: frozenset[str] = frozenset()  # members whose graded record is FAIL_TO_PASS

    @property
    def reason(self) -> str | None:
        if self.probes:
            return None
        return self.dropped[0] if self.dropped else "the reference adds no loop invariant, assertion or lemma call"

    def is_fix(self, probe: Probe) -> bool:
        return probe.member in self.fail_to_pass

    def census(self, tests: tuple[str, ...]) -> dict[str, tuple[int, int]]:
        """Per graded id: (fix probes, regression probes) of the member it belongs to."""
        out = {}
        for test in tests:
            member = test.partition("::")[2].split(" > ")[0]
            mine = [p for p in self.probes if p.member == member]
            fix = sum(self.is_fix(p) for p in mine)
            out[test] = (fix, len(mine) - fix)
        return out

    def without_fix_probes(self, tests: tuple[str, ...]) -> tuple[str, ...]:
        """None: a verified obligation needs no fix probe to be believed (nothing to special-case)."""
        return ()

    def why_no_fix_probe(self, test: str) -> str:
        return ""


# -- what the reference adds

def render(program: Program, first: int, last: int) -> str:
    """Tokens first..last on one line (an attribute's `{:` keeps its name glued)."""
    out = []
    for token in program.tokens[first:last + 1]:
        if out and out[-1].endswith("{:"):
            out[-1] += token.text
        else:
            out.append(token.text)
    return " ".join(out)


def head(program: Program, statement: source.Statement) -> str:
    """A statement up to its first block, loop clause or `;`: what identifies it across proofs."""
    tokens, i = program.tokens, statement.first
    while i <= statement.last:
        text = tokens[i].text
        if text in (";", "{") and tokens[i].kind == "op" or tokens[i].kind == "id" and text in source.LOOP_CLAUSES:
            break
        i = program.matching[i] + 1 if text in ("(", "[", "{:") else i + 1
    return render(program, statement.first, i - 1)


def _lemma_names(program: Program) -> set[str]:
    return {m.name for m in program.members if m.kind in source.PROOF_KINDS}


def statement_kind(program: Program, statement: source.Statement, lemmas: set[str]) -> str:
    """"assert", "calc", "call" (a lemma call), "ghost" (other proof-only statements) or "" (code)."""
    first = program.tokens[statement.first]
    if first.text in ("assert", "calc"):
        return first.text
    if first.text in GHOST_STARTS:
        return "ghost"
    i = statement.first
    while i + 2 <= statement.last and program.tokens[i + 1].text == ".":
        i += 2
    if program.tokens[i].text in lemmas and i + 1 <= statement.last and program.tokens[i + 1].text == "(":
        return "call"
    return ""


@dataclass
class Layout:
    """A member's loops and blocks as probes address them."""
    program: Program
    member: Member
    loops: list[source.Loop] = field(default_factory=list)
    statements: list[source.Statement] = field(default_factory=list)
    owners: dict[int, str] = field(default_factory=dict)  # a block's `{` index -> its name

    @classmethod
    def of(cls, program: Program, member: Member) -> "Layout":
        layout = cls(program, member, source.loops(program, *member.body), source.statements(program, member.body[0]))
        layout.owners[member.body[0]] = "body"
        for k, loop in enumerate(layout.loops):
            if loop.body is not None:
                layout.owners[loop.body[0]] = f"loop {k + 1}"
        seen: dict[str, int] = {}
        for block in sorted({s.block for s in layout.statements} - set(layout.owners)):
            parent = min((s for s in layout.statements if s.first < block <= s.last), key=lambda s: s.last - s.first,
                         default=None)
            name = head(program, parent) if parent else "block"
            seen[name] = seen.get(name, 0) + 1
            layout.owners[block] = f"{name} #{seen[name]}"
        return layout

    def children(self, block: int) -> list[source.Statement]:
        return [s for s in self.statements if s.block == block]


def member_probes(given: Program | None, reference: Program, member: Member) -> list[Probe]:
    """The annotations the reference's `member` has and the given version of it lacks."""
    layout = Layout.of(reference, member)
    before = given.member(member.qualified) if given else None
    old = Layout.of(given, before) if before is not None and before.body is not None else None
    lemmas = _lemma_names(reference)
    probes: list[Probe] = []
    for k, loop in enumerate(layout.loops):
        had = {c.text for c in old.loops[k].clauses} if old and k < len(old.loops) else set()
        invariants = [c for c in loop.clauses if c.keyword == "invariant"]
        for j, clause in enumerate(invariants):
            if clause.text not in had:
                probes.append(Probe(f"{member.qualified} > invariant {k + 1}.{j + 1}", member.qualified, "invariant",
                                    render(reference, clause.first, clause.last), k + 1, loop.guard))
    had_statements = [s.text for s in old.statements] if old else []
    counter: dict[str, int] = {}
    for block, owner in layout.owners.items():
        children = layout.children(block)
        for n, statement in enumerate(children):
            kind = statement_kind(reference, statement, lemmas)
            if kind not in ("assert", "calc", "call"):
                continue
            if statement.text in had_statements:
                had_statements.remove(statement.text)
                continue
            after = next((head(reference, s) for s in children[n + 1:] if not statement_kind(reference, s, lemmas)), "")
            counter[kind] = counter.get(kind, 0) + 1
            probes.append(Probe(f"{member.qualified} > {kind} {counter[kind]}", member.qualified, kind,
                                render(reference, statement.first, statement.last), block=owner, before=after))
    loops = _match_loops(layout, old)
    return [replace(p, required=old is not None and not isinstance(_insertion_point(given, old, p, loops), str))
            for p in probes]


def make_probes(task: Task) -> ProbeSet:
    """The task's probes, from its reference patch (no verifier run)."""
    try:
        changes = reference_changes(task)
    except TaskError as error:
        return ProbeSet(dropped=(str(error),))
    programs = [p for p, data in sorted(changes.items()) if p.endswith(".dfy") and data is not None
                and not task.is_protected(p)]
    if not programs:
        return ProbeSet(dropped=("the reference changes no program file",))
    path = programs[0]
    dropped = [f"{p}: only the first program file the reference changes ({path}) is probed" for p in programs[1:]]
    try:
        reference = source.parse(changes[path].decode("utf-8", "replace"))
        original = task.original_file(path)
        given = source.parse(original.decode("utf-8", "replace")) if original is not None else None
    except SourceError as error:
        return ProbeSet(dropped=(f"{path}: {error}",), program=path)
    probes: list[Probe] = []
    for member in reference.members:
        if member.body is not None and not member.spec_function and member.kind != "iterator":
            probes += member_probes(given, reference, member)
    given_names = {m.qualified for m in given.members} if given else set()
    helpers = [m for m in reference.members if m.qualified not in given_names and not m.module and not m.container]
    f2p = {t.partition("::")[2] for t in task.fail_to_pass if t.startswith(path + "::") and " > " not in t}
    return ProbeSet(tuple(probes), tuple(dropped), path,
                    tuple(reference.text[reference.tokens[m.first].start:reference.tokens[m.end].end] for m in helpers),
                    tuple(m.qualified for m in helpers), frozenset(f2p))


_MADE: dict[tuple, ProbeSet] = {}


def probe_set(task: Task, isolation="auto") -> ProbeSet:
    """The task's probes (made from its reference patch, remembered per task folder and patch)."""
    key = (task.id, str(task.root), task.reference_patch, task.fail_to_pass)
    if key not in _MADE:
        _MADE[key] = make_probes(task)
    return _MADE[key]


def record(task: Task, isolation="auto") -> ProbeSet:
    """Dafny's probes are read from the reference patch at each grading: nothing to store."""
    return probe_set(task, isolation)


# -- grading

@dataclass(frozen=True)
class Planted:
    path: str | None  # the probe file in the graded copy (None: no probes)
    results: Path  # the host folder of the run's results (the manifest and the outcomes)
    probes: ProbeSet
    ids: tuple[str, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()  # (probe id, why) of probes with no place in the candidate: failed
    inapplicable: tuple[str, ...] = ()  # probes placed in the reference's own proof structure, which the candidate lacks

    def is_probe(self, test_id: str) -> bool:
        return self.path is not None and test_id.startswith(self.path + "::")


def _insertion_point(candidate: Program, layout: Layout | None, probe: Probe,
                     loops: dict[int, int]) -> tuple[int, str] | str:
    """(offset, indentation) where `probe` goes in the candidate, or why it has no place."""
    if layout is None:
        return f"the candidate has no body for {probe.member}"
    if probe.kind == "invariant":
        k = loops.get(probe.loop)
        if k is None:
            return f"the candidate's {probe.member} has no loop `while {probe.guard}`"
        token = candidate.tokens[layout.loops[k].guard_end]
        return token.start, " " * (layout.loops[k].keyword.col + 1)
    block = next((b for b, name in layout.owners.items() if name == _renamed(probe.block, loops)), None)
    if block is None:
        return f"the candidate's {probe.member} has no block like the reference's `{probe.block}`"
    children = layout.children(block)
    lemmas = _lemma_names(candidate)
    if probe.before:
        target = next((s for s in children if not statement_kind(candidate, s, lemmas)
                       and head(candidate, s) == probe.before), None)
        if target is None:
            return f"the candidate's {probe.member} has no statement `{probe.before}` where the reference's {probe.kind} is"
        token = candidate.tokens[target.first]
    else:
        token = candidate.tokens[candidate.matching[block]]
    indent = candidate.tokens[children[0].first].col - 1 if children else token.col + 1
    return token.start, " " * indent


def _renamed(block: str, loops: dict[int, int]) -> str:
    """A reference block name in the candidate's numbering of loops."""
    if block.startswith("loop "):
        k = loops.get(int(block.split()[1]))
        return f"loop {k + 1}" if k is not None else "no loop"
    return block


def _match_loops(reference: Layout | None, candidate: Layout | None) -> dict[int, int]:
    """Reference loop number (1-based) -> the candidate's loop index: the same place with the same
    guard, else the only candidate loop with that guard."""
    if reference is None or candidate is None:
        return {}
    matched = {}
    for k, loop in enumerate(reference.loops):
        if k < len(candidate.loops) and candidate.loops[k].guard == loop.guard:
            matched[k + 1] = k
            continue
        same = [i for i, c in enumerate(candidate.loops) if c.guard == loop.guard]
        if len(same) == 1:
            matched[k + 1] = same[0]
    return matched


def probe_text(candidate: Program, reference: Program | None, probes: ProbeSet) -> tuple[str, list[dict], list[tuple[str, str]]]:
    """(the probe file's text, the manifest's probes with their lines, probes with no place and why)."""
    insertions: list[tuple[int, str, Probe]] = []
    missing: list[tuple[str, str]] = []
    layouts: dict[str, tuple[Layout | None, dict[int, int]]] = {}
    for probe in probes.probes:
        if probe.member not in layouts:
            member = candidate.member(probe.member)
            ref_member = reference.member(probe.member) if reference else None
            mine = Layout.of(candidate, member) if member is not None and member.body is not None else None
            theirs = Layout.of(reference, ref_member) if ref_member is not None and ref_member.body else None
            layouts[probe.member] = (mine, _match_loops(theirs, mine))
        layout, loops = layouts[probe.member]
        place = _insertion_point(candidate, layout, probe, loops)
        if isinstance(place, str):
            missing.append((probe.id, place if probe.required else f"{place} (not applicable: the given program "
                                                                      "has no such place either)"))
        else:
            insertions.append((place[0], place[1], probe))
    probed = {probe.member for _, _, probe in insertions}
    edits = [(offset, f"\n{indent}{probe.text}\n{indent}", probe) for offset, indent, probe in insertions]
    edits += [(offset, "{:verify false} ", None) for offset in _unprobed(candidate, probed)]
    text = candidate.text
    pieces, lines, at, line = [], [], 0, 1
    for offset, piece, probe in sorted(edits, key=lambda x: x[0]):
        chunk = text[at:offset]
        pieces.append(chunk)
        line += chunk.count("\n")
        pieces.append(piece)
        if probe is not None:
            lines.append({"id": probe.id, "member": probe.member, "kind": probe.kind, "lines": [line + 1, line + 1]})
        line += piece.count("\n")
        at = offset
    pieces.append(text[at:])
    body = "".join(pieces)
    present = {m.qualified for m in candidate.members}
    extra = [t for name, t in zip(probes.helper_names, probes.helpers) if name not in present]
    if extra:
        body = body.rstrip("\n") + "\n\n" + "\n\n".join(extra) + "\n"
    return body, lines, missing


def _unprobed(candidate: Program, probed: set[str]) -> list[int]:
    """Where `{:verify false}` goes in each member of the probe copy that holds no probe (before its
    name): the graded run verifies them already, the copy only has to resolve."""
    offsets = []
    for member in candidate.members:
        if member.qualified in probed or member.body is None:
            continue
        name = next((i for i in range(member.first, member.body[0]) if candidate.tokens[i].text == member.name
                     and candidate.tokens[i].kind == "id"), None)
        if name is not None:
            offsets.append(candidate.tokens[name].start)
    return offsets


def plant(task: Task, root: Path, results: Path, inside: str, isolation="auto") -> Planted:
    """Lay the probe file beside the candidate's program in the graded copy `root`, and the reader's
    manifest in the results folder."""
    probes = probe_set(task, isolation)
    program = root / probes.program if probes.program else None
    if not probes.probes or program is None or not program.is_file():
        why = () if program is None or program.is_file() else ((p.id, "the candidate deleted the program file")
                                                                for p in probes.probes)
        return Planted(None, results, probes, missing=tuple(why))
    try:
        candidate = source.parse(program.read_text(errors="replace"))
        reference = source.parse(reference_changes(task)[probes.program].decode("utf-8", "replace"))
    except (SourceError, TaskError, KeyError) as error:
        return Planted(None, results, probes, missing=tuple((p.id, f"the program cannot be read: {error}")
                                                            for p in probes.probes))
    text, placed, missing = probe_text(candidate, reference, probes)
    token = secrets.token_hex(4)
    # one verifier process for the graded files and the probes: the probe copy in a module of its
    # own (a program with includes or modules of its own is verified in a second process)
    merged = not candidate.includes and not candidate.modules
    module = f"CodeGymProbes{token}"
    for entry in placed:
        entry["own"] = entry["member"]
        if merged:
            entry["member"] = f"{module}.{entry['member']}"
            entry["lines"] = [n + 1 for n in entry["lines"]]
    if merged:
        text = f"module {module} {{\n{text.rstrip()}\n}}\n"
    folder, name = posixpath.split(probes.program)
    path = posixpath.join(folder, f"{name[:-4]}_probes_{token}.dfy")
    (root / path).write_text(text)
    for entry in placed:
        entry["id"] = f"{path}::{entry['id']}"
    (results / MANIFEST).write_text(json.dumps({"file": path, "program": probes.program, "merged": merged,
                                                "probes": placed}))
    optional = {p.id for p in probes.probes if not p.required}
    return Planted(path, results, probes, tuple(e["id"] for e in placed),
                   tuple((f"{path}::{i}", why) for i, why in missing if i not in optional),
                   tuple(f"{i}: {why}" for i, why in missing if i in optional))


@dataclass(frozen=True)
class ProbeReport:
    """The probes of one graded run (the interface of `code_gym.rewards.probes`)."""
    total: int
    passed: int
    failures: tuple[str, ...] = ()
    unavailable: str | None = None
    dropped: tuple[str, ...] = ()
    fix_total: int = 0
    fix_passed: int = 0
    regression_failed: int = 0

    @property
    def ok(self) -> bool:
        """Always: probes lower the `probes` component and never unresolve a verified run."""
        return True

    def uncredited(self, test: str) -> bool:
        return False

    def unchecked(self, tests: tuple[str, ...]) -> tuple[str, ...]:
        return ()

    def summary(self) -> str:
        if self.unavailable:
            return f"no probes ({self.unavailable})"
        return f"{self.passed}/{self.total} reference-proof probes held"


def collect(planted: Planted, exit_code: int | None, output: str = "") -> ProbeReport:
    """The probes' outcomes the reader wrote, with the probes that found no place as failed."""
    probes = planted.probes
    if planted.path is None and not planted.missing:
        return ProbeReport(0, 0, unavailable=probes.reason, dropped=probes.dropped)
    try:
        outcomes = json.loads((planted.results / OUTCOMES).read_text()) if planted.path else {}
    except (OSError, ValueError):
        outcomes = {}
    verdicts: dict[str, tuple[bool, str]] = {}
    for probe_id in planted.ids:
        got = outcomes.get(probe_id) if isinstance(outcomes, dict) else None
        ok = isinstance(got, dict) and got.get("outcome") == "passed"
        verdicts[probe_id] = (ok, "" if ok else str((got or {}).get("message", "the probe has no outcome")))
    for probe_id, why in planted.missing:
        verdicts[probe_id] = (False, why)
    by_id = {p.id: p for p in probes.probes}
    fix_total = fix_passed = regression_failed = 0
    for probe_id, (ok, _) in verdicts.items():
        probe = by_id.get(probe_id.split("::", 1)[-1])
        if probe is not None and probes.is_fix(probe):
            fix_total += 1
            fix_passed += ok
        elif not ok:
            regression_failed += 1
    failures = tuple(f"{i.split('::', 1)[-1]}: {why}" for i, (ok, why) in verdicts.items() if not ok)
    return ProbeReport(len(verdicts), sum(ok for ok, _ in verdicts.values()), failures, None,
                       probes.dropped + planted.inapplicable, fix_total, fix_passed, regression_failed)
