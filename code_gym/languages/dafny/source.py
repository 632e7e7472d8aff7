"""Dafny source as code-gym reads it: a tokenizer and a brace-level parser of declarations,
specification clauses, loops and statements. No dependency but the standard library, as the
verifier's reader lays this file beside itself in the sandbox (reader/verify.py).

It parses what the audit, the reader, the probes and the spec check need, not all of Dafny:
- declarations: modules, classes, traits, datatypes and their members (method, lemma, function,
  predicate, constructor, iterator, with the Dafny 2 two-word kinds such as `function method`), each
  with its modifiers, attributes, signature, specification clauses (requires, ensures, reads,
  modifies, decreases; `yield` forms for iterators) and body;
- inside a body: `while` loops (guard, loop clauses, body) and the block statements around them.
A `{` opens a body when it cannot open a set display: at depth 0 of a clause, after a token that
ends an expression (a name, a literal, `)`, `]`, `}`), or after `*` alone (`decreases *`, `while *`).
Comments (nested `/* */`), strings (escapes, verbatim `@"..."`) and char literals are tokens of
their own, so no keyword inside them counts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# -- tokens

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<verbatim>@"(?:[^"]|"")*")
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.|\\u[0-9a-fA-F]{4})')
  | (?P<num>0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9][0-9_]*)?)
  | (?P<id>[A-Za-z_?][A-Za-z0-9_?']*|[A-Za-z0-9_?']*[A-Za-z_?][A-Za-z0-9_?']*)
  | (?P<op><==>|==>|<==|:=|::|:\||==|!=|<=|>=|&&|\|\||\.\.|=>|!!|\{:|[-+*/%<>=!&|^~.,;:(){}\[\]#@$`\\']|.)
    """, re.X)


@dataclass(frozen=True)
class Token:
    kind: str  # id, num, str, char, op
    text: str
    line: int  # 1-based
    col: int  # 1-based
    start: int  # offset of its first character
    end: int  # offset after its last character


