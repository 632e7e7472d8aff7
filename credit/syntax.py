"""Block spans of hunk sides from tree-sitter grammars: one code path for every language.

A sub-diff "syntax" unit (`credit.split`) is the changed lines inside one block node: a function,
a class, a compound statement. Which node types make a block, and which files a grammar reads, is
data: one `Grammar` per language in `GRAMMARS`. `block_spans` parses each hunk side (its changed
lines and the context between them, dedented to its least indented row) with its grammar and
gives each block node's first and last row. A side that does not parse cleanly gets None, and
`credit.split` uses indentation blocks for it, as for files no grammar reads.

A grammar may also name a `reader`: vectorized passes that answer, for the sides inside a subset
of the language, the spans its parse would give, without parsing; the other sides are parsed.
Python has one (`credit.pyspans`): tree-sitter alone put the refbench batches over credit's time
budget (docs/benchmarks.md, "credit").

Adding a language is one entry in GRAMMARS (and its grammar wheel, `tree-sitter-<language>`, in
pyproject.toml's dependencies).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from tree_sitter import Language, Parser, Query, QueryCursor

from credit.bracespans import brace_spans
from credit.pyspans import python_spans
from credit.text import WHITESPACE


@dataclass(frozen=True)
class Grammar:
    """A language's tree-sitter grammar, as credit's syntax units use it.

    Attributes:
      name: the language ("python").
      suffixes: the file names it reads end with one of these (".py", ".pyi").
      module: the grammar's Python module, whose `language()` gives the tree-sitter language
        ("tree_sitter_python", from the wheel tree-sitter-python); "" for a language whose
        reader answers every side (Dafny's brace blocks).
      blocks: the node types that make a block unit.
      marks: characters one of which every block node holds (Python's headers end with ":");
        a side without any holds no block and is not parsed.
      reader: None, or `reader(data, starts, ends, group, n_groups) -> (answered, first, last)`
        (`credit.pyspans.python_spans` has the contract): the spans of the sides (groups of
        rows in a byte buffer) it answers, equal to what the parse gives; the rest are parsed.
    """

    name: str
    suffixes: tuple[str, ...]
    module: str
    blocks: tuple[str, ...]
    marks: str
    reader: Optional[Callable] = None


GRAMMARS: dict[str, Grammar] = {g.name: g for g in (
    Grammar("python", (".py", ".pyi"), "tree_sitter_python", (
        "function_definition", "class_definition", "decorated_definition", "if_statement", "for_statement",
        "while_statement", "try_statement", "with_statement", "match_statement"), marks=":", reader=python_spans),
    # functions in every form (a callback's body, `describe(..., () => {...})`, is where JavaScript
    # code lives), classes, methods and compound statements; each holds a "(" (a call, parameters,
    # a condition), a "{" (a class or try body) or the "=" of an arrow
    Grammar("javascript", (".js", ".cjs", ".mjs", ".jsx"), "tree_sitter_javascript", (
        "function_declaration", "generator_function_declaration", "function_expression", "generator_function",
        "arrow_function", "class_declaration", "class", "method_definition", "if_statement", "for_statement",
        "for_in_statement", "while_statement", "do_statement", "try_statement", "switch_statement"), marks="({="),
    # Go: functions, methods and function literals (a closure passed to t.Run), types, and
    # compound statements; each holds a "{"
    Grammar("go", (".go",), "tree_sitter_go", (
        "function_declaration", "method_declaration", "func_literal", "type_declaration", "if_statement",
        "for_statement", "expression_switch_statement", "type_switch_statement", "select_statement"), marks="{"),
    # Rust: functions and closures, impl and trait blocks, types, modules (a `mod tests`) and
    # compound expressions; each holds a "{" or a closure's "|"
    Grammar("rust", (".rs",), "tree_sitter_rust", (
        "function_item", "closure_expression", "impl_item", "trait_item", "struct_item", "enum_item", "mod_item",
        "if_expression", "match_expression", "for_expression", "while_expression", "loop_expression"), marks="{|"),
    # Dafny: no tree-sitter grammar installs from PyPI; brace blocks (credit.bracespans) answer every side
    Grammar("dafny", (".dfy",), "", (), marks="{", reader=brace_spans),
)}


def grammar_for(path: str) -> Optional[Grammar]:
    """The grammar that reads the file at `path` (by its suffix), or None."""
    for grammar in GRAMMARS.values():
        if path.endswith(grammar.suffixes):
            return grammar
    return None


def block_spans(grammar: Grammar, sides: Sequence[Sequence[str]]) -> list[Optional[list[tuple[int, int]]]]:
    """Per hunk side (its rows, without line breaks), the inclusive (first, last) row spans of the
    grammar's block nodes, sorted and each once; None where the side does not parse cleanly. A
    side without any of the grammar's `marks` has no block node and is not parsed.

    The rows are parsed without their common indentation (a side cut from a method body parses as
    top-level code) and with blank rows emptied. A node that ends at the start of a row (after
    its last line break) ends on the row before.
    """
    if not sides:  # a grammar whose reader answered every side has no parser to load
        return []
    parser, query = _parser(grammar)
    cursor = QueryCursor(query)
    out: list[Optional[list[tuple[int, int]]]] = []
    for rows in sides:
        text = "\n".join(rows)
        if not any(mark in text for mark in grammar.marks):
            out.append([])
            continue
        root = parser.parse(_dedented(rows)).root_node
        if root.has_error:
            out.append(None)
            continue
        spans = set()
        for node in cursor.captures(root).get("block", ()):
            (first, _), (last, column) = node.start_point, node.end_point
            spans.add((first, last - 1 if column == 0 and last > first else last))
        out.append(sorted(spans))
    return out


def _dedented(rows: Sequence[str]) -> bytes:
    """The rows joined by line breaks as UTF-8, less their least (ASCII whitespace) indentation;
    blank rows empty."""
    code = [r.lstrip(WHITESPACE) for r in rows]
    base = min((len(r) - len(c) for r, c in zip(rows, code) if c), default=0)
    return "\n".join(r[base:] if c else "" for r, c in zip(rows, code)).encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=None)
def _parser(grammar: Grammar) -> tuple[Parser, Query]:
    """A parser of the grammar's language, and the query that captures its block nodes as "block"."""
    language = Language(importlib.import_module(grammar.module).language())
    query = Query(language, "[" + " ".join(f"({t})" for t in grammar.blocks) + "] @block")
    return Parser(language), query
