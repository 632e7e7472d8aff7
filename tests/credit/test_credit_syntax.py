"""credit.syntax: the grammar table and the one tree-sitter path that turns hunk sides into block spans."""
import importlib

import pytest
from tree_sitter import Language

from credit.syntax import GRAMMARS, block_spans, grammar_for

PYTHON = GRAMMARS["python"]


def test_files_find_their_grammar_by_suffix():
    assert grammar_for("pkg/mod.py") is PYTHON and grammar_for("stubs/mod.pyi") is PYTHON
    assert grammar_for("src/main.c") is None and grammar_for("README.md") is None and grammar_for("py") is None


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_every_grammar_loads_and_names_node_types_of_its_language(name):
    """A typo in a table entry (a module, a node type) fails here, not as units silently missing."""
    grammar = GRAMMARS[name]
    assert grammar.name == name and grammar.suffixes and grammar.marks
    if not grammar.module:  # no tree-sitter grammar: its reader answers every side (Dafny's brace blocks)
        assert grammar.reader is not None and not grammar.blocks
        return
    language = Language(importlib.import_module(grammar.module).language())
    for kind in grammar.blocks:
        assert language.id_for_node_kind(kind, True), f"{name}: no node type {kind!r}"


def test_python_blocks_nest_and_clauses_stay_with_their_statement():
    rows = [
        "def f(a):",
        "    total = 0",
        "    for x in a:",
        "        if x > 1:",
        "            total += x",
        "        else:",
        "            total -= 1",
        "    return total",
        "y = f([1])",
    ]
    assert block_spans(PYTHON, [rows]) == [[(0, 7), (2, 6), (3, 6)]]


def test_a_side_cut_from_a_method_parses_dedented_and_blank_rows_do_not_count():
    rows = ["        @property", "        def size(self):", "   ", "            return 3", "        x = 1"]
    # the decorated definition (from its decorator) and the function, each up to its last code row
    assert block_spans(PYTHON, [rows]) == [[(0, 3), (1, 3)]]


def test_sides_that_do_not_parse_get_none_and_sides_without_a_mark_are_not_parsed():
    broken = ["def f(:", "    return 1"]
    no_colon = ["x = (1,", "     2"]  # would not parse either, but holds no block header
    plain = ["a = 1", "b = 2"]
    assert block_spans(PYTHON, [broken, no_colon, plain]) == [None, [], []]


def test_a_lone_surrogate_is_parsed_as_its_bytes():
    """Diffs are read with surrogates passed through: inside a string the side still parses, as a
    name it does not (indentation blocks then apply), and neither raises."""
    in_string = ["def f():", '    s = "\ud800"', "    return s"]
    as_name = ["if \ud800:", "    x = 1"]
    assert block_spans(PYTHON, [in_string, as_name]) == [[(0, 2)], None]
