"""credit.pyspans.python_spans in C (credit._pyspans) against the numpy passes it replaces
(`python_spans_numpy`): the same answers, spans and dtypes on every input.

Inputs: windows of the standard library (as tests/credit/test_credit_pyspans.py cuts them), the
hunk sides credit.didpo reads on the benchmark's rollouts, and fuzzed rows made to hit each rule
of the subset and each node rule. Every batch is laid out in several ways, since the numpy passes
read across rows: rows joined by line breaks (as credit.split encodes them), rows in order with
other bytes between them (as in a diff: the byte before a row is read as a string prefix), and rows
out of order (gathered first). Many groups go in one batch: a group's answer may depend on the
group before it.
"""
import random

import numpy as np
import pytest
from credit_testlib import assert_didpo_unchanged_without, load_bench, need_native, stdlib_windows, through_c

import credit
from credit import pyspans, split

_C = pyspans.c_python_spans

# fragments for the fuzzer: lines of each kind the rules tell apart
_HEADERS = ["def f(a, b):", "def f():", "def f(a: int = 1, *, b=(1, 2)) -> X:", "class C:", "class C(B, metaclass=M):",
            "if x:", "if (a and\n    b):", "for i in range(3):", "for a, b in x:", "while x:", "while (n := f()):",
            "try:", "with a as b, c:", "with (\n    a as b,\n):", "def f(\n    a,\n    b: int = {1: 2},\n) -> X:"]
_CLAUSES = ["elif y:", "else:", "except E:", "except (A, B) as e:", "except:", "finally:"]
_ODD_HEADERS = ["async def f():", "async with a:", "match x:", "case 1:", "case _:", "elif:", "if:", "def:", "while :",
                "if x: y", "else: pass", "try: pass", "class C: pass", "if x:  # c", "if x: # c: d", "for x in y:  ",
                "if d[1:2]:", "if x: \t", "else :", "ifx:", "deff():", "elif_x = 1", "else_ = 2", "match = 1",
                "case(x)", "async = 1", "with x:\\"]
