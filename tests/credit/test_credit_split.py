import difflib
import random
import re

import numpy as np
import pytest

from credit import split as split_module
from credit.split import ADDED, DELETED, LEVELS, split_diff, split_diffs

MODIFY = """diff --git a/m.py b/m.py
index 1111111..2222222 100644
--- a/m.py
+++ b/m.py
@@ -1,4 +1,12 @@
 import os
-x = 1
+x = 2
+
+def f(a):
+    for i in a:
+        if i:
+            print(i)
+    return a
+
+y = 3
 z = 4
 w = 5
"""


def units(sub):
    return {(LEVELS[sub.unit_levels[u]], tuple(sub.unit(u).tolist())) for u in range(sub.n_units)}


def test_lines_keep_edit_type_path_and_line_numbers():
    sub = split_diff(MODIFY)
    assert sub.kinds.tolist() == [DELETED] + [ADDED] * 9
    assert sub.line_numbers.tolist() == [2] + list(range(2, 11))
    assert set(sub.paths) == {"m.py"}
    assert sub.texts[4] == "    for i in a:"


def test_levels_with_tree_sitter():
    # file-level units (one per edit type) equal the hunk and block units, which are kept once;
    # tree-sitter adds the function, the loop and the if statement
    assert units(split_diff(MODIFY)) == {
        ("file", (0,)), ("file", tuple(range(1, 10))),
        ("syntax", (3, 4, 5, 6, 7)), ("syntax", (4, 5, 6)), ("syntax", (5, 6)),
    }


def test_two_hunks_give_hunk_and_block_units():
    diff = MODIFY.replace(" z = 4\n w = 5\n", " z = 4\n w = 5\n@@ -20,2 +28,3 @@\n a = 1\n+b = 2\n c = 3\n")
    diff = diff.replace("@@ -1,4 +1,12 @@", "@@ -1,4 +1,12 @@")
    got = units(split_diff(diff, levels=("file", "hunk")))
    assert ("file", tuple(range(1, 10)) + (10,)) in got
    assert ("hunk", tuple(range(1, 10))) in got and ("hunk", (10,)) in got


def test_runs_of_one_edit_type_are_line_blocks():
    diff = """diff --git a/c.txt b/c.txt
--- a/c.txt
+++ b/c.txt
@@ -1,4 +1,4 @@
-a
-b
+A
+B
 keep
-c
+C
"""
    got = units(split_diff(diff, levels=("block",)))
    assert got == {("block", (0, 1)), ("block", (2, 3)), ("block", (4,)), ("block", (5,))}


def test_indentation_blocks_for_other_languages():
    diff = """diff --git a/m.c b/m.c
--- a/m.c
+++ b/m.c
@@ -1,1 +1,7 @@
 #include <stdio.h>
+int f(int x) {
+    if (x) {
+        return 1;
+    }
+    return 0;
+}
"""
    got = units(split_diff(diff, levels=("syntax",)))
    assert got == {("syntax", (0, 1, 2, 3, 4, 5)), ("syntax", (1, 2, 3))}


def test_python_that_does_not_parse_falls_back_to_indentation():
    diff = """diff --git a/m.py b/m.py
--- a/m.py
+++ b/m.py
@@ -1,1 +1,5 @@
 x = 1
+def broken(:
+    return (
+for i in y:
+    print(i)
"""
    got = units(split_diff(diff, levels=("syntax",)))
    assert got == {("syntax", (0, 1)), ("syntax", (2, 3))}
    assert units(split_diff(diff, levels=("syntax",), syntax="indent")) == got


def test_new_deleted_renamed_and_binary_files():
    diff = """diff --git a/new.py b/new.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+def f():
+    return 1
diff --git a/old.py b/renamed.py
similarity index 100%
rename from old.py
rename to renamed.py
diff --git a/img.png b/img.png
index 1111111..2222222 100644
Binary files a/img.png and b/img.png differ
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 1111111..0000000
--- a/gone.py
+++ /dev/null
@@ -1,1 +0,0 @@
-x = 1
"""
    sub = split_diff(diff)
    assert sub.paths == ("new.py", "new.py", "gone.py")
    assert sub.kinds.tolist() == [ADDED, ADDED, DELETED]
    assert sub.line_numbers.tolist() == [1, 2, 1]
    assert units(sub) == {("file", (0, 1)), ("file", (2,))}


