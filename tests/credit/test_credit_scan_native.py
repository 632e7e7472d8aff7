"""credit.split._scan in C (credit._scan) against the numpy passes it replaces (`_scan_numpy`): the
same hunk bodies (every array, dtype, source line, byte, file path) and the same diffs left to
unidiff, on every input.

Inputs: the diffs credit.didpo splits on the benchmark's rollouts, difflib and git diffs (file
headers, modes, renames, quoted paths, several files and hunks, no newline at end), and thousands
of them mutated at the places the scan's rules read: header counts and numbers, dropped, swapped
and repeated lines, headers inside bodies, lines of other kinds, carriage returns, "\\" markers,
non-ASCII text and lone surrogates, blank and whitespace-only diffs. Many diffs go in one chunk:
hunk ids run across diffs, recognised or not.
"""
import difflib
import random
import re

import numpy as np
import pytest
from credit_testlib import load_bench, need_native

import credit
from credit import split

_FIELDS = ("diff", "file", "hunk", "type", "number", "at", "start", "end", "data")


def _assert_same(diffs):
    """_scan (through C, which must take the input) equals _scan_numpy, field by field."""
    need_native(split._c_scan, "credit._scan")
    assert split._c_scan(diffs, split._file_path) is not None or not any(d.strip() for d in diffs)
    got, expected = split._scan(diffs), split._scan_numpy(diffs)
    assert got[1] == expected[1], "diffs left to unidiff"
    if expected[0] is None:
        assert got[0] is None
        return expected
    a, b = got[0], expected[0]
    for name in _FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.source == b.source
    assert a.file_paths == b.file_paths
    assert a.carriage_returns is b.carriage_returns
    return expected


# --- diffs as git and difflib write them

_CODE = ["import os", "", "def f(a, b):", "    return a + b", "class C:", "    x = 1", "    def g(self):",
         "        pass", "# comment", "y = [1, 2, 3]", "print('é ü')", "s = '\\t'", "    ", "\tz = 2", "}"]


def _file_text(rng: random.Random) -> list[str]:
    return [rng.choice(_CODE) + "\n" for _ in range(rng.randint(0, 30))]


def _edited(rng: random.Random, lines: list[str]) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(0, 6)):
        at = rng.randint(0, len(out))
        u = rng.random()
        if u < 0.4:
            out.insert(at, rng.choice(_CODE) + "\n")
        elif u < 0.7 and out:
            del out[min(at, len(out) - 1)]
        elif out:
            out[min(at, len(out) - 1)] = rng.choice(_CODE) + "\n"
    return out


def _path(rng: random.Random) -> str:
    return rng.choice(["m.py", "pkg/mod.py", "src/a.c", "dir with space/f.txt", "ü.py", 'q"uote.py', "t\tab.py",
                       "a/b/c.py", "b/x.py"])


def _quoted(path: str) -> str:
    """A path as git writes one with non-ASCII bytes or quotes: C escapes of its UTF-8, in quotes."""
    if path.isascii() and '"' not in path and "\t" not in path:
        return path
    escaped = "".join(c if c.isascii() and c not in '"\\\t' else
                      {'"': '\\"', "\\": "\\\\", "\t": "\\t"}.get(c) or "".join(f"\\{b:03o}" for b in c.encode())
                      for c in path)
    return f'"{escaped}"'


def _file_section(rng: random.Random) -> str:
    """One file of a git diff: header lines, then difflib's hunks (or none: mode change, binary)."""
    path = _path(rng)
    before = _file_text(rng)
    kind = rng.choice(["modify", "modify", "modify", "new", "deleted", "rename", "binary", "mode"])
    after = [] if kind == "deleted" else _file_text(rng) if kind == "new" else _edited(rng, before)
    if kind == "new":
        before = []
    a, b = _quoted("a/" + path), _quoted("b/" + (path + ".new" if kind == "rename" else path))
    head = f"diff --git {a} {b}\n"
    if kind == "new":
        head += "new file mode 100644\nindex 0000000..1111111\n"
    elif kind == "deleted":
        head += "deleted file mode 100644\nindex 1111111..0000000\n"
    elif kind == "rename":
        head += f"similarity index 90%\nrename from {path}\nrename to {path}.new\nindex 1111111..2222222 100644\n"
    elif kind == "mode":
        return head + "old mode 100644\nnew mode 100755\n"
    elif kind == "binary":
        return head + f"index 1111111..2222222\nBinary files {a} and {b} differ\n"
    else:
        head += "index 1111111..2222222 100644\n"
    if rng.random() < 0.2 and before and after:  # no newline at end of file, on one side or both
        side = rng.choice([before, after])
        side[-1] = side[-1].rstrip("\n")
    src = "/dev/null" if kind == "new" else a
    tgt = "/dev/null" if kind == "deleted" else b
    date = "\t2024-01-01 00:00:00" if rng.random() < 0.2 else ""
    lines = difflib.unified_diff(before, after, src + date, tgt + date, n=rng.choice([0, 1, 3]))
    # a line without its newline is marked as git marks it
    return head + "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                          for line in lines)


