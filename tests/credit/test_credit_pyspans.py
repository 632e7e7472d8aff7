"""credit.pyspans answers exactly what tree-sitter (with split's indentation fallback) gives, or not at all.

The proof is by oracle: hand-written snippets of each construct, windows cut like hunk sides from a
fixed sample of the standard library (starting and ending anywhere: mid-block, mid-bracket, inside
docstrings), and the benchmark's generated code. Whenever `python_spans` answers a group, its
spans must equal what the split gives without it: the Python grammar's parse
(`credit.syntax.block_spans`), or indentation blocks where the side does not parse.
"""

import random

import numpy as np

from credit import pyspans, split, syntax
from credit_testlib import load_bench, stdlib_windows


def answers(windows):
    """python_spans on the windows as one batch: per window, its spans or None when unsure."""
    rows = [row for w in windows for row in w]
    data, starts, ends = split._encode_rows(rows)
    group = np.repeat(np.arange(len(windows)), [len(w) for w in windows])
    answered, first, last = pyspans.python_spans(data, starts, ends, group, len(windows))
    base = np.concatenate([[0], np.cumsum([len(w) for w in windows])])
    out = [[] if ok else None for ok in answered.tolist()]
    for f, l in zip(first.tolist(), last.tolist()):
        g = int(np.searchsorted(base, f, side="right") - 1)
        out[g].append((f - int(base[g]), l - int(base[g])))
    return [None if o is None else tuple(o) for o in out]


def check(windows):
    """The answers, after asserting each one equals the oracle's."""
    got = answers(windows)
    for w, spans in zip(windows, got):
        if spans is not None:
            assert spans == parsed_or_indented(w), "\n".join(w)
    return got


def parsed_or_indented(rows):
    """The spans the split gives a Python side without the reader."""
    parsed = syntax.block_spans(syntax.GRAMMARS["python"], [rows])[0]
    if parsed is not None:
        return tuple(parsed)
    first, last = split.indent_spans(rows, np.zeros(len(rows), np.int64))
    return tuple(zip(first.tolist(), last.tolist()))


def test_constructs_inside_the_subset_are_answered_as_tree_sitter_does():
    cases = [
        "if a:\n    x = 1\n    # note\ny = 2",  # a comment as deep as the body is in the block
        "if a:\n    x = 1\n  # note\ny = 2",  # one indented less is not
        "if a:\n    x = 1\n\n\ny = 2",
        "if a:\n    if b:\n        x\n    # c\ny",
        "if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w\nv",
        "try:\n    x\nexcept E as e:\n    y\nelse:\n    z\nfinally:\n    w",
        "for i in range(3):\n    x\nelse:\n    y\nwhile a:\n    b",
        "@dec(1)\n@other\ndef f(a, *, b: int = 2) -> int:\n    return a",
        "class C(B, metaclass=M):\n    x: int = 1\n    def f(self):\n        pass",
        "d = {1: 2, 3: [x[1:2] for x in y]}\nif d:\n    pass",
        "f = lambda x, y=1: x + y\nx: int = 1\ns = a[1:2, ::3]\nif s:\n    t = x  # 'a' # b: c",
        "while (n := f()):\n    g(n)\n        # deeper comment\nh()",
        "def f():\n    return [\n        1]\n",
        "def f():\n    x = 1\n# a comment less indented than the code after it\n    y = 2\nz",
        "def f():\n    pass\n  y = 1",  # a dedent to no open level: an ordinary line for the scanner
        "        x = 1\n    if a:\n        b\nc",  # a window that starts inside a block
        "def f():\n    x = \"a: b # c\" + 'd'  # a comment: 'quoted'\n    return x + r'\\\\'",
        "@dec(\n  1)\ndef f(a,\n      b: int = {1: 2},\n) -> X:\n    return g(\n  a,  # c\n b)\nz",
    ]
    windows = [tuple(c.split("\n")) for c in cases]
    got = check(windows)
    # the plain ones must not fall back to tree-sitter, or the fast path would be vacuous
    assert all(got[k] is not None for k in (0, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 14, 15, 16, 17))
    assert got[4] == ((0, 7),) and got[7] == ((0, 3), (2, 3)) and got[8] == ((0, 3), (2, 3))


def test_what_indentation_cannot_decide_goes_to_tree_sitter():
    unsure = [
        'def f():\n    """doc\n    string"""\n    return 1',  # strings
        "if a: x = 1\nelse: y = 2",  # one-line bodies
        "    b)\nif a:\n    c",  # a bracket opened before the window
        "x = f(a,\nif a:\n    c",  # one still open at its end
        "x = 1 + \\\n    2\nif x:\n    y",  # a continuation
        "if a:\n\tx = 1",  # a tab
        "match x:\n    case 1:\n        pass",  # match statements
        "def f():\n    return f'{x}'",  # an f-string with a replacement field
        "async def f():\n    pass",
        "if a:\n    x\n# trailing comment",
        "x = 1\nelse:\n    y",  # a clause with nothing to continue
        "if a:\n    x\n  y\nelse:\n    z",  # a clause after a line that closed the block
        "def f():",  # a header without a body
        "if a:\nb",  # an empty block
        "chosen to make the minimum: and maximum elements coincide with the\nendpoints of it",  # prose
        ".. sourcecode:: html\nif a:\n    b",  # reStructuredText
        "    'key': 'value',\n    'other': 1,\n}\nif a:\n    b",  # dict items cut from their braces
        "x = (1]\nif x:\n    y",  # brackets that do not nest
        "x : array_like\n    Real-valued\nif a:\n    b",  # numpydoc prose, an annotation to the eye
        "show : bool, optional\nif a:\n    b",
        "T(\n    dt: 0.1\n)\nif a:\n    b",  # a colon directly inside parentheses
        "f = open(%a, mode='rb')\nif a:\n    b",  # template code: an operator after a bracket
        "x = {name!r}\nif a:\n    b",
        "if a:\n    b\nelif:\n    c",
        "'a', 'b', c=d,\nif a:\n    b",  # arguments cut from their call
        ".. [1] Reference\nif a:\n    b",
        "and self.x == y\nif a:\n    b",
        "if a:\n    pass'x'\nb",  # a name glued to a string
    ]
    assert all(spans is None for spans in check([tuple(c.split("\n")) for c in unsure]))


def test_the_benchmark_code_is_answered_and_agrees():
    bench = load_bench()
    rng = np.random.default_rng(0)
    windows = []
    for _ in range(150):
        fn = bench.function(rng, int(rng.integers(5, 41)))
        windows += [tuple(fn), tuple(bench.near_duplicate(rng, fn)), tuple(fn + ["", "", "def keep():", "    pass"])]
    got = check(windows)
    assert sum(g is not None for g in got) == len(windows)


def test_windows_of_the_standard_library_agree_with_tree_sitter():
    rng = random.Random(0)
    windows = [window for window in stdlib_windows(rng) if not any("\r" in row or "\x0c" in row for row in window)]
    got = check(windows)
    assert len(windows) > 2000 and sum(g is not None for g in got) > 100
