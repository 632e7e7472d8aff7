"""credit.text.line_table in C (credit._text) against the numpy passes it replaces
(`line_table_numpy`): the same content ids, indents and contents (hashes, token CSR, token ids,
vocabulary size), with the same dtypes, on every input.

Inputs: the changed lines of the benchmark's diffs (as credit.didpo passes them, and with their
comment markers shuffled, which makes the numpy version renumber its marker groups), lines of the
standard library, and fuzzed lines made to hit each rule: comments with and without a quote before
them, each marker in the skipped byte, block-comment lines, every kind of whitespace, non-ASCII
text and lone surrogates, lines that are only a comment, duplicates across markers.
"""
import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from credit_testlib import assert_didpo_unchanged_without, load_bench, need_native, through_c

from credit import text
from credit.split import split_diffs
from credit.text import MARKERS, line_table, line_table_numpy

_C = text.c_line_table


def _assert_same(texts, markers, skip=0, what=""):
    """line_table (through the C table, which must take the input) equals the numpy passes."""
    got = through_c(text, "c_line_table", lambda: line_table(texts, markers, skip=skip), what)
    expected = line_table_numpy(texts, markers, skip=skip)
    pairs = {"content": (got.content, expected.content), "indent": (got.indent, expected.indent),
             "hashes": (got.contents.hashes, expected.contents.hashes),
             "token_ptr": (got.contents.token_ptr, expected.contents.token_ptr),
             "tokens": (got.contents.tokens, expected.contents.tokens)}
    for name, (a, b) in pairs.items():
        assert a.dtype == b.dtype and a.shape == b.shape, (what, name, a.dtype, b.dtype, a.shape, b.shape)
        if not np.array_equal(a, b):
            bad = np.flatnonzero(a != b)[:5].tolist()
            raise AssertionError(f"{what}: {name} differs at {bad}")
    assert got.contents.n_tokens == expected.contents.n_tokens, what
    return got


def _benchmark_batches():
    """The benchmark's distinct diffs, split as credit.didpo splits them, in two batches."""
    bench = load_bench()
    for seed in (3, 7):
        diffs = {step.diff: None for t in bench.rollouts(4, 8, 4, seed=seed) for step in t.steps if step.diff}
        yield split_diffs(list(diffs))


def test_the_c_table_is_the_numpy_table_on_the_benchmark_lines():
    need_native(_C, "credit._text")
    rng = np.random.default_rng(0)
    for batch in _benchmark_batches():
        texts = batch.marked_texts()
        marker = np.array([text.marker_code(p) for p in batch.path_names], np.int64)[batch.path_ids]
        table = _assert_same(texts, marker, skip=1, what="benchmark lines")
        assert len(texts) > 1000 and 0.5 < (table.content >= 0).mean() < 1
        assert len(set(table.content.tolist())) < 0.8 * len(texts)  # many duplicates
        shuffled = rng.integers(0, len(MARKERS), len(texts))
        _assert_same(texts, shuffled, skip=1, what="benchmark lines, markers shuffled")
        _assert_same([t[1:] for t in texts], shuffled, what="benchmark lines without their +/- marker")


def test_didpo_gives_the_same_result_with_the_c_table(monkeypatch):
    need_native(_C, "credit._text")
    assert_didpo_unchanged_without(monkeypatch, text, "c_line_table")


def test_the_c_table_is_the_numpy_table_on_the_standard_library():
    need_native(_C, "credit._text")
    rng = random.Random(0)
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[::6]
    lines = [line for path in files
             for line in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines() if "\n" not in line]
    assert len(lines) > 20000
    hashes = _assert_same(lines, np.ones(len(lines), np.int64), what="stdlib lines").contents.hashes
    assert hashes.shape[0] > 10000
    markers = np.array([rng.randrange(len(MARKERS)) for _ in lines], np.int64)
    _assert_same(lines, markers, what="stdlib lines, random markers")
    marked = [rng.choice("+- ") + line for line in lines]
    _assert_same(marked, np.full(len(lines), 1), skip=1, what="stdlib lines with a diff marker")


_INDENTS = ["", "", " ", "    ", "        ", "\t", " \t", "\t\t", "\x0b", "\x0c", "\r", "\x1c", " \x1f", "\u00a0"]
_BODIES = ["x = 1", "foo(a, b)", "return x", "s = 'a # b'", 's = "a // b"', "a // b", "a -- b", "a - -b",
           "/* c */", "/*", "*/", "* c", "*", "**kwargs", "/ * x", "//", "#", "--", "-", "/", "'#'", '"--"',
           "it's # c", "x = '1' # c", "x = 1 # 'c'", "#!", "# only a comment", "// only a comment", "-- only one",
           "---", "//x", "/*x", "x /* y", "é = ü", "naïve_ß = 'café'", "λx: x**2", "\ud800", "x\udcff = 1",
           "\U0001f600 + 1", "中文 # 注释", "\x00", "\x7f", "a\x1cb", "a\tb", "a\x0bb\x0cc", "a\rb", "__init__",
           "x+=1;y", "0xFF", "1.5e-3", "a.b.c()", "[1, 2, 3]", "{'a': 1}", "x == y != z", "f'{x}'", "\\", "a\\'b",
           ""]