def test_empty_diff_and_bad_input():
    assert split_diff("").n_units == 0
    assert split_diff("  \n").n_units == 0
    with pytest.raises(ValueError, match="no file header"):
        split_diff("just some text")
    with pytest.raises(ValueError, match="not a valid unified diff"):
        split_diff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n")
    with pytest.raises(ValueError, match="levels must be"):
        split_diff(MODIFY, levels=("function",))
    # a hunk header that is no header: unidiff skipped it and its lines, and the step lost its diff
    # and one whose numbers do not fit in int64 (it raised OverflowError from numpy)
    for header in ("@@ -0,0 +1,x @@", "@@ garbage @@", "@@ -99999999999999999999,1 +1,1 @@"):
        with pytest.raises(ValueError, match=f"hunk header '{re.escape(header)}' is not"):
            split_diff(f"--- a/m.py\n+++ b/m.py\n{header}\n+x = 1\n")


def test_git_quoted_paths_are_the_files_names():
    # git quotes a name with non-ASCII bytes (C escapes of its UTF-8); the name, unquoted, is what
    # provenance and the language's comment syntax go by
    quoted = ('diff --git "a/\\303\\274.py" "b/\\303\\274.py"\n--- "a/\\303\\274.py"\n+++ "b/\\303\\274.py"\n'
              "@@ -0,0 +1,2 @@\n+x = 1  # one\n+y = 2\n")
    assert split_diff(quoted).paths == ("\u00fc.py", "\u00fc.py")
    plain = quoted.replace('"a/\\303\\274.py"', "a/\u00fc.py").replace('"b/\\303\\274.py"', "b/\u00fc.py")
    assert split_diff(plain).texts == split_diff(quoted).texts


def _unidiff_split(diff, **options):
    """The same split with the hunk bodies read by unidiff (the path for diffs the scan leaves)."""
    want = tuple(lv in options.get("levels", LEVELS) for lv in LEVELS)
    body = split_module._parse_with_unidiff(0, diff)
    return split_module._units(body, 1, want, options.get("syntax", "tree-sitter") == "tree-sitter", 3).sub(0)


def _same(a, b):
    return (a.paths == b.paths and a.texts == b.texts and a.kinds.tolist() == b.kinds.tolist()
            and a.line_numbers.tolist() == b.line_numbers.tolist() and a.unit_levels.tolist() == b.unit_levels.tolist()
            and a.unit_ptr.tolist() == b.unit_ptr.tolist() and a.unit_lines.tolist() == b.unit_lines.tolist())


TRICKY_LINES = ["x = 1", "-- a comment in SQL", "++i;", "--- a/not_a_header", "+++ b/not_a_header", "@@ not a hunk",
                "def f(a):", "    if a:", "        return 2", "    return 3", "", "   ", "naïve = 'é'", "y = 4\r"]