def _git_diff(rng: random.Random) -> str:
    return "".join(_file_section(rng) for _ in range(rng.randint(1, 4)))


def _plain_diff(rng: random.Random) -> str:
    """difflib.unified_diff of one file, as a step may write it (no git header)."""
    before = _file_text(rng)
    return "".join(difflib.unified_diff(before, _edited(rng, before), "a/" + _path(rng), "b/x.py",
                                        n=rng.choice([0, 2, 3])))


# --- mutations at the places the scan's rules read

_GARBAGE = ["garbage", "@@", "@@ -1 +1 @@", "@@ -1,2 +3,4 @@ def f():", "@@ -x +1 @@", "@@ -1,2 +1,", "@@@ -1 +1 @@",
            "@@ -1234567890123456789 +1 @@", "@@ -123456789012345678 +1,0 @@", "@@ -1,0 +0,0 @@", "@@ -0,0 +1 @@",
            "@@ -1, +1 @@", "@@ -1,2, +1 @@", "@@  -1 +1 @@", "@@ -1 +1 @", "@@ -1 +1 @@\r", "@@ -１ +1 @@",
            "\\ No newline at end of file", "\\", "", " ", "-", "+", "--- a/x.py", "+++ b/x.py", "--- ", "+++ ",
            "diff --git a/x b/x", "index 1..2", "\r", " \r", "+\r", "é", "+é", "-\ud800", "+ \udcff", "\x0c", "\t",
            "+++ /dev/null", "--- /dev/null", '--- "a/\\303\\274.py"', '+++ "b/\\303\\274.py"', '--- "a/\\xff"',
            "--- a/\t", "+++ b/", "--- a/", "+++ b/y.py\t2024"]


def _mutated(rng: random.Random, diff: str) -> str:
    lines = diff.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3, 5])):
        at = rng.randrange(len(lines)) if lines else 0
        lines = lines or [""]
        u = rng.random()
        if u < 0.15:
            del lines[at]
        elif u < 0.3:
            lines.insert(at, rng.choice(_GARBAGE))
        elif u < 0.4 and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif u < 0.5:
            lines.insert(at, lines[at])
        elif u < 0.7:  # a header's numbers changed
            headers = [k for k, line in enumerate(lines) if line.startswith("@@")]
            if headers:
                k = rng.choice(headers)
                lines[k] = _renumbered(rng, lines[k])
        elif u < 0.8:
            lines[at] = lines[at] + "\r"
        elif u < 0.85:
            lines[at] = rng.choice(" +-\\@") + lines[at][1:]
        elif u < 0.9:
            lines.insert(at, rng.choice(["@@ -1,3 +1,3 @@", "@@ -2 +2,2 @@", "@@ -5,0 +6 @@"]))
        elif u < 0.95:
            lines[at] = lines[at][:1] + rng.choice(["é", "ü\u2028", "\ud83d", "日本", "\x85", "\U0001f600"]) + lines[at][1:]
        else:
            lines.insert(at, "\\ No newline at end of file")
    out = "\n".join(lines)
    if rng.random() < 0.2:
        out = out.rstrip("\n")
    return out


def _renumbered(rng: random.Random, header: str) -> str:
    nums = [rng.choice([0, 1, 2, 3, 5, 10, 100, rng.randint(0, 40)]) for _ in range(4)]
    form = rng.choice(["@@ -{0},{1} +{2},{3} @@", "@@ -{0} +{2},{3} @@", "@@ -{0},{1} +{2} @@", "@@ -{0} +{2} @@",
                       "@@ -{0},{1} +{2},{3} @@ tail", "@@ -{0},{1} +{2},{3}@@", "@@ -{0}{1} +{2},{3} @@"])
    if rng.random() < 0.5:  # off by one from what it was
        old = [int(x) for x in re.findall(r"\d+", header)[:4]] + [1, 1, 1, 1]
        nums = [max(0, v + rng.choice([-1, 0, 0, 1])) for v in old[:4]]
    return form.format(*nums)


def _blank(rng: random.Random) -> str:
    return rng.choice(["", "\n", " ", "  \n\n", "\t", "\x1c", "\u2028", "\x85", "\u3000\n", "\r\n", "\x0b\x0c"])


