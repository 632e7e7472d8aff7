"""The Dafny code rules of the integrity audit: what lets a program verify without a proof.

Each rule compares a changed .dfy file with its starting version (the task's) and reports only what
the change added, so a task that starts with an `assume` is not failed for it. Read with the
tokenizer and brace parser of `source`, never with a regular expression over the text, so nothing
in a comment or a string counts and nothing hides behind one.

- dafny-spec: the specification of a given member changed: removed, renamed, its signature (kind,
  modifiers, attributes, type parameters, parameters, results), any requires, ensures, reads,
  modifies or decreases clause (added, removed or changed), or the body of a function or
  predicate (a spec function's body is its meaning); or any declaration outside the members
  (constants, types, datatypes, fields, class headers with their attributes) changed or removed.
- dafny-assume: an `assume` statement (or `expect`, whose condition the verifier assumes).
- dafny-attribute: an attribute outside the list of those that only guide the prover (triggers,
  induction, fuel, opaque, splitting): `{:axiom}`, `{:verify false}`, `{:extern}`, `{:imported}`,
  `{:autocontracts}`, `{:autoReq}`, `{:options ...}`, `{:timeLimit ...}` and any other.
- dafny-bodyless: a method, lemma, function, predicate or iterator without a body that is new or
  had one (the verifier assumes its specification), or a loop without a body (the verifier assumes
  its invariants on exit without checking any iteration).
- dafny-decreases-star: `decreases *` (a method or loop that need not terminate "proves" anything
  about the state after it).
- dafny-include: an `include` (the grader verifies, and the audit reads, only the task's files).
- dafny-unreadable: a program file whose brackets do not balance or whose comment is not closed:
  the audit cannot read it, so it cannot vouch for it.
"""
from __future__ import annotations

from collections import Counter

from code_gym.languages.base import Finding
from code_gym.languages.dafny import source
from code_gym.languages.dafny.source import Member, Program, SourceError
from code_gym.tasks.task import Task

RULES: dict[str, str] = {
    "dafny-spec": "changes the given specification: a member's signature, its requires/ensures/reads/modifies/"
                  "decreases clauses, a function's or predicate's body, a given declaration (constant, type, "
                  "datatype, field, class header), or removes a given member",
    "dafny-assume": "adds an assume statement (or expect): the verifier takes its condition without proof",
    "dafny-attribute": "adds an attribute that changes what is verified ({:axiom}, {:verify false}, {:extern}, "
                       "{:options}, {:autocontracts}, {:timeLimit} ...); only prover hints (trigger, induction, "
                       "fuel, opaque, split_here, focus, vcs_*) are allowed",
    "dafny-bodyless": "adds a method, lemma, function or predicate without a body, removes a body, or adds a loop "
                      "without a body: the verifier assumes what it does not check",
    "dafny-decreases-star": "adds `decreases *`: code that need not terminate proves anything about what follows",
    "dafny-include": "adds an include: only the task's own files are verified and audited",
    "dafny-unreadable": "a program file the audit cannot read (brackets that do not balance, a comment not closed)",
}

# attributes that steer the prover but cannot make a false claim verify
HINTS = frozenset({"trigger", "induction", "fuel", "opaque", "split_here", "focus", "vcs_split_on_every_assert",
                   "vcs_max_splits", "vcs_max_cost", "vcs_max_keep_going_splits", "nowarn", "matchinglooprewrite",
                   "matchingloop", "induction_trigger", "layerQuantifier", "inline", "abstemious", "tailrecursion",
                   "warnShadowing", "no_inline"})
SPEC_CLAUSES = ("requires", "ensures", "reads", "modifies", "decreases", "yield requires", "yield ensures",
                "free requires", "free ensures")
BODIED = frozenset({"method", "lemma", "constructor", "iterator", "colemma", "inductive lemma", "twostate lemma",
                    "least lemma", "greatest lemma"}) | source.SPEC_KINDS