def _random_diffs(seed: int, n: int) -> list[str]:
    """Diffs of random edits as difflib writes them (plain unified format), some with git's headers,
    missing final newlines, several files, or the lines above that look like headers."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        before = [rng.choice(TRICKY_LINES) + "\n" for _ in range(rng.randint(0, 25))]
        after = list(before)
        for _ in range(rng.randint(1, 6)):
            at = rng.randint(0, len(after))
            if rng.random() < 0.4 or not after:
                after.insert(at, rng.choice(TRICKY_LINES) + "\n")
            elif rng.random() < 0.5:
                del after[min(at, len(after) - 1)]
            else:
                after[min(at, len(after) - 1)] = rng.choice(TRICKY_LINES) + "\n"
        path = f"pkg/f{k}.py" if k % 3 else f"src/f{k}.c"
        diff = "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", n=rng.choice([0, 1, 3])))
        if not diff:
            continue
        if diff.endswith("\n") and rng.random() < 0.2:
            diff += "\\ No newline at end of file\n"
        if rng.random() < 0.4:
            diff = f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n" + diff
        if out and rng.random() < 0.3:
            diff += out[-1]
        out.append(diff)
    return out


def test_the_batch_scan_reads_diffs_as_unidiff_does():
    diffs = _random_diffs(0, 120) + [MODIFY]
    for options in ({}, {"syntax": "indent"}, {"levels": ("hunk", "block")}):
        for diff in diffs:
            try:
                expected = _unidiff_split(diff, **options)
            except split_module.DiffError as err:
                with pytest.raises(ValueError, match=re.escape(str(err))):
                    split_diff(diff, **options)
                continue
            assert _same(split_diff(diff, **options), expected), diff
    assert not split_module._scan([d for d in diffs if _parses(d)])[1]  # all of them took the fast path


def _parses(diff):
    try:
        split_module._parse_with_unidiff(0, diff)
        return True
    except ValueError:
        return False


def test_a_batch_splits_each_diff_as_alone_and_names_a_bad_one():
    diffs = [d for d in _random_diffs(1, 300) if _parses(d)] + ["", "not a diff"]
    batch = split_diffs(diffs[:-1])
    for d, diff in enumerate(diffs[:-1]):
        assert _same(batch.sub(d), split_diff(diff))
    with pytest.raises(split_module.DiffError, match="no file header") as err:
        split_diffs(diffs)
    assert err.value.index == len(diffs) - 1


def test_vectorized_indentation_blocks_match_the_stack_scan():
    rng = random.Random(5)
    pieces = ["x = 1", "}", ")", "]", "end", "endif", "foo(", "bar", "", "   ", "\tq", "if a:", ") + 1", "naïve"]
    groups = [[" " * rng.choice([0, 0, 2, 4, 4, 8]) + rng.choice(pieces) for _ in range(rng.randint(1, 12))]
              for _ in range(400)]
    rows = [row for group in groups for row in group]
    first, last = split_module.indent_spans(rows, np.repeat(np.arange(len(groups)), [len(g) for g in groups]))
    base = np.cumsum([0] + [len(g) for g in groups])
    got = [[] for _ in groups]
    for f, l in zip(first.tolist(), last.tolist()):
        g = int(np.searchsorted(base, f, side="right") - 1)
        got[g].append((f - base[g], l - base[g]))
    for group, spans in zip(groups, got):
        assert tuple(spans) == _stack_indent_spans(group), group


def _stack_indent_spans(rows: list[str]) -> tuple[tuple[int, int], ...]:
    """Indentation blocks by a stack scan (the oracle): a line plus the following more-indented
    lines; a line at the block's own indent that starts with a closing bracket (or `end`) closes it."""
    spaces = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
    indents = [len(r) - len(r.lstrip(spaces)) if r.strip(spaces) else -1 for r in rows]
    spans = []
    stack: list[list[int]] = []  # [indent, first row, last row]
    for r, d in enumerate(indents):
        if d < 0:
            continue
        closes = rows[r].lstrip().startswith(("}", ")", "]", "end"))
        while stack and stack[-1][0] >= d:
            indent, first, last = stack.pop()
            if closes and indent == d:
                last, closes = r, False
                d = -1  # consumed: this row is part of the popped block, not a new one
            if last > first:
                spans.append((first, last))
            if stack:
                stack[-1][2] = max(stack[-1][2], last)
            if d < 0:
                break
        if d >= 0:
            if stack:
                stack[-1][2] = r
            stack.append([d, r, r])
    while stack:
        indent, first, last = stack.pop()
        if last > first:
            spans.append((first, last))
        if stack:
            stack[-1][2] = max(stack[-1][2], last)
    return tuple(sorted(spans))


@pytest.mark.parametrize("chunk", [7, 64])
def test_a_batch_split_in_chunks_is_the_batch_split_at_once(chunk, monkeypatch):
    """Diffs are split `_CHUNK_DIFFS` at a time and the pieces joined: each diff's units, the
    paths' numbering and the index of a bad diff are those of one split over the whole batch."""
    diffs = [d for d in _random_diffs(2, 200) if _parses(d)]
    whole = split_diffs(diffs)
    monkeypatch.setattr(split_module, "_CHUNK_DIFFS", chunk)
    chunked = split_diffs(diffs)
    assert len(diffs) > 2 * chunk
    assert chunked.path_names == whole.path_names
    assert chunked.texts == whole.texts
    for name in ("line_ptr", "path_ids", "kinds", "line_numbers", "diff_units", "unit_levels", "unit_ptr",
                 "unit_lines"):
        assert getattr(chunked, name).tolist() == getattr(whole, name).tolist(), name
    for d, diff in enumerate(diffs):
        assert _same(chunked.sub(d), split_diff(diff))
    with pytest.raises(split_module.DiffError, match="no file header") as err:
        split_diffs(diffs + ["not a diff"])
    assert err.value.index == len(diffs)