_DECORATORS = ["@dec", "@dec(1)", "@a.b(c=[1, 2])", "@ dec", "@property"]
_SIMPLE = ["x = 1", "return x", "pass", "x: int = 1", "x: int", "self.x: List[int] = []", "d = {1: 2, 'a': [3]}",
           "s = a[1:2, ::3]", "f = lambda x, y=1: x + y", "g(lambda: 0)", "x = (yield)", "print(x, end='')",
           "a != b", "x = a if b else c", "return not x", "import os", "from a import (b,\n    c)", "x = ...",
           "x = .5", "...", "raise E from e", "del x[0]", "assert x, 'msg'", "global x", "x += 1", "x //= 2",
           "x = a @ b", "x = -a", "x = ~a", "*a, b = c", "x = [i for i in y if i]", "x = {a: b for a, b in c}",
           "x = 'é'", "é = 1", "x = b'\\xff'", "x = r'\\d'", "x = rb'a'", "x = Rb'a'", "x = BR'a'", "x = f'a'",
           "x = f'{a}'", "x = rf'{a}'", "x = F'{{'", "x = fr'a'", "x = u'a'", "x = ub'a'", "x = bb'a'", "x = rr'a'",
           "x = '''a'''", 'x = """a"""', "x = '''a", 'x = "a', "x = 'a\\'b'", 'x = "a\\\\"', "x = 'a\\\\\\'b'",
           "x = 'a' 'b'", "x = 'a''b'", "x = '#'", "x = '#' # c", "x = 1  # c: d, e", "x = 1 # 'q", "x = '''a''' + 'b'",
           "x = ''", "x = ''''''", "x = '\"'", "pass'x'", "pass 'x'", "x = a..b", "x = a...b", "x....y", "x = a . b",
           "x = 1 \\", "\\", "x = $a", "x = a ? b", "x = `a`", "x = !a", "x != y", "x = {a!r}", "(%a, 1)", "[, x]",
           "f(a, %s)", "x = (|a)", "x = [ /a]", "x = {^a}", "f(a, <b)", "x = a +", "x = a -", "x = a.", "x = a =",
           "x = a,", "a, b,", "'a', 'b', c=d,", "and b", "or c", "in d", "is e", "as f", "andx = 1", "x y", "a b c",
           "return x y", "not x", "x if y", "lambda x: x", "f(a: 1)", "f(a, b: c)", "T(dt: 0.1)", "f((a: 1))",
           "f([a: 1])", "x = {a: (b: c)}", "f(lambda a: a)", "x = (a:= 1)", "x : int, y", "x: int,", "a: b: c",
           "a[b]: int = 1", "x: (a, b) = c", "1: 2", "'a': 1,", "dict(a=1): 2", "x = [\n    1,\n    2,\n]",
           "x = f(\n    a,  # c\n    b)", "x = (\n    # c\n    1)", "y = g(a)(\n  b)[\n    c]", "x = (1]", "x = [1)",
           "x = (", "    )", "]", "}", "x = ((1)", "x = {'a': (1, [2, {3}])}", "x = 'é' 'ü'", "x = \x80", "x = é é",
           "_ x", "x _", "0x = 1", "x = 1 2", "x = 'a'b", "x = a'b'", "x = f 'a'", "x = 1if y else 2", "case = 1",
           "match(x)", "print >>f, x", "exec 'x'", "x = a < b > c", "x = <a>", "@", "@ ", "x = a @", "x = y=",
           "x = 1;", "x = 1; y = 2", "x = a->b", "x = a -> b", "$", "?", "!", "`", "x = \x7f", "é", "x = 'a' # é",
           "x = '''a''b'''", "x = '''a'''' ", 'x = """a\\"""b"""', "x = '''\\''''", "x = ''''''''", "x = 'a\\\\'",
           "x = f(\n    a: 1)", "x = [\n    a: 1]", "x = (\n    lambda a: 1)", "if f(\n    a: 1):", ".x", ".5",
           ". 5", ".é", "x = bR'a'", "x = fR'a'", "x = uR'a'", "x = bf'a'", "x = rb'a'", "x = Fr'{a}'", "x = é'a'"]
_COMMENTS = ["# c", "# a: b", "#", "#: x", "# 'q", "# (", "# )", '# """', "# lambda x: x", "# f(a: 1)"]
_INDENT_NOISE = ["\t", " \t", "\t ", "\x0c", "\x0b", " \x1c", "\r"]


def _body(rng: random.Random, depth: int, indent: int, step: int) -> list[str]:
    """Statements at `indent`: simple lines, comments, blank lines and compound statements with
    their clauses, nested up to `depth`."""
    out: list[str] = []
    pad = " " * indent
    for _ in range(rng.randint(1, 4)):
        u = rng.random()
        if u < 0.35 or depth == 0:
            out += [pad + part for part in rng.choice(_SIMPLE[:40] if rng.random() < 0.8 else _SIMPLE).split("\n")]
        elif u < 0.45:
            out.append(" " * rng.choice([indent, max(indent - step, 0), indent + step, rng.randint(0, 12)])
                       + rng.choice(_COMMENTS))
        elif u < 0.5:
            out.append(rng.choice(["", "", " " * rng.randint(0, 9)]))
        else:
            out += _compound(rng, depth, indent, step)
    return out


def _compound(rng: random.Random, depth: int, indent: int, step: int) -> list[str]:
    pad = " " * indent
    head = rng.choice(_HEADERS)
    out = []
    if head.startswith(("def", "class")) and rng.random() < 0.4:
        out += [pad + rng.choice(_DECORATORS) for _ in range(rng.randint(1, 3))]
    inner = step if rng.random() < 0.9 else rng.randint(1, 6)
    out += [pad + part for part in head.split("\n")]
    out += _body(rng, depth - 1, indent + inner, step)
    clauses = {"if": ["elif y:", "elif y:", "else:"], "for": ["else:"], "whi": ["else:"],
               "try": ["except E:", "except (A, B) as e:", "else:", "finally:"]}.get(head[:3], [])
    if rng.random() < 0.15:
        clauses = list(_CLAUSES)
    for clause in clauses:
        if rng.random() < 0.5:
            out.append(pad + clause)
            out += _body(rng, depth - 1, indent + inner, step)
    return out


