"""A task's hidden specification check (the builder writes it as hidden/spec/<name>.spec.dfy).

`spec_check(program, include)` restates the given specification of each method and lemma with a
body at the top level of the program (the default module, outside classes): a wrapper
`SpecOf_<Name>` with the member's type parameters, parameters, results, requires, modifies and
ensures clauses, whose body only calls the member. The wrapper verifies exactly when the member's
own specification, as the candidate leaves it, is at least as strong as the given one: a weaker
precondition is fine, a stronger one fails the call, a weaker postcondition fails the wrapper's.
It checks semantically what the audit checks by the text (`audit.py`, rule dafny-spec): two
independent guards on the one thing a proof must not touch.
"""
from __future__ import annotations

from code_gym.languages.dafny import source
from code_gym.languages.dafny.source import Member, Program

HEADER = ("// The given specification of {name}, restated: each wrapper verifies only when the program's own\n"
          "// specification is at least as strong as the one the task gave.\n")
CHECKED = frozenset({"method", "lemma"})


def parameters(program: Program, opening: int) -> list[str]:
    """The names of the parameters in the list whose `(` is token `opening`."""
    tokens, closing = program.tokens, program.matching[opening]
    names, i, expect = [], opening + 1, True
    while i < closing:
        token = tokens[i]
        if token.text in ("(", "[", "{:") or token.text == "<":
            i = program.matching.get(i, i) + 1 if token.text != "<" else _after_angle(program, i)
            continue
        if token.text == ",":
            expect = True
        elif expect and token.kind == "id" and token.text not in ("ghost", "nameonly", "new", "older"):
            names.append(token.text)
            expect = False
        i += 1
    return names


def _after_angle(program: Program, i: int) -> int:
    depth = 0
    while i < len(program.tokens):
        depth += {"<": 1, ">": -1}.get(program.tokens[i].text, 0)
        i += 1
        if depth == 0:
            return i
    return i


def _lists(program: Program, member: Member) -> tuple[int | None, int | None, str]:
    """(the `(` of the parameters, the `(` of the results or None, the type parameters' text)."""
    tokens = program.tokens
    i = member.first
    while tokens[i].text != member.name:
        i += 1
    i += 1
    type_parameters = ""
    if tokens[i].text == "<":
        end = _after_angle(program, i)
        type_parameters = program.joined(i, end - 1).replace("< ", "<").replace(" >", ">")
        i = end
    params = i if tokens[i].text == "(" else None
    results = None
    if params is not None:
        j = program.matching[params] + 1
        if tokens[j].text == "returns" and tokens[j + 1].text == "(":
            results = j + 1
    return params, results, type_parameters


def wrapper(program: Program, member: Member) -> str | None:
    """The wrapper of one member, or None for one it cannot restate."""
    params, results, type_parameters = _lists(program, member)
    if params is None:
        return None
    kind = "lemma" if member.kind == "lemma" else ("ghost method" if "ghost" in member.modifiers else "method")
    header = f"{kind} SpecOf_{member.name}{type_parameters}{_text(program, params)}"
    if results is not None:
        header += f" returns {_text(program, results)}"
    clauses = "".join(f"\n  {_clause(program, c)}" for c in member.clauses
                      if c.keyword in ("requires", "modifies", "ensures"))
    arguments = ", ".join(parameters(program, params))
    outputs = parameters(program, results) if results is not None else []
    call = f"{member.name}({arguments});"
    body = f"{', '.join(outputs)} := {call}" if outputs else call
    return f"{header}{clauses}\n{{\n  {body}\n}}\n"


def _text(program: Program, opening: int) -> str:
    """A bracketed list as written."""
    tokens = program.tokens
    return _lines(program.text[tokens[opening].start:tokens[program.matching[opening]].end])


def _clause(program: Program, clause: source.Clause) -> str:
    tokens = program.tokens
    return _lines(program.text[tokens[clause.first].start:tokens[clause.last].end])


def _lines(raw: str) -> str:
    """Text as written, its continuation lines indented under the wrapper's clauses (a comment
    keeps its own line)."""
    return "\n    ".join(line.strip() for line in raw.splitlines())


def spec_check(text: str, include: str, name: str = "") -> str:
    """The specification check of the program `text`, which it includes as `include` (relative to
    the check's own folder, e.g. "../sum.dfy"). SourceError when the program cannot be read."""
    program = source.parse(text)
    wrappers = [w for m in program.members
                if m.kind in CHECKED and m.body is not None and not m.module and not m.container
                and (w := wrapper(program, m)) is not None]
    label = name or include.rsplit("/", 1)[-1]
    return HEADER.format(name=label) + f'include "{include}"\n' + "".join(f"\n{w}" for w in wrappers)