class SourceError(ValueError):
    """The text cannot be tokenized or its braces do not balance."""


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`, comments and whitespace left out."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise SourceError(f"line {line}: unexpected character {text[pos]!r}")
        kind = match.lastgroup
        end = match.end()
        if kind == "block_comment":
            end = _comment_end(text, pos, line)
        elif kind not in ("ws", "line_comment"):
            kind = "str" if kind == "verbatim" else kind
            tokens.append(Token(kind, match.group(), line, pos - line_start + 1, pos, end))
        newlines = text.count("\n", pos, end)
        if newlines:
            line += newlines
            line_start = text.rindex("\n", pos, end) + 1
        pos = end
    return tokens


def _comment_end(text: str, pos: int, line: int) -> int:
    """The offset after the block comment opening at `pos` (Dafny's block comments nest)."""
    depth, i = 0, pos
    while i < len(text):
        pair = text[i:i + 2]
        if pair == "/*":
            depth, i = depth + 1, i + 2
        elif pair == "*/":
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise SourceError(f"line {line}: a block comment is not closed")


# -- declarations

MEMBER_WORDS = frozenset({"method", "lemma", "function", "predicate", "constructor", "iterator", "colemma",
                          "copredicate", "inductive"})
MODIFIERS = frozenset({"ghost", "static", "protected", "abstract", "twostate", "least", "greatest", "inductive",
                       "opened"})
CONTAINERS = frozenset({"module", "class", "trait", "datatype", "codatatype", "newtype", "type"})
CLAUSES = frozenset({"requires", "ensures", "reads", "modifies", "decreases", "yield", "free"})
LOOP_CLAUSES = frozenset({"invariant", "decreases", "modifies", "free"})
# words that begin a declaration: a body-less member's clauses end where one starts
DECLARATION_WORDS = MEMBER_WORDS | MODIFIERS | CONTAINERS | frozenset({"const", "import", "include", "var"})
# words after which `{` opens a set display or a block of the expression, not a body
_NOT_ENDERS = frozenset({"in", "then", "else", "if", "match", "case", "returns", "multiset", "iset", "set", "map",
                         "imap", "new", "forall", "exists", "return", "assert", "assume", "calc", "by", "yield",
                         "print", "old", "fresh", "unchanged", "allocated", "var", "not", "reads", "modifies",
                         "requires", "ensures", "decreases", "invariant", "while"})
SPEC_KINDS = frozenset({"function", "predicate", "copredicate", "inductive predicate", "function method",
                        "predicate method", "twostate function", "twostate predicate", "least predicate",
                        "greatest predicate"})
PROOF_KINDS = frozenset({"lemma", "colemma", "inductive lemma", "twostate lemma", "least lemma", "greatest lemma"})


@dataclass
class Clause:
    keyword: str  # requires, ensures, reads, modifies, decreases, invariant (yield requires: "yield requires")
    first: int  # index of its keyword token
    last: int  # index of its last token
    text: str  # its tokens joined by single spaces, attributes included: what the audit compares


@dataclass
class Loop:
    keyword: Token
    guard: str  # the guard's tokens joined by spaces ("*" for a nondeterministic loop)
    guard_end: int  # index of the token after the guard (the first clause's keyword, or the body's `{`)
    clauses: list[Clause]
    body: tuple[int, int] | None  # indices of its `{` and `}`; None: a body-less loop


@dataclass
class Member:
    kind: str  # "method", "lemma", "function method", "inductive predicate", ...
    name: str
    qualified: str  # module and class names before it, dot-separated, when not the default ones
    module: tuple[str, ...]  # the modules it is in, outermost first (none: the default module)
    container: str  # its class, trait or datatype ("" at module level)
    modifiers: tuple[str, ...]
    attributes: tuple[str, ...]  # names of its header's attributes ({:axiom} -> "axiom")
    first: int  # index of its first token (a modifier or the kind)
    signature: str  # kind, attributes, name, type parameters, parameters, results: joined tokens
    clauses: list[Clause]
    body: tuple[int, int] | None  # indices of its `{` and `}`
    end: int  # index of its last token
    line: int
    end_line: int

    def clause_texts(self, keyword: str) -> list[str]:
        return [c.text for c in self.clauses if c.keyword == keyword]

    @property
    def spec_function(self) -> bool:
        """A function or predicate: its body is specification."""
        return self.kind in SPEC_KINDS

    @property
    def ghost(self) -> bool:
        return "ghost" in self.modifiers or self.kind in PROOF_KINDS or self.kind in (
            "function", "predicate", "copredicate", "inductive predicate", "least predicate", "greatest predicate")


@dataclass
class Program:
    text: str
    tokens: list[Token]
    members: list[Member] = field(default_factory=list)
    includes: list[tuple[int, str]] = field(default_factory=list)  # (line, the included path)
    modules: list[tuple[int, str, str]] = field(default_factory=list)  # (line, name, "refines X" or "")
    matching: dict[int, int] = field(default_factory=dict)  # index of each bracket -> index of its partner

    def member(self, qualified: str) -> Member | None:
        return next((m for m in self.members if m.qualified == qualified), None)

    def joined(self, first: int, last: int) -> str:
        return " ".join(t.text for t in self.tokens[first:last + 1])


def parse(text: str) -> Program:
    """The program's declarations; SourceError when it cannot be tokenized or its brackets do not balance."""
    tokens = tokenize(text)
    program = Program(text, tokens, matching=match_brackets(tokens))
    _Parser(program).block(0, len(tokens), (), "")
    return program


def match_brackets(tokens: list[Token]) -> dict[int, int]:
    """Index of each bracket -> index of its partner, both ways; SourceError when they do not balance."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[int] = []
    matching: dict[int, int] = {}
    for i, tok in enumerate(tokens):
        if tok.kind != "op":
            continue
        if tok.text in ("(", "[", "{", "{:"):
            stack.append(i)
        elif tok.text in pairs:
            if not stack:
                raise SourceError(f"line {tok.line}: {tok.text!r} closes nothing")
            j = stack.pop()
            if pairs[tok.text] != tokens[j].text[0]:
                raise SourceError(f"line {tok.line}: {tok.text!r} closes {tokens[j].text!r} of line {tokens[j].line}")
            matching[i], matching[j] = j, i
    if stack:
        raise SourceError(f"line {tokens[stack[-1]].line}: {tokens[stack[-1]].text!r} is not closed")
    return matching


def attribute_name(tokens: list[Token], i: int) -> str:
    """The name of the attribute whose `{:` is token `i` ("" when none follows)."""
    return tokens[i + 1].text if i + 1 < len(tokens) and tokens[i + 1].kind == "id" else ""


def _ends_expression(tok: Token) -> bool:
    if tok.kind in ("num", "str", "char"):
        return True
    if tok.kind == "id":
        return tok.text not in _NOT_ENDERS
    return tok.text in (")", "]", "}")


def _closes(tokens: list[Token], start: int, i: int) -> bool:
    """Whether the tokens start..i-1 end an expression, so that a `{` at `i` opens a body: after a
    name, a literal or a closing bracket, or after the closing bar of `|s|` (the bars since `start`
    pair up)."""
    previous = tokens[i - 1]
    if previous.text == "|":
        return sum(t.text == "|" for t in tokens[start:i]) % 2 == 0
    return _ends_expression(previous)


class _Parser:
    def __init__(self, program: Program):
        self.p = program
        self.t = program.tokens
        self.m = program.matching

    def word(self, i: int) -> str:
        return self.t[i].text if i < len(self.t) and self.t[i].kind == "id" else ""

    def text(self, i: int) -> str:
        return self.t[i].text if i < len(self.t) else ""

    def skip_attributes(self, i: int, names: list[str] | None = None) -> int:
        while self.text(i) == "{:":
            if names is not None:
                names.append(attribute_name(self.t, i))
            i = self.m[i] + 1
        return i

    def block(self, i: int, end: int, modules: tuple[str, ...], container: str) -> None:
        """Declarations in tokens [i, end)."""
        while i < end:
            word = self.word(i)
            if word == "include" and self.t[i + 1:i + 2] and self.t[i + 1].kind == "str":
                self.p.includes.append((self.t[i].line, self.t[i + 1].text[1:-1]))
                i += 2
            elif word in CONTAINERS:
                i = self.container(i, end, modules, container)
            elif word in MEMBER_WORDS or word in MODIFIERS:
                i = self.member(i, end, modules, container)
            elif self.text(i) in ("(", "[", "{", "{:"):
                i = self.m[i] + 1
            else:
                i += 1

    def container(self, i: int, end: int, modules: tuple[str, ...], outer: str) -> int:
        """A module, class, trait, datatype or type: its members are parsed with its name in scope."""
        keyword = self.word(i)
        j = self.skip_attributes(i + 1)
        name = self.word(j)
        if not name:
            return i + 1
        refines = ""
        k = j + 1
        while k < end and self.text(k) != "{":  # up to the body, if any, before the next declaration
            if keyword != "module" and self.word(k) in DECLARATION_WORDS - {"var"}:
                return k
            if keyword == "module" and self.word(k) == "refines":
                refines = f"refines {self.text(k + 1)}"
            if keyword == "datatype" or keyword == "codatatype" or keyword in ("type", "newtype"):
                if self.text(k) in ("(", "[", "{:"):
                    k = self.m[k] + 1
                    continue
            elif self.text(k) in ("(", "[", "{:"):
                k = self.m[k] + 1
                continue
            k += 1
        if keyword == "module":
            self.p.modules.append((self.t[i].line, name, refines))
        if k >= end:
            return end
        if keyword == "module":
            self.block(k + 1, self.m[k], (*modules, name), "")
        else:
            self.block(k + 1, self.m[k], modules, name)
        return self.m[k] + 1

    def member(self, i: int, end: int, modules: tuple[str, ...], container: str) -> int:
        first = i
        modifiers: list[str] = []
        while self.word(i) in MODIFIERS and not (
                self.word(i) in ("inductive", "twostate", "least", "greatest")
                and self.word(i + 1) in ("predicate", "lemma", "function")):
            modifiers.append(self.word(i))
            i += 1
        kind_words = [self.word(i)]
        if kind_words[0] in ("inductive", "twostate", "least", "greatest") and self.word(i + 1) in (
                "predicate", "lemma", "function"):
            kind_words.append(self.word(i + 1))
        elif kind_words[0] in ("function", "predicate") and self.word(i + 1) == "method":
            kind_words.append("method")
        if kind_words[0] not in MEMBER_WORDS and len(kind_words) == 1:
            return i + 1 if i > first else first + 1  # a modifier before a field or a const
        i += len(kind_words)
        attributes: list[str] = []
        i = self.skip_attributes(i, attributes)
        name = self.word(i) if self.t[i:i + 1] and self.t[i].kind == "id" else ""
        if kind_words[0] == "constructor" and self.text(i) in ("(", "<"):
            name = "_ctor"
        else:
            i += 1
        signature_end = self.signature_end(i, end)
        clauses, body, k = self.clauses(signature_end, end, CLAUSES)
        last = self.m[body] if body is not None else k - 1
        qualified = ".".join((*modules, *((container,) if container else ()), name))
        member = Member(" ".join(kind_words), name, qualified, modules, container, tuple(modifiers), tuple(attributes), first,
                        self.p.joined(first, signature_end - 1), clauses,
                        (body, self.m[body]) if body is not None else None, last, self.t[first].line,
                        self.t[max(last, first)].line)
        self.p.members.append(member)
        return last + 1

    def signature_end(self, i: int, end: int) -> int:
        """The index after a member's signature: type parameters, parameters, `returns (...)`, `: Type`."""
        while i < end:
            text = self.text(i)
            if text == "<":
                depth = 0
                while i < end:
                    depth += {"<": 1, ">": -1}.get(self.text(i), 0)
                    i = self.m[i] + 1 if self.text(i) in ("(", "[") else i + 1
                    if depth == 0:
                        break
            elif text == "(" or text == "{:":
                i = self.m[i] + 1
            elif self.word(i) == "returns" or text == ":" or self.word(i) == "yields":
                i += 1
                while i < end and self.text(i) not in ("{", "{:") and self.word(i) not in CLAUSES \
                        and self.word(i) not in DECLARATION_WORDS and self.text(i) != "}":
                    i = self.m[i] + 1 if self.text(i) in ("(", "[") else i + 1
            else:
                return i
        return i

    def clauses(self, i: int, end: int, keywords: frozenset[str]) -> tuple[list[Clause], int | None, int]:
        """(clauses, index of the body's `{` or None, index after the last clause) from token `i`."""
        clauses: list[Clause] = []
        current: list[int] = []  # [keyword index] of the clause being read
        keyword = ""
        while i < end:
            text, word = self.text(i), self.word(i)
            if word in keywords:
                if current:
                    clauses.append(self.clause(keyword, current[0], i - 1))
                k = i
                keyword = word
                if word == "free" or word == "yield":
                    k += 1
                    keyword = f"{word} {self.word(k)}"
                current = [i]
                i = k + 1
                continue
            if text == "{" and self.opens_body(i, current):
                if current:
                    clauses.append(self.clause(keyword, current[0], i - 1))
                return clauses, i, i
            if text == "}" or (not current and text != "{:") or (
                    current and word in DECLARATION_WORDS - {"var", "ghost", "opened"} and word != "inductive"):
                break
            i = self.m[i] + 1 if text in ("(", "[", "{", "{:") else i + 1
        if current:
            clauses.append(self.clause(keyword, current[0], i - 1))
        return clauses, None, i

    def opens_body(self, i: int, current: list[int]) -> bool:
        if not current:
            return True
        previous = self.t[i - 1]
        if i - 1 == current[0]:
            return False
        if previous.text == "*" and i - 2 == current[0]:
            return True
        return _closes(self.t, current[0], i)

    def clause(self, keyword: str, first: int, last: int) -> Clause:
        return Clause(keyword, first, last, self.p.joined(first, last))


# -- inside bodies

def loops(program: Program, first: int, last: int) -> list[Loop]:
    """The `while` loops between token indices `first` and `last`, in source order (nested ones after
    the loop that holds them)."""
    parser = _Parser(program)
    found: list[Loop] = []
    i = first
    while i <= last:
        if parser.word(i) == "while":
            found.append(_loop(parser, i, last))
        i += 1
    return found


def _loop(parser: _Parser, i: int, last: int) -> Loop:
    j = i + 1
    guard_start = j
    while j <= last:
        text = parser.text(j)
        if parser.word(j) in LOOP_CLAUSES:
            break
        if text == "{" and (j == guard_start or parser.t[j - 1].text == "*" or _closes(parser.t, guard_start, j)):
            break
        j = parser.m[j] + 1 if text in ("(", "[", "{", "{:") else j + 1
    guard = parser.p.joined(guard_start, j - 1)
    clauses, body, _ = parser.clauses(j, last + 1, LOOP_CLAUSES)
    if body is None and parser.text(j) == "{":
        body = j
    return Loop(parser.t[i], guard, j, clauses, (body, parser.m[body]) if body is not None else None)


@dataclass
class Statement:
    first: int  # index of its first token
    last: int  # index of its last token (`;` or a block's `}`)
    text: str  # its tokens joined by spaces
    block: int  # index of the `{` of the block that holds it


def statements(program: Program, opening: int) -> list[Statement]:
    """The statements of the block whose `{` is token `opening`, and of the blocks inside them
    (each statement's `block` says which), in source order. A statement ends at `;` at depth 0 or
    at the `}` of the block that ends it (`if`, `while`, `forall`, `calc`, `match` ...)."""
    tokens, matching = program.tokens, program.matching
    found: list[Statement] = []
    closing = matching[opening]
    i = opening + 1
    while i < closing:
        start = i
        inner: list[int] = []
        while i < closing:
            text = tokens[i].text
            if text == ";" and tokens[i].kind == "op":
                break
            if text == "{" and tokens[i].kind == "op":
                if _statement_block(tokens, start, i):
                    inner.append(i)
                    i = matching[i]
                    if not _continues(tokens, i + 1):
                        break
                    i += 1
                    continue
                i = matching[i] + 1
                continue
            if text in ("(", "[", "{:"):
                i = matching[i] + 1
                continue
            i += 1
        end = min(i, closing - 1)
        found.append(Statement(start, end, program.joined(start, end), opening))
        for block in inner:
            found += statements(program, block)
        i = end + 1
    return found


_BLOCK_STARTERS = frozenset({"if", "while", "forall", "calc", "match", "else", "modify", "by", "ghost", "assert"})


def _statement_block(tokens: list[Token], start: int, i: int) -> bool:
    """Whether the `{` at `i` opens a block of the statement starting at `start` (not a set display)."""
    if i == start:
        return True  # a bare block
    first = tokens[start].text
    previous = tokens[i - 1]
    if first in _BLOCK_STARTERS or previous.text in ("else", "by"):
        return previous.text in ("else", "by", "*") or _closes(tokens, start, i)
    return False


def _continues(tokens: list[Token], i: int) -> bool:
    """Whether the statement goes on after a block closing before token `i` (`else`, a second `by`)."""
    return i < len(tokens) and tokens[i].text in ("else",)


def enclosing(program: Program, line: int) -> Member | None:
    """The innermost member whose lines span `line`."""
    best = None
    for member in program.members:
        if member.line <= line <= member.end_line and (best is None or member.line >= best.line):
            best = member
    return best
