import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.text import MARKERS, TOKEN, comment_marker, line_table, normalize_line, similarity, tokenize


def test_normalize_line():
    assert normalize_line("x = 1   # set x  ") == "x = 1"
    assert normalize_line("    # only a comment") == ""
    assert normalize_line("   \t") == ""
    assert normalize_line("s = '# not a comment'") == "s = '# not a comment'"
    assert normalize_line("    y = 2\t") == "    y = 2"
    assert normalize_line("int x = 1; // c", "//") == "int x = 1;"
    assert normalize_line(" * block comment", "//") == ""
    assert comment_marker("a/b.py") == "#" and comment_marker("x.ts") == "//" and comment_marker("x.bin") is None


def test_similarity_is_the_dice_of_token_multisets():
    assert similarity("a = b", "a = b") == 1.0
    # {a, =, b} vs {a, =, c}: 2 * 2 / 6
    assert similarity("a = b", "a = c") == pytest.approx(2 / 3)
    assert similarity("x = 1  # note", "x = 1\n\n") == 1.0


def test_hashes_do_not_depend_on_the_hash_seed():
    code = (
        "import sys; sys.path.insert(0, {root!r})\n"
        "import numpy as np; from credit.text import line_table\n"
        "c = line_table(['x = 1', 'y = 2'], np.ones(2, int)).contents; print(c.hashes, c.tokens)\n"
    ).format(root=str(Path(__file__).resolve().parents[2]))
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1


def test_vectorized_tokenizer_matches_the_regex_tokenizer():
    texts = ["x = foo(a, b)", "naïve_ß = 'café'", "a+=1;b", "", "__init__", "λx: x**2", "tab\there"]
    got = tokenize(texts)
    ids_of = {}
    for k, text in enumerate(texts):
        expected = TOKEN.findall(text)
        ids = got.tokens[got.token_ptr[k]:got.token_ptr[k + 1]].tolist()
        assert len(ids) == len(expected), text
        for tok, i in zip(expected, ids):
            assert ids_of.setdefault(tok, i) == i
    assert len(set(ids_of.values())) == len(ids_of)  # distinct tokens get distinct ids
    again = tokenize(["a+=1;b", "x = foo(a, b)", "x = foo(a, c)"])
    assert again.hashes[0] == got.hashes[2] and again.hashes[1] == got.hashes[0] != again.hashes[2]


def test_line_table_gives_content_ids_and_indents():
    table = line_table(["    x = 1", "# note", "x = 1  # same content", "", "\ty = 2"], np.ones(5, np.int64))
    assert table.content.tolist() == [0, -1, 0, -1, 1]
    assert table.indent[[0, 2, 4]].tolist() == [4, 0, 1]
    assert table.contents.hashes.shape == (2,) and table.contents.token_ptr.tolist() == [0, 3, 6]


LINES = st.text(alphabet=st.sampled_from(list("ab_1 \t#/-*'\"é\u00a0xy=:(")), max_size=14)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(LINES, st.integers(0, len(MARKERS) - 1)), max_size=25))
def test_line_table_is_normalize_line_and_tokenize_vectorized(lines):
    texts, markers = [t for t, _ in lines], np.array([m for _, m in lines], np.int64)
    table = line_table(texts, markers)
    ids: dict[str, int] = {}
    for k, (text, marker) in enumerate(lines):
        norm = normalize_line(text, MARKERS[marker])
        content = norm.lstrip(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")
        assert table.content[k] == (ids.setdefault(content, len(ids)) if norm else -1)
        if norm:
            assert table.indent[k] == len(norm) - len(content)
    ref = tokenize(list(ids))
    assert table.contents.hashes.tolist() == ref.hashes.tolist()
    assert table.contents.token_ptr.tolist() == ref.token_ptr.tolist()
    assert table.contents.tokens.tolist() == ref.tokens.tolist()


def test_line_table_rejects_mismatched_markers():
    with pytest.raises(ValueError, match="markers must have shape"):
        line_table(["x = 1"], np.array([1, 1]))