def _mutate(rng: random.Random, rows: list[str]) -> list[str]:
    """A few random edits: a line swapped for an odd one, bytes put in or taken out, an indent
    changed or made of tabs."""
    rows = list(rows)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 4])):
        if not rows:
            break
        k = rng.randrange(len(rows))
        row = rows[k]
        u = rng.random()
        if u < 0.25:
            rows[k] = " " * (len(row) - len(row.lstrip(" "))) + rng.choice(_ODD_HEADERS + _SIMPLE + _DECORATORS)
        elif u < 0.45:
            at = rng.randint(0, len(row))
            rows[k] = row[:at] + rng.choice("'\"\\#()[]{}:,$?`!%/|&^<>@.=+-*~ _fbrué\t") + row[at:]
        elif u < 0.55 and row:
            at = rng.randrange(len(row))
            rows[k] = row[:at] + row[at + 1:]
        elif u < 0.75:
            rows[k] = " " * rng.choice([0, 1, 2, 3, 4, 8, 12]) + row.lstrip(" ")
        elif u < 0.85:
            rows[k] = rng.choice(_INDENT_NOISE) + row
        else:
            rows.insert(k, rng.choice(_HEADERS + _CLAUSES + _ODD_HEADERS + _COMMENTS + ["", "  "]))
    return rows


def _clause_soup(rng: random.Random) -> list[str]:
    """Headers, clauses and decorators in any order at a few indents, each with a short body: the
    clause rules (which statement a clause continues, which clause may follow which)."""
    rows = []
    for _ in range(rng.randint(1, 8)):
        indent = rng.choice([0, 0, 2, 4])
        line = rng.choice(["if x:", "elif y:", "else:", "for a in b:", "while x:", "try:", "except E:", "finally:",
                           "with a:", "def f():", "class C:", "@d", "x = 1", "# c"])
        rows.append(" " * indent + line)
        if line.endswith(":"):
            rows += [" " * (indent + rng.choice([2, 4, 4])) + rng.choice(["pass", "x", "# c"])
                     for _ in range(rng.randint(1, 2))]
            if rng.random() < 0.3:
                rows.append(rng.choice(["", "  # c"]))
    return rows


def _noise(rng: random.Random) -> list[str]:
    """Rows of random bytes among the ones the rules read."""
    alphabet = "'\"\\#()[]{}:,$?`!%/|&^<>@.=+-*~ \t_abcdefilmnorstuwxyFRB019é" + "    "
    words = ["def ", "if ", "elif", "else", "class ", "try", "lambda", "f'", "b'", "'''", "\"\"\"", "..", "async ",
             "match ", "case ", "and ", "in ", "  ", "@"]
    rows = []
    for _ in range(rng.randint(1, 12)):
        parts = [rng.choice(words) if rng.random() < 0.2 else rng.choice(alphabet) for _ in range(rng.randint(0, 25))]
        rows.append(" " * rng.choice([0, 0, 2, 4, 8]) + "".join(parts))
    return rows


def _window(rng: random.Random) -> list[str]:
    """A fuzzed hunk side: a slice of generated code (mutated or not), or random bytes."""
    u = rng.random()
    if u < 0.1:
        return _noise(rng)
    if u < 0.25:
        return _clause_soup(rng)
    rows = _body(rng, rng.randint(1, 4), rng.choice([0, 0, 0, 4, 8]), rng.choice([4, 4, 2, 1, 3, 8]))
    if rng.random() < 0.5:  # a hunk side starts and ends anywhere
        a = rng.randrange(len(rows))
        rows = rows[a:a + rng.randint(1, 40)]
    if rng.random() < 0.1:
        rows = rows[:1]
    rows = _mutate(rng, rows) if rng.random() < 0.6 else rows
    return [part for row in rows for part in row.split("\n")]