def path_rule(task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
    """No Dafny rule is about a path alone: the grader owns no file, and the spec check is a test file."""
    return None


def audit_file(task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
    """Findings in the .dfy file `path` (new content `new`) that its starting version `old` lacks."""
    if not path.endswith(".dfy"):
        return []
    try:
        after = source.parse(new.decode("utf-8", "replace"))
    except SourceError as error:
        return [Finding(path, 0, "dafny-unreadable", f"{RULES['dafny-unreadable']}: {error}")]
    before = _parse_or_empty(old)
    return sorted(spec_findings(path, before, after) + added_findings(path, before, after),
                  key=lambda f: (f.line, f.rule))


def _parse_or_empty(data: bytes | None) -> Program:
    try:
        return source.parse(data.decode("utf-8", "replace")) if data is not None else source.parse("")
    except SourceError:
        return source.parse("")


# -- the given specification

def spec_findings(path: str, before: Program, after: Program) -> list[Finding]:
    findings = []
    for given in before.members:
        now = after.member(given.qualified)
        if now is None:
            findings.append(Finding(path, 0, "dafny-spec", f"{given.kind} {given.qualified} of the task is gone "
                                                             "(removed or renamed)"))
            continue
        what = _spec_change(given, now, before, after)
        if what:
            findings.append(Finding(path, now.line, "dafny-spec", f"{now.qualified}: {what}"))
    after_chunks = Counter(declaration_chunks(after))
    for chunk, count in Counter(declaration_chunks(before)).items():
        if after_chunks[chunk] < count:
            findings.append(Finding(path, 0, "dafny-spec", f"a given declaration changed or is gone: {chunk[:120]}"))
    return findings


def _spec_change(given: Member, now: Member, before: Program, after: Program) -> str:
    if (given.kind, given.modifiers, given.signature) != (now.kind, now.modifiers, now.signature):
        return f"the signature changed from `{given.signature}` to `{now.signature}`"
    for keyword in SPEC_CLAUSES:
        if given.clause_texts(keyword) != now.clause_texts(keyword):
            return f"its {keyword} clauses changed"
    if given.spec_function and given.body is not None and now.body is not None \
            and before.joined(*given.body) != after.joined(*now.body):
        return "the body of a function or predicate is specification and changed"
    return ""


def declaration_chunks(program: Program) -> list[str]:
    """The program's text outside its members, cut at each declaration keyword: what must stay as
    given (constants, types, datatypes, fields, class and module headers)."""
    inside = set()
    for member in program.members:
        inside.update(range(member.first, member.end + 1))
    chunks: list[list[str]] = []
    for i, token in enumerate(program.tokens):
        if i in inside or token.text in ("{", "}"):
            continue
        if token.kind == "id" and token.text in source.DECLARATION_WORDS | source.CONTAINERS or not chunks:
            chunks.append([])
        chunks[-1].append(token.text)
    return [" ".join(c) for c in chunks]


# -- what the change added

def added_findings(path: str, before: Program, after: Program) -> list[Finding]:
    findings: list[Finding] = []
    for rule, found in (("dafny-assume", _assumes), ("dafny-attribute", _attributes),
                        ("dafny-decreases-star", _decreases_star), ("dafny-include", _includes),
                        ("dafny-bodyless", _bodyless_loops), ("dafny-bodyless", _bodyless_foralls)):
        findings += _new(path, rule, found(before), found(after))
    findings += _bodyless_members(path, before, after)
    return findings


def _new(path: str, rule: str, before: list[tuple[str, int]], after: list[tuple[str, int]]) -> list[Finding]:
    """A finding per occurrence in `after` beyond the starting version's count of the same kind."""
    budget = Counter(kind for kind, _ in before)
    findings = []
    for kind, line in after:
        if budget[kind] > 0:
            budget[kind] -= 1
        else:
            findings.append(Finding(path, line, rule, f"{kind}: {RULES[rule]}"))
    return findings


def _assumes(program: Program) -> list[tuple[str, int]]:
    return [(f"`{t.text}`", t.line) for t in program.tokens if t.kind == "id" and t.text in ("assume", "expect")]


def _attributes(program: Program) -> list[tuple[str, int]]:
    found = []
    for i, token in enumerate(program.tokens):
        if token.text == "{:" and token.kind == "op":
            name = source.attribute_name(program.tokens, i)
            if name not in HINTS:
                found.append((f"{{:{name}}}", token.line))
    return found


def _decreases_star(program: Program) -> list[tuple[str, int]]:
    tokens = program.tokens
    return [("`decreases *`", t.line) for i, t in enumerate(tokens)
            if t.text == "decreases" and i + 1 < len(tokens) and tokens[i + 1].text == "*"]


def _includes(program: Program) -> list[tuple[str, int]]:
    return [(f"include {name!r}", line) for line, name in program.includes] + [
        ("include", t.line) for i, t in enumerate(program.tokens)
        if t.text == "include" and t.kind == "id" and not (i + 1 < len(program.tokens) and program.tokens[i + 1].kind == "str")]


def _bodyless_loops(program: Program) -> list[tuple[str, int]]:
    found = []
    for member in program.members:
        if member.body is not None:
            found += [("a loop without a body", loop.keyword.line)
                      for loop in source.loops(program, *member.body) if loop.body is None]
    return found


def _bodyless_foralls(program: Program) -> list[tuple[str, int]]:
    """forall statements with `ensures` and no body: Dafny assumes what they state (an axiom)."""
    tokens, found = program.tokens, []
    for i, token in enumerate(tokens):
        if token.text != "forall" or token.kind != "id":
            continue
        depth, ensures = 0, False
        for t in tokens[i + 1:]:
            if t.text in ("(", "["):
                depth += 1
            elif t.text in (")", "]"):
                depth -= 1
            elif depth == 0 and t.text == "::":
                break  # a quantifier expression
            elif depth == 0 and t.text == "ensures":
                ensures = True
            elif depth == 0 and ensures and t.text == "{":
                break  # a proof body
            elif depth == 0 and t.text in (";", "}"):
                if ensures:
                    found.append(("a forall statement without a body", token.line))
                break
    return found


def _bodyless_members(path: str, before: Program, after: Program) -> list[Finding]:
    findings = []
    for member in after.members:
        if member.body is not None or member.kind not in BODIED:
            continue
        given = before.member(member.qualified)
        if given is not None and given.body is None:
            continue
        what = "lost its body" if given is not None else "is new and has no body"
        findings.append(Finding(path, member.line, "dafny-bodyless",
                                f"{member.kind} {member.qualified} {what}: {RULES['dafny-bodyless']}"))
    return findings