_TRAILERS = ["", "", " ", "\t", "\r", "  \x0c", " \x1c", " # trailing", "# x", " // c", "//c", " -- c", "--c",
             " /* c */", " '", ' "', "\u00a0", " é"]
_ALPHABET = "ab_1 \t\r\x0b\x0c\x1c#/-*'\"é\u00a0\ud800xy=:(;"


def _fuzzed_line(rng: random.Random) -> str:
    u = rng.random()
    if u < 0.15:
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 16)))
    body = rng.choice(_BODIES)
    if u < 0.3:
        body += rng.choice(" ;") + rng.choice(_BODIES)
    return rng.choice(_INDENTS) + body + rng.choice(_TRAILERS)


@pytest.mark.parametrize("seed", range(6))
def test_the_c_table_is_the_numpy_table_on_fuzzed_lines(seed):
    """A pool of fuzzed lines drawn with repetition, under one marker or many, with or without a
    skipped byte in front (itself a marker's or a quote's byte at times): batches of every size
    down to one line."""
    need_native(_C, "credit._text")
    rng = random.Random(seed)
    for size in [3000, 500, 60, 7, 1]:
        pool = [_fuzzed_line(rng) for _ in range(max(size // 3, 1))]
        texts = [rng.choice(pool) for _ in range(size)]
        one = rng.randrange(len(MARKERS))
        for markers in (np.full(size, one), np.array([rng.randrange(len(MARKERS)) for _ in texts])):
            _assert_same(texts, markers, what=f"seed {seed}, {size} lines")
            marked = [rng.choice("+- #/*-'\"x") + t for t in texts]
            _assert_same(marked, markers, skip=1, what=f"seed {seed}, {size} marked lines")


def test_the_c_table_is_the_numpy_table_on_edge_lines():
    need_native(_C, "credit._text")
    cases = ["", " ", "#", "//", "--", "/*", "*", "'", "\ud800", "\udfff", "\U0010ffff", "a", "x" * 3000,
             " " * 3000 + "x", "\t" * 3 + "# c", "a 'b' # c", "a # 'b'", "-- '", "--'", "'--", "#'"]
    for marker in range(len(MARKERS)):
        for case in cases:
            _assert_same([case], [marker], what=repr(case[:20]))
            _assert_same(["+" + case, "-" + case, "+" + case], [marker] * 3, skip=1, what=repr(case[:20]))
        _assert_same(cases, [marker] * len(cases), what=f"all cases, marker {marker}")
        _assert_same(tuple(cases), [marker] * len(cases), what=f"a tuple, marker {marker}")
    # an indent past 0xFFFF is capped (the numpy passes walk it a byte a step: too slow to compare)
    assert line_table(["+" + " " * 0x10005 + "x"], [1], skip=1).indent.tolist() == [0xFFFF]
    # one text under each marker: one content per marker group, renumbered along the lines
    table = _assert_same(["x = 1 # c // d -- e"] * 4 + ["y"], [3, 2, 1, 0, 2], what="one text, four markers")
    assert table.content.tolist() == [0, 1, 2, 3, 4]


def test_input_outside_the_contract_goes_to_numpy():
    """A text that is not an exact str, holds a line break or is shorter than `skip`, or a marker
    outside MARKERS: the C table declines (None) and line_table answers (or raises) with numpy."""
    need_native(_C, "credit._text")

    class Text(str):
        pass

    content, indent = np.empty(2, np.int64), np.empty(2, np.int64)
    for texts, markers, skip in [(["a", Text("b")], [1, 1], 0), (["a", "b\nc"], [1, 1], 0), (["ab", ""], [1, 1], 1),
                                 (["a", "b"], [1, 4], 0), (["a", "b"], [-1, 1], 0), (["a", "b"], [1, 1], -1)]:
        markers = np.array(markers, np.int64)
        assert _C(texts, markers, skip, content, indent) is None, (texts, markers, skip)
    with pytest.raises(ValueError, match="line breaks"):
        line_table(["a", "b\nc"], np.ones(2, np.int64))
    for texts, markers in [(["a # b", Text("c # d")], [1, 1]), (["a # b", "c -- d"], [1, 4])]:
        got, expected = line_table(texts, np.array(markers)), line_table_numpy(texts, np.array(markers))
        np.testing.assert_array_equal(got.content, expected.content)
        np.testing.assert_array_equal(got.contents.hashes, expected.contents.hashes)
    with pytest.raises(ValueError, match="one entry a text"):
        _C(["a"], np.ones(2, np.int64), 0, content, indent)
    with pytest.raises(TypeError, match="list or a tuple"):
        _C(iter(["a"]), np.ones(1, np.int64), 0, content[:1], indent[:1])