def _layouts(rng: random.Random, windows: list[tuple[str, ...]]):
    """The batch as python_spans takes it, laid out in three ways; yields (name, data, starts, ends,
    group, n_groups)."""
    rows = [row.encode("utf-8", "surrogatepass") for w in windows for row in w]
    group = np.repeat(np.arange(len(windows)), [len(w) for w in windows]).astype(np.int64)
    data, starts, ends = split._encode_rows([row for w in windows for row in w])
    yield "joined", data, starts, ends, group, len(windows)
    # in order, with a byte or a few between the rows: diff markers, string prefixes, dots, quotes
    chunks, starts, ends, at = [], [], [], 0
    for row in rows:
        gap = bytes(rng.choice(b" +-fFrRbu_.'\"#x\\") for _ in range(rng.choice([1, 1, 1, 2, 3])))
        chunks += [gap, row, b"\n"]
        starts.append(at + len(gap))
        ends.append(at + len(gap) + len(row))
        at += len(gap) + len(row) + 1
    data = np.frombuffer(b"".join(chunks), np.uint8)
    yield "marked", data, np.array(starts, np.int64), np.array(ends, np.int64), group, len(windows)
    # out of order: gathered before reading
    order = list(range(len(rows)))
    rng.shuffle(order)
    chunks, place, at = [], {}, 0
    for k in order:
        gap = bytes(rng.choice(b" +-f'") for _ in range(rng.choice([0, 1])))
        chunks += [gap, rows[k], b"\n"]
        place[k] = at + len(gap)
        at += len(gap) + len(rows[k]) + 1
    data = np.frombuffer(b"".join(chunks), np.uint8)
    starts = np.array([place[k] for k in range(len(rows))], np.int64)
    ends = starts + np.array([len(r) for r in rows], np.int64)
    yield "shuffled", data, starts, ends, group, len(windows)