def _chunk(rng: random.Random, size: int) -> list[str]:
    out = []
    for _ in range(size):
        u = rng.random()
        if u < 0.1:
            out.append(_blank(rng))
        elif u < 0.45:
            out.append(_git_diff(rng))
        elif u < 0.55:
            out.append(_plain_diff(rng))
        else:
            out.append(_mutated(rng, _git_diff(rng) if rng.random() < 0.8 else _plain_diff(rng)))
    return out


def test_the_c_scan_reads_the_benchmark_diffs_as_numpy():
    need_native(split._c_scan, "credit._scan")
    bench = load_bench()
    batch = [t.to_dict() for t in bench.rollouts(4, 8, 4, seed=3)]
    chunks = []
    saved = split._scan

    def capture(diffs):
        chunks.append(list(diffs))
        return saved(diffs)

    split._scan = capture
    try:
        credit.didpo(batch)
    finally:
        split._scan = saved
    assert chunks and any(chunks)
    for chunk in chunks:
        body, bad = _assert_same(chunk)
        assert body is not None and not bad  # the benchmark's diffs are all read by the scan


@pytest.mark.parametrize("seed", range(6))
def test_the_c_scan_reads_git_and_difflib_diffs_as_numpy(seed):
    rng = random.Random(seed)
    chunk = [_git_diff(rng) if rng.random() < 0.8 else _plain_diff(rng) for _ in range(150)]
    body, bad = _assert_same(chunk)
    assert body is not None and len(bad) < len(chunk) / 2


@pytest.mark.parametrize("seed", range(12))
def test_the_c_scan_reads_mutated_diffs_as_numpy(seed):
    """Chunks of every size, down to one diff; about half the mutated diffs are left to unidiff."""
    rng = random.Random(100 + seed)
    for size in [300, 40, 7, 1, 1, 1]:
        _assert_same(_chunk(rng, size))


@pytest.mark.parametrize("diff", [
    "@@ -1 +1 @@\n-a\n+b\n",  # no file header
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",  # no newline at the end
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n\n-a\n+b\n",  # an empty line is context
    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n",
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n-c\n+d\n",  # a hunk right after: same file
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nx\n@@ -5 +5 @@\n-c\n+d\n",  # a line between: a file without header
    "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n@@ -5 +5 @@\n-c\n+d\n",  # a header inside a body
    "--- a/x\n+++ b/x\n@@ -1,0 +1,0 @@\n@@ -1 +1 @@\n-a\n+b\n",  # an empty hunk
    "--- a/x\n+++ b/x\n@@ -1,2 +1,1 @@\n a\n",  # counts that do not add up at the end
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n",  # context takes both counts
    "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n-b\n",
    "--- a/x\n+++ b/x\n@@ -1234567890123456789 +1 @@\n-a\n+b\n",  # 19 digits: not a header
    "--- a/x\n+++ b/x\n@@ -123456789012345678,1 +123456789012345678 @@\n-a\n+b\n",
    "--- a/x\n+++ b/x\n@@ -1,999999999999999999 +1,999999999999999999 @@\n-a\n+b\n",  # counts past the diff
    "--- a/ü\n+++ b/ü\n@@ -1 +1 @@\n-é\n+\ud800x\n",
    "--- a/\ud83d\ude00\n+++ b/\ud83d\ude00\n@@ -1 +1 @@\n-\ud83d\ude00\n+\udcff\xff\u0100\U0010ffff\n",  # a surrogate pair: 6 bytes
    '--- "a/\\303\\274.py"\n+++ "b/\\303\\274.py"\n@@ -1 +1 @@\n-a\n+b\n',
    "--- a/\n+++ b/\n@@ -1 +1 @@\n-a\n+b\n",  # the empty path
    "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
    "diff --git a/x b/x\nBinary files a/x and b/x differ\n",
    "@@", "\n@@ -1 +1 @@\n", "-\n+\n", " \n\n@@\n", "\u2028", "\t\n \n",
])
def test_the_c_scan_reads_each_rule_as_numpy(diff):
    _assert_same([diff])
    _assert_same(["", diff, "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", diff, " "])


def test_input_the_c_scan_does_not_take_goes_to_numpy():
    need_native(split._c_scan, "credit._scan")
    assert split._c_scan(["", " \n", "\u3000"], split._file_path) is None  # nothing to read
    assert split._c_scan(("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",), split._file_path) is not None
    assert split._c_scan(iter(["a"]), split._file_path) is None
    assert split._c_scan(["a", b"b"], split._file_path) is None

    class Text(str):
        pass

    assert split._c_scan([Text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")], split._file_path) is None
    with pytest.raises(AttributeError):
        split._scan(["a", 1])