def _assert_same(data, starts, ends, group, n_groups, what=""):
    """python_spans (through the C scan, which must take the input) equals the numpy passes."""
    got = through_c(pyspans, "c_python_spans", lambda: pyspans.python_spans(data, starts, ends, group, n_groups),
                    what)
    expected = pyspans.python_spans_numpy(data, starts, ends, group, n_groups)
    for name, a, b in zip(("answered", "first", "last"), got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape, (what, name, a.dtype, b.dtype, a.shape, b.shape)
        if not np.array_equal(a, b):
            bad = np.flatnonzero(got[0] != expected[0])
            raise AssertionError(f"{what}: {name} differs; groups answered differently: {bad[:10].tolist()}")
    return got[0]


def _check_windows(rng: random.Random, windows: list[tuple[str, ...]], what: str) -> np.ndarray:
    """Both versions agree on each layout of the windows; returns the answers on the first."""
    answered = [_assert_same(*batch, what=f"{what} ({name})") for name, *batch in _layouts(rng, windows)]
    return answered[0]


def test_the_c_scan_answers_as_numpy_on_windows_of_the_standard_library():
    need_native(_C, "credit._pyspans")
    rng = random.Random(0)
    windows = [window for window in stdlib_windows(rng) if window]
    answered = _check_windows(rng, windows, "stdlib windows")
    assert len(windows) > 2000 and 100 < answered.sum() < len(windows)


def _benchmark_calls(batch) -> list[tuple]:
    """The arguments of every python_spans call credit.didpo makes on a batch."""
    calls = []
    real = split.python_spans

    def record(*args):
        calls.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
        return real(*args)

    split.python_spans = record
    try:
        credit.didpo(batch)
    finally:
        split.python_spans = real
    return calls


def test_the_c_scan_answers_as_numpy_on_the_benchmark_hunk_sides():
    need_native(_C, "credit._pyspans")
    bench = load_bench()
    calls = _benchmark_calls([t.to_dict() for t in bench.rollouts(4, 8, 4, seed=3)])
    assert calls
    for data, starts, ends, group, n_groups in calls:
        answered = _assert_same(data, starts, ends, group, n_groups, what="benchmark sides")
        assert answered.mean() > 0.5


def test_didpo_gives_the_same_tokens_with_the_c_scan(monkeypatch):
    need_native(_C, "credit._pyspans")
    assert_didpo_unchanged_without(monkeypatch, pyspans, "c_python_spans")


@pytest.mark.parametrize("seed", range(8))
def test_the_c_scan_answers_as_numpy_on_fuzzed_rows(seed):
    """Generated code (nested blocks, clauses, decorators, comments at every indent, brackets across
    rows) cut anywhere and mutated with the bytes the rules read, and rows of random such bytes: many
    groups a batch, batches of every size down to one group of one row."""
    need_native(_C, "credit._pyspans")
    rng = random.Random(seed)
    answered = []
    for size in [400, 150, 60, 20, 5, 1, 1, 1]:
        windows = [tuple(_window(rng)) for _ in range(size)]
        answered.append(_check_windows(rng, windows, f"seed {seed}, {size} windows"))
    answered = np.concatenate(answered)
    assert 0.1 < answered.mean() < 0.9  # both ways, often: neither side of the comparison is vacuous


def test_the_c_scan_answers_as_numpy_at_the_buffer_edges():
    """Rows at the very start and end of the buffer, empty rows, a single byte: the numpy passes
    clamp their reads there."""
    need_native(_C, "credit._pyspans")
    rng = random.Random(1)
    cases = [("'x'",), ("f'{x}'",), ("..",), ("x ..",), ("'",), ("#",), ("if x:", "    y"), ("",), ("", ""),
             ("x",), ("lambda",), ("def f(a: 1):", "  lambda"), ("@",), ("@d", "def f():", "  pass"), ("x = (",),
             (")",), ("x = 1", ""), ("", "if x:", " y"), ("'''",), ('"""a"""',), ("a b",), ("a ",), (" a",),
             ("if x:", "    y", "# c"), ("if x:", "  # c", "  y"), ("x  ",), ("\t",), ("\tx",), ("elif",)]
    for case in cases:
        for name, *batch in _layouts(rng, [case]):
            _assert_same(*batch, what=f"{case!r} ({name})")
            data, starts, ends, group, n_groups = batch
            # the same rows with nothing after the last line break
            cut = np.ascontiguousarray(data[:int(ends.max()) + 1])
            _assert_same(cut, starts, ends, group, n_groups, what=f"{case!r} ({name}, cut)")


def test_the_c_scan_answers_as_numpy_on_every_order_of_clauses():
    """Every sequence of up to three headers and clauses at one indent, each with a body, then
    nested under a header, dedented into a deeper block, and decorated: which clause may continue
    which statement."""
    need_native(_C, "credit._pyspans")
    words = ["if x:", "elif y:", "else:", "for a in b:", "while x:", "try:", "except E:", "finally:", "with a:",
             "def f():", "@d"]
    sequences = [[a] for a in words] + [[a, b] for a in words for b in words]
    sequences += [[a, b, c] for a in words[:9] for b in words[:9] for c in words[:9]]
    windows = []
    for seq in sequences:
        rows = [row for word in seq for row in ([word] if word == "@d" else [word, "    pass"])]
        windows += [tuple(rows), tuple(["if a:"] + ["    " + r for r in rows]),
                    tuple(["if a:", "    if b:", "        pass"] + ["  " + r if r[0] != " " else r for r in rows])]
    answered = _check_windows(random.Random(2), windows, "clause orders")
    assert 0.05 < answered.mean() < 0.9


def test_a_group_takes_the_colon_verdict_of_the_line_before_it():
    """The numpy passes mark a group's leading blank rows by the logical line before them, which is
    the previous group's last: the C scan does the same."""
    need_native(_C, "credit._pyspans")
    windows = [("x = f(a: 1)",), ("", "if x:", "    y"), ("x = f(lambda a: 1)",), ("", "if x:", "    y"),
               ("def f(a: 1):", "    pass"), ("", "if x:", "    y")]
    answered = _assert_same(*split._encode_rows([r for w in windows for r in w]),
                            np.repeat(np.arange(6), [len(w) for w in windows]), 6)
    assert answered.tolist() == [False, False, True, True, True, True]


def test_input_outside_the_contract_goes_to_numpy():
    """Groups not numbered 0.. in order, or rows past the buffer: the C scan declines (None) and
    python_spans answers with numpy."""
    need_native(_C, "credit._pyspans")
    data, starts, ends = split._encode_rows(["if x:", "    y", "z"])
    answered, first, last = np.empty(3, bool), np.empty(3, np.int64), np.empty(3, np.int64)
    keywords = np.zeros(0, np.uint64)
    for group, n_groups in [(np.array([0, 2, 2]), 3), (np.array([1, 1, 1]), 2), (np.array([0, 1, 0]), 2)]:
        assert _C(data, starts, ends, group, keywords, answered[:n_groups], first, last) is None
        expected = pyspans.python_spans_numpy(data, starts, ends, group, n_groups)
        for a, b in zip(pyspans.python_spans(data, starts, ends, group, n_groups), expected):
            np.testing.assert_array_equal(a, b)
    assert _C(data, starts, ends + 1, np.zeros(3, np.int64), keywords, answered[:1], first, last) is None


# --- threads (credit/_threads.h): the groups cut into parts by bytes; every count gives one answer

try:
    from credit import _pyspans as _MODULE
except ImportError:  # not built
    _MODULE = None


def _c_answer(data, starts, ends, group, n_groups):
    """The C function's own answer (answered, first, last), or None where it declines."""
    n = starts.shape[0]
    answered, first, last = np.empty(n_groups, bool), np.empty(n, np.int64), np.empty(n, np.int64)
    count = _C(np.ascontiguousarray(data), np.ascontiguousarray(starts), np.ascontiguousarray(ends),
               np.ascontiguousarray(group), pyspans._KEYWORD_VALUES, answered, first, last)
    return None if count is None else (answered, first[:count].copy(), last[:count].copy())


def _same_at_every_thread_count(monkeypatch, batch, what, split_into=True):
    """The C answer with CREDIT_THREADS=1..4 is the one-thread answer; with split_into, the batch
    was cut into as many parts as threads asked (last_parts). Returns the one-thread answer."""
    answers = {}
    for threads in (1, 2, 3, 4):
        monkeypatch.setenv("CREDIT_THREADS", str(threads))
        answers[threads] = _c_answer(*batch)
        if split_into:
            assert _MODULE.last_parts() == threads, (what, threads)
    for threads in (2, 3, 4):
        if answers[1] is None:
            assert answers[threads] is None, (what, threads)
            continue
        for name, a, b in zip(("answered", "first", "last"), answers[threads], answers[1]):
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: {name} with {threads} threads")
    return answers[1]


def test_every_thread_count_answers_as_one_on_the_differential_inputs(monkeypatch):
    """The batches the tests above compare with numpy: the standard library's windows and the
    bigger fuzzed batches (big enough to split at every count), the benchmark's hunk sides, the
    smaller fuzzed batches, the clause orders."""
    need_native(_C, "credit._pyspans")
    rng = random.Random(0)
    for name, *batch in _layouts(rng, [window for window in stdlib_windows(rng) if window]):
        _same_at_every_thread_count(monkeypatch, batch, f"stdlib windows ({name})")
    calls = _benchmark_calls([t.to_dict() for t in load_bench().rollouts(4, 8, 4, seed=3)])
    for data, starts, ends, group, n_groups in calls:
        _same_at_every_thread_count(monkeypatch, (data, starts, ends, group, n_groups), "benchmark sides",
                                    split_into=False)
    rng = random.Random(3)
    for size in [400, 60, 1]:
        windows = [tuple(_window(rng)) for _ in range(size)]
        for name, *batch in _layouts(rng, windows):
            _same_at_every_thread_count(monkeypatch, batch, f"{size} fuzzed windows ({name})", split_into=size == 400)
    words = ["if x:", "elif y:", "else:", "for a in b:", "while x:", "try:", "except E:", "finally:", "with a:"]
    windows = [(a, "    pass", b, "    pass", c, "    pass") for a in words for b in words for c in words]
    for name, *batch in _layouts(random.Random(2), windows):
        _same_at_every_thread_count(monkeypatch, batch, f"clause orders ({name})", split_into=False)


def test_a_part_that_starts_with_blank_rows_takes_the_line_of_the_part_before(monkeypatch):
    """Every group opens with blank rows (they take the colon verdict of the line before them, in
    the group before), and a run of blank groups in the middle longer than a part, after a line
    that fails the colon rule: wherever the cuts fall, the blank rows a part starts with read a
    line of an earlier part, and their groups are finished after the join."""
    need_native(_C, "credit._pyspans")
    rng = random.Random(4)
    lines = ["x = f(a: 1)", "x = f(lambda a: 1)", "def f(a: 1):", "x = (", "if x:", "# c", "y = 1"]

    def opened(n):
        return [("",) * rng.randint(1, 3) + (rng.choice(lines),) + (("    y",) if rng.random() < 0.5 else ())
                for _ in range(n)]

    head, tail = opened(2000) + [("x = f(a: 1)",)], opened(2000)
    run = [("",) * rng.randint(1, 3) for _ in range(20000)]
    windows = head + run + tail
    for name, *batch in _layouts(rng, windows):
        answered = _same_at_every_thread_count(monkeypatch, batch, f"blank openings ({name})")[0]
        _assert_same(*batch, what=f"blank openings ({name})")
        assert not answered[len(head):len(head) + len(run)].any()  # the verdict of head's last line
        assert 0.1 < answered[len(head) + len(run):].mean() < 0.9


def test_a_batch_without_code_is_answered_alike_in_parts(monkeypatch):
    """Comments and blank rows only: the structure rules are skipped for the whole batch, whichever
    part finds (no) code."""
    need_native(_C, "credit._pyspans")
    rng = random.Random(5)
    windows = [tuple(rng.choice(["# c", "", "  # (", "#:"]) for _ in range(rng.randint(1, 6))) for _ in range(8000)]
    for name, *batch in _layouts(rng, windows):
        answered = _same_at_every_thread_count(monkeypatch, batch, f"no code ({name})")[0]
        _assert_same(*batch, what=f"no code ({name})")
        assert answered.all()
    # one code row in the last part: the comments after the last code line count everywhere
    windows.append(("x = 1",))
    data, starts, ends = split._encode_rows([r for w in windows for r in w])
    group = np.repeat(np.arange(len(windows)), [len(w) for w in windows]).astype(np.int64)
    batch = (data, starts, ends, group, len(windows))
    answered = _same_at_every_thread_count(monkeypatch, batch, "code at the end")[0]
    _assert_same(*batch, what="code at the end")
    assert not answered.all()


def test_a_bad_row_in_a_later_part_gives_the_one_thread_answer(monkeypatch):
    """A group left to tree-sitter, and a row outside the contract, at the end of a batch that
    splits: the same answers, and the same None, as with one thread."""
    need_native(_C, "credit._pyspans")
    windows = [("def f():", "    return 1")] * 6000 + [("def g():", "    x = (")]
    data, starts, ends = split._encode_rows([r for w in windows for r in w])
    group = np.repeat(np.arange(len(windows)), 2).astype(np.int64)
    answered = _same_at_every_thread_count(monkeypatch, (data, starts, ends, group, len(windows)), "unsure last")[0]
    assert answered[:-1].all() and not answered[-1]
    ends = ends.copy()
    ends[-1] = data.shape[0]  # the last row runs past the buffer
    assert _same_at_every_thread_count(monkeypatch, (data, starts, ends, group, len(windows)), "past the buffer",
                                       split_into=False) is None
