"""Python block spans of many hunk sides at once, for sides whose structure indentation decides.

The Python grammar's fast reader (`credit.syntax.GRAMMARS["python"].reader`): `credit.split` gives
a hunk side's syntax units from its grammar's block nodes, and parsing costs as much as the rest of
DiDPO together (docs/benchmarks.md, "credit": tree-sitter alone put the refbench batches over
credit's budget). So `python_spans` first reads the Python sides in a few vectorized passes over
their bytes and answers for the sides in a subset where the nodes follow from the lines alone;
tree-sitter-python parses the rest (`answered` is False for them).

The subset: string literals end on their line (no triple-quoted text across lines, no f-string
replacement fields) and no backslash stands outside them, so a logical line ends where its brackets
close; brackets nest and close within the side; no tabs in the indentation; lines look like Python
3: they start with what can start a statement (not `and`, `or`, `in`, `is`, `as`), two names never
follow each other without a keyword between them, no binary operator follows an opening bracket or
a comma or ends a line, no line ends with a comma, no `$ ? ` or lone `!` or `..` or name glued to a
string, colons stand only where a header, an annotation (one line, no comma outside brackets), a
lambda, a slice or a dict puts them; every line starting with a compound keyword ends with its one
colon (no one-line bodies, no `async`, no `match` / `case` headers, no `elif:`) and the next line
is indented deeper, and no other line has a deeper line after it; each clause (elif / else / except
/ finally) closes the block of a statement that takes it, at that statement's indent; decorators
sit directly above a definition; no comment after the last code line. These rules keep out what
tree-sitter reads in its own way without reporting an error (prose from docstrings, code inside
string templates). Each came from a disagreement the oracle found; with all of them, five samples
of windows from every file of the standard library and site-packages (about 150k answered windows)
gave none.

Inside it, nodes are what tree-sitter-python's scanner (src/scanner.c) builds from INDENT and
DEDENT tokens (checked against tree-sitter on windows of the standard library and on the
benchmark's code: tests/credit/test_credit_pyspans.py). A header's block begins at the line below
it and ends before the first line that closes it: a code line indented less than the block, or a
comment indented less when the code line after it is too (the scanner's DEDENT waits for such a
comment); lines indented otherwise are ordinary statements, as are windows that start inside a
block. The node spans the header, its block, and the clauses that follow with their blocks. A
decorated definition spans its decorators and the definition, which is a node of its own.
"""

from __future__ import annotations

import keyword

import numpy as np

from credit._util import ranges
from credit.text import IS_SPACE, find_bytes, first_at_or_after, skip_spaces, skip_while

_WORDS = ("def", "class", "if", "for", "while", "try", "with", "elif", "else", "except", "finally", "async",
          "match", "case")
DEF, CLASS, IF, FOR, WHILE, TRY, WITH, ELIF, ELSE, EXCEPT, FINALLY, ASYNC, MATCH, CASE = range(len(_WORDS))
NONE, DECORATOR = -1, len(_WORDS)
_COMPOUND = (DEF, CLASS, IF, FOR, WHILE, TRY, WITH)
_CLAUSES = (ELIF, ELSE, EXCEPT, FINALLY)
_IDENT = np.zeros(256, bool)
_IDENT[[ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"]] = True
_IDENT[128:] = True
_OPEN, _CLOSE = np.zeros(256, np.int64), np.zeros(256, np.int64)
for _k, (_o, _c) in enumerate(("()", "[]", "{}")):
    _OPEN[ord(_o)], _CLOSE[ord(_c)] = _k + 1, _k + 1
_KEYWORD_VALUES = np.array(sorted(int.from_bytes(w.encode(), "little") for w in keyword.kwlist + keyword.softkwlist),
                           np.uint64)
_OPERATOR_WORD = -2  # `and`, `or`, `in`, `is`, `as`: no statement starts with one
_BY_LENGTH: dict = {}
for _k, _w in [(k, w) for k, w in enumerate(_WORDS)] + [(_OPERATOR_WORD, w) for w in ("and", "or", "in", "is", "as")]:
    _BY_LENGTH.setdefault(len(_w), []).append((int.from_bytes(_w.encode(), "little"), _k))
_BY_LENGTH = {size: (np.array([v for v, _ in sorted(items)], np.uint64),
                     np.array([k for _, k in sorted(items)], np.int64)) for size, items in _BY_LENGTH.items()}
_STARTS = _IDENT.copy()  # bytes a statement may start with (a name, number, string, bracket, operator)
_STARTS[[ord(c) for c in "\"'([{@*-+~"]] = True
_PREFIX = np.zeros(256, bool)  # string prefix letters, lower case: r b f u (two only with an r: rb, fr, ...)
_PREFIX[[ord(c) for c in "rbfu"]] = True
_SPECIAL = np.zeros(256, bool)
_BINARY = np.zeros(256, bool)  # operators that need a left operand
_BINARY[[ord(c) for c in "%/|&^<>@"]] = True
_AFTER_OPEN = np.zeros(256, bool)
_AFTER_OPEN[[ord(c) for c in "([{,"]] = True
_SPECIAL[[ord(c) for c in "\"'\\#()[]{}:,$?`!%/|&^<>@"]] = True


def python_spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Block spans of groups of Python rows (hunk sides) that are in the subset.

    Args:
      data: uint8 buffer holding the rows; row i is data[starts[i]:ends[i]] and data[ends[i]] is a
        line break.
      starts, ends: (n,) byte bounds of each row.
      group: (n,) group of each row, non-decreasing; every group in 0..n_groups-1 has rows.
      n_groups: number of groups.

    Returns:
      (answered (n_groups,) bool, first (k,), last (k,)): inclusive row spans (indices into the
      rows) of the answered groups' nodes, sorted by group, first and last row.
    """
    if starts.shape[0] == 0:
        return np.ones(n_groups, bool), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if starts.shape[0] > 1 and (starts[1:] <= ends[:-1]).any():  # rows out of order: gather them
        buf = data[ranges(starts, ends + 1)]
        e = np.cumsum(ends - starts + 1) - 1
        lines = _lines(buf, e - (ends - starts), e, group)
    else:
        lines = _lines(data, starts, ends, group)
    unsure = np.zeros(n_groups, bool)
    unsure[group[lines.unsure]] = True
    code = np.flatnonzero(lines.code)
    closes = _closing_code(lines.indent[code], group[code], lines.header[code])
    unsure |= _structure_unsure(lines, code, group, n_groups, closes)
    answered = ~unsure
    first, last = _spans(lines, code, group, answered, closes)
    return answered, first, last


class _Lines:
    """Per row: blank; a comment line; the first row of a logical line (code); inside brackets
    opened on an earlier row (continued); indent; keyword; header (its logical line ends with its
    colon); unsure."""

    def __init__(self, blank, comment, code, continued, indent, word, header, unsure):
        self.blank, self.comment, self.code, self.continued = blank, comment, code, continued
        self.indent, self.word, self.header, self.unsure = indent, word, header, unsure


def _lines(buf: np.ndarray, s: np.ndarray, e: np.ndarray, group: np.ndarray) -> _Lines:
    n = s.shape[0]
    first = skip_spaces(buf, s, e, only=" ")
    other = np.flatnonzero((first < e) & IS_SPACE[buf[np.minimum(first, buf.shape[0] - 1)]])
    unsure = np.zeros(n, bool)
    if other.shape[0]:  # a tab or form feed in the indentation
        first[other] = skip_spaces(buf, first[other], e[other])
        unsure[other] = True
    blank = first >= e
    head = buf[np.minimum(first, buf.shape[0] - 1)]
    indent = first - s
    unsure &= ~blank
    # the few bytes that matter, found in one pass: quotes, backslash, '#', brackets, ':'
    pos = np.flatnonzero(_SPECIAL[buf])
    row = np.searchsorted(s, pos, side="right") - 1
    byte = buf[pos]
    inside = (row >= 0) & (pos < e[np.maximum(row, 0)])  # bytes between the rows do not count
    pos, row, byte = pos[inside], row[inside], byte[inside]
    code_end, span_lo, span_hi, bad_strings = _strings(buf, pos, row, byte, s, e, n)
    unsure |= bad_strings
    k = np.searchsorted(span_lo, pos, side="right") - 1
    in_string = (k >= 0) & (pos < span_hi[np.maximum(k, 0)]) if span_lo.shape[0] else np.zeros(pos.shape[0], bool)
    live = ~in_string & (pos < code_end[row])
    pos, row, byte = pos[live], row[live], byte[live]
    unsure[row[byte == 92]] = True  # a backslash outside strings: a continuation
    # bytes no Python 3 code has outside strings ('!' only in '!='): tree-sitter's recovery from
    # them (template fields like {name!r}, say) builds nodes without reporting an error
    invalid = (byte == 36) | (byte == 63) | (byte == 96) | (
        (byte == 33) & (buf[np.minimum(pos + 1, buf.shape[0] - 1)] != 61))
    unsure[row[invalid]] = True
    unsure[_double_dots(buf, s, code_end, span_lo, span_hi)] = True
    unsure[_glued_to_names(buf, span_lo, s)] = True
    # a binary operator right after an opening bracket or a comma (template fields like (%a, ...))
    operator = np.flatnonzero(_BINARY[byte])
    before = skip_spaces(buf, pos[operator] - 1, s[row[operator]] - 1, step=-1, only=" ")
    unsure[row[operator][_AFTER_OPEN[buf[np.maximum(before, 0)]] & (before >= s[row[operator]])]] = True
    keep = ~_BINARY[byte]
    pos, row, byte = pos[keep], row[keep], byte[keep]
    bracket = (_OPEN[byte] > 0) | (_CLOSE[byte] > 0)
    depth, bad_brackets = _bracket_depth(pos[bracket], row[bracket], byte[bracket], group, n)
    unsure |= bad_brackets
    # logical lines: a row that starts inside brackets continues the line above it
    continued = ~blank & (depth > 0)
    comment = ~blank & (head == 35) & ~continued
    code = ~blank & (head != 35) & ~continued
    line = np.maximum.accumulate(np.where(code | comment, np.arange(n), 0))  # the logical line of each row
    line_end = np.arange(n)
    np.maximum.at(line_end, line[continued], np.flatnonzero(continued))
    last = skip_spaces(buf, code_end - 1, first - 1, step=-1)
    end_row = line_end[np.arange(n)]
    ends_colon = code & (buf[np.clip(last[end_row], 0, buf.shape[0] - 1)] == 58)
    word, operator_word = _first_words(buf, first, code)
    colon0, comma0 = _top_level(buf, pos, row, byte, depth, line, n)
    unsure |= _colons_in_parentheses(buf, pos, row, byte, line, word, s, e, n)
    unsure |= _adjacent_names(buf, s, code_end, n, span_lo, span_hi) & ~blank
    header = np.isin(word, _COMPOUND + _CLAUSES + (MATCH, CASE)) & ends_colon & (colon0 == 1)
    unsure |= code & (word == ASYNC)
    unsure |= code & np.isin(word, (MATCH, CASE)) & ends_colon
    unsure |= code & np.isin(word, _COMPOUND + _CLAUSES) & ~header
    unsure |= code & ((word == NONE) | (word == DECORATOR)) & ends_colon
    # what cannot start a statement, and colons outside brackets where only an annotation or a
    # lambda may have one: tree-sitter reads prose and dict items cut from their braces as code
    nxt, nxt2 = buf[np.minimum(first + 1, buf.shape[0] - 1)], buf[np.minimum(first + 2, buf.shape[0] - 1)]
    dots = (head == 46) & (((nxt == 46) & (nxt2 == 46)) | ((nxt >= 48) & (nxt <= 57)))  # ... or .5
    unsure |= code & ~(_STARTS[head] | dots)
    unsure |= code & operator_word
    dangling = np.zeros(256, bool)  # an operator that needs a right operand
    dangling[[ord(c) for c in "+-*/%&|^<>=.@~"]] = True
    unsure |= code & dangling[buf[np.clip(last[end_row], 0, buf.shape[0] - 1)]]
    # a header with nothing between its keyword and colon where one is needed (`elif:`)
    needs = np.isin(word, (DEF, CLASS, IF, ELIF, WHILE, FOR, WITH))
    size = np.array([len(w) for w in _WORDS] + [1], np.int64)[np.where(word >= 0, word, len(_WORDS))]
    after_word = skip_spaces(buf, np.minimum(first + size, e), e, only=" ")
    unsure |= code & needs & (buf[np.minimum(after_word, buf.shape[0] - 1)] == 58)
    # a line that ends with a comma outside brackets: arguments or items cut from their brackets
    unsure |= code & (buf[np.clip(last[end_row], 0, buf.shape[0] - 1)] == 44)
    plain = code & (word == NONE)
    ends_comma = buf[np.clip(last[end_row], 0, buf.shape[0] - 1)] == 44
    annotation = (colon0 == 1) & _IDENT[head] & (end_row == np.arange(n)) & ~ends_comma & (comma0 == 0)
    unsure |= plain & ((colon0 > 1) | ((colon0 == 1) & ~annotation))
    return _Lines(blank, comment, code, continued, indent, word, header & ~np.isin(word, (MATCH, CASE)), unsure)


def _eight_bytes(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nine bytes from each position on: the first eight as one little-endian integer, and all
    nine as rows (every keyword fits in eight; the ninth tells whether a name goes on)."""
    window = np.ascontiguousarray(buf[np.minimum(at[:, None] + np.arange(9), buf.shape[0] - 1)])
    return np.ascontiguousarray(window[:, :8]).view("<u8").reshape(-1), window


def _colons_in_parentheses(buf, pos, row, byte, line, word, s, e, n) -> np.ndarray:
    """Rows of logical lines with a colon directly inside parentheses, outside a def line or a
    lambda: not Python (`f(a: 1)`), and tree-sitter recovers from it without reporting an error."""
    depth = np.cumsum(np.where(_OPEN[byte] > 0, 1, np.where(_CLOSE[byte] > 0, -1, 0)))
    colon = np.flatnonzero((byte == 58) & (buf[np.minimum(pos + 1, buf.shape[0] - 1)] != 61))
    out = np.zeros(n, bool)
    if colon.shape[0] == 0:
        return out
    opened = np.flatnonzero(_OPEN[byte] > 0)
    level_open, level_colon = depth[opened], depth[colon]  # an open bracket's level is its depth after it
    for level in np.unique(level_colon).tolist():
        at = opened[level_open == level]
        if at.shape[0] == 0:
            continue
        mine = colon[level_colon == level]
        k = np.searchsorted(at, mine) - 1
        found = at[np.maximum(k, 0)]
        # the enclosing bracket: the last one opened at the colon's depth, on the colon's logical line
        inside = (k >= 0) & (row[found] >= line[row[mine]])
        out[row[mine[inside & (byte[found] == 40)]]] = True
    lam = find_bytes(buf, b"lambda")
    lam_row = np.searchsorted(s, lam, side="right") - 1
    has_lambda = np.zeros(n, bool)
    has_lambda[line[lam_row[(lam_row >= 0) & (lam < e[np.maximum(lam_row, 0)])]]] = True
    flagged = np.zeros(n, bool)
    flagged[line[out]] = True
    return flagged[line] & ~has_lambda[line] & (word[line] != DEF)


def _double_dots(buf: np.ndarray, s: np.ndarray, code_end: np.ndarray, span_lo: np.ndarray,
                 span_hi: np.ndarray) -> np.ndarray:
    """Rows with '..' (not part of '...') in their code: elisions in examples, not Python."""
    at = find_bytes(buf, b"..")
    at = at[(buf[np.minimum(at + 2, buf.shape[0] - 1)] != 46) & (buf[np.maximum(at - 1, 0)] != 46)]
    row = np.searchsorted(s, at, side="right") - 1
    k = np.searchsorted(span_lo, at, side="right") - 1
    quoted = (k >= 0) & (at < span_hi[np.maximum(k, 0)]) if span_lo.shape[0] else np.zeros(at.shape[0], bool)
    keep = (row >= 0) & (at < code_end[np.maximum(row, 0)]) & ~quoted
    return row[keep]


def _glued_to_names(buf: np.ndarray, span_lo: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Rows with a string literal right after a name that is not a string prefix (`pass"x"`)."""
    row = np.searchsorted(s, span_lo, side="right") - 1
    start = skip_while(lambda at: _IDENT[buf[at]], span_lo - 1, s[row] - 1, step=-1) + 1
    size = span_lo - start
    first, second = buf[np.minimum(start, buf.shape[0] - 1)] | 32, buf[np.minimum(start + 1, buf.shape[0] - 1)] | 32
    prefix = _PREFIX[first] & ((size == 1) | ((size == 2) & _PREFIX[second] & (first != second)
                                               & ((first == ord("r")) | (second == ord("r")))))
    return row[(size > 0) & ~prefix]


def _bracket_depth(pos: np.ndarray, row: np.ndarray, byte: np.ndarray, group: np.ndarray,
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    """Bracket depth at the start of each row, counted from its group's first row, and the rows of
    groups whose brackets close one opened before the group, stay open at its end, or do not nest."""
    opens = _OPEN[byte] > 0
    depth = np.cumsum(np.where(opens, 1, -1))
    before = np.concatenate([[0], depth])[np.searchsorted(row, np.arange(n))]  # at each row's start
    group_first = np.searchsorted(group, group, side="left")
    start = before - before[group_first]
    bad_group = np.zeros(int(group.max(initial=-1)) + 1, bool)
    rel = depth - before[group_first[row]]
    bad_group[group[row[rel < 0]]] = True
    group_last = np.searchsorted(group, group, side="right") - 1
    after_last = np.concatenate([[0], depth])[np.searchsorted(row, group_last, side="right")]
    bad_group[group[(after_last - before[group_first]) != 0]] = True
    # nesting: at each level, brackets alternate open / close; each close must match its open
    ok = ~bad_group[group[row]]
    level = np.where(opens, rel, rel + 1)[ok]
    kind = np.maximum(_OPEN[byte], _CLOSE[byte])[ok]
    order = np.lexsort((pos[ok], level, group[row[ok]]))
    kind, row_ok = kind[order], row[ok][order]
    bad_group[group[row_ok[1::2][kind[0::2] != kind[1::2]]]] = True
    return start, bad_group[group]


def _first_words(buf: np.ndarray, first: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index into _WORDS of the keyword it starts with (DECORATOR for '@', NONE
    otherwise), and whether it starts with a keyword no statement starts with (`and`, `or`, `in`,
    `is`, `as`).

    A row's first eight bytes, read as one little-endian integer and masked to a length, are looked
    up among the keywords of that length; the byte after the word must not continue a name.
    """
    word = np.full(first.shape[0], NONE, np.int64)
    operator = np.zeros(first.shape[0], bool)
    rows = np.flatnonzero(code)
    value, window = _eight_bytes(buf, first[rows])
    for size, (keys, ids) in _BY_LENGTH.items():
        masked = value & np.uint64((1 << (8 * size)) - 1)
        k = np.minimum(np.searchsorted(keys, masked), keys.shape[0] - 1)
        hit = (keys[k] == masked) & ~_IDENT[window[:, size]]
        word[rows[hit]] = ids[k[hit]]
    operator[rows[word[rows] == _OPERATOR_WORD]] = True
    word[operator] = NONE
    word[rows[window[:, 0] == 64]] = DECORATOR
    return word, operator


def _adjacent_names(buf: np.ndarray, s: np.ndarray, code_end: np.ndarray, n: int,
                    span_lo: np.ndarray, span_hi: np.ndarray) -> np.ndarray:
    """Rows where two names, numbers or strings follow each other with only spaces between and
    neither is a keyword: not Python (prose, say, which tree-sitter still reads as code in its own
    way). A string literal counts as one name (its prefix letters with it)."""
    quoted = np.zeros(buf.shape[0], bool)
    quoted[ranges(span_lo, span_hi)] = True
    ident = _IDENT[buf] | quoted
    gap = np.flatnonzero(ident[:-1] & (buf[1:] == 32) & ~quoted[1:]) + 1  # the first space after a name
    nxt = skip_spaces(buf, gap, np.full(gap.shape[0], buf.shape[0] - 1), only=" ")
    pair = ident[nxt]
    gap, nxt = gap[pair], nxt[pair]
    row = np.searchsorted(s, gap, side="right") - 1
    inside = (row >= 0) & (nxt < code_end[np.maximum(row, 0)])
    gap, nxt, row = gap[inside], nxt[inside], row[inside]
    if gap.shape[0] == 0:
        return np.zeros(n, bool)
    before_start = skip_while(ident.__getitem__, gap - 1, s[row] - 1, step=-1) + 1
    after_end = skip_while(ident.__getitem__, nxt, code_end[row])
    plain = ~_is_keyword(buf, before_start, gap) & ~_is_keyword(buf, nxt, after_end)
    bad = np.zeros(n, bool)
    bad[row[plain]] = True
    return bad


def _strings(buf: np.ndarray, pos: np.ndarray, row: np.ndarray, byte: np.ndarray, s: np.ndarray, e: np.ndarray,
             n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """String literals and comments of each row, read left to right as Python's tokenizer does.

    All rows advance together, one literal per pass: from the cursor, a '#' before the next quote
    starts the comment; a quote opens a literal (three of them a triple-quoted one) that ends at the
    next unescaped same quote (three). A literal that does not end on its row, or an f-string with
    a replacement field, leaves the row unsure.

    Returns:
      (code end per row: its comment's '#' or its end; literal spans (lo, hi) sorted; unsure rows).
    """
    quote = np.flatnonzero((byte == 34) | (byte == 39))
    hashes = pos[byte == 35]
    code_end = e.copy()
    bad = np.zeros(n, bool)
    code_end = first_at_or_after(hashes, s, e)
    if quote.shape[0] == 0:
        return code_end, np.zeros(0, np.int64), np.zeros(0, np.int64), bad
    qpos = pos[quote]
    backslashes = qpos - 1 - skip_while(lambda at: buf[at] == 92, qpos - 1, s[row[quote]] - 1, step=-1)
    unescaped = backslashes % 2 == 0
    braces = pos[byte == 123]
    closers = {}
    for c in (34, 39):
        mine = qpos[unescaped & (buf[qpos] == c)]
        nxt = buf[np.minimum(mine + 1, buf.shape[0] - 1)], buf[np.minimum(mine + 2, buf.shape[0] - 1)]
        closers[c] = (mine, mine[(nxt[0] == c) & (nxt[1] == c)])
    lo_parts, hi_parts = [], []
    active = np.unique(row[quote])
    cursor = s[active].copy()
    inf = np.iinfo(np.int64).max
    while active.shape[0]:
        end = e[active]
        q = first_at_or_after(qpos, cursor, end)  # the next quote, or the row's end
        h = first_at_or_after(hashes, cursor, end)
        done = q == end
        code_end[active[done]] = h[done]
        comment = ~done & (h < q)
        code_end[active[comment]] = h[comment]
        go = ~done & ~comment
        active, cursor, q, end = active[go], cursor[go], q[go], end[go]
        c = buf[q]
        last = buf.shape[0] - 1
        triple = (q + 2 < end) & (buf[np.minimum(q + 1, last)] == c) & (buf[np.minimum(q + 2, last)] == c)
        close = np.full(q.shape[0], inf)
        for ch in (34, 39):
            singles, triples = closers[ch]
            for is_triple, table, skip, width in ((False, singles, 1, 1), (True, triples, 3, 3)):
                sel = np.flatnonzero((c == ch) & (triple == is_triple))
                if sel.shape[0] == 0:
                    continue
                found = first_at_or_after(table, q[sel] + skip, end[sel])
                ok = found + width <= end[sel]
                close[sel[ok]] = found[ok] + width
        open_ = close == inf
        prefix = buf[np.maximum(q - 1, 0)], buf[np.maximum(q - 2, 0)]
        fstring = (prefix[0] | 32) == ord("f")
        fstring |= ((prefix[1] | 32) == ord("f")) & _IDENT[prefix[0]]
        field = fstring & (first_at_or_after(braces, q, close) < close)
        bad[active[open_ | field]] = True
        keep = ~open_ & ~field
        lo_parts.append(q[keep])
        hi_parts.append(close[keep])
        active, cursor = active[keep], close[keep]
    lo, hi = np.concatenate(lo_parts), np.concatenate(hi_parts)
    order = np.argsort(lo)
    return code_end, lo[order], hi[order], bad


def _is_keyword(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each name buf[start:end] is a Python keyword (all fit in eight bytes)."""
    size = ends - starts
    short = np.flatnonzero(size <= 8)
    value, _ = _eight_bytes(buf, starts[short])
    mask = np.where(size[short] == 8, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << (np.uint64(8) * size[short].astype(np.uint64))) - np.uint64(1))
    out = np.zeros(starts.shape[0], bool)
    out[short] = np.isin(value & mask, _KEYWORD_VALUES)
    return out


def _top_level(buf: np.ndarray, pos: np.ndarray, row: np.ndarray, byte: np.ndarray, depth: np.ndarray,
               line: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per logical line (at its first row), the colons (':=' not counted) and the commas outside
    brackets, comments and strings."""
    delta = (_OPEN[byte] > 0).astype(np.int64) - (_CLOSE[byte] > 0)
    inner = np.cumsum(delta) - delta  # bracket depth before each special byte, from the first row
    start = np.searchsorted(row, np.arange(n))
    row_base = np.append(inner, 0)[start] - depth  # what `inner` reads at depth 0 of each row's group
    colon = (byte == 58) & (buf[np.minimum(pos + 1, buf.shape[0] - 1)] != 61)
    top = inner == row_base[row]
    return (np.bincount(line[row[colon & top]], minlength=n),
            np.bincount(line[row[(byte == 44) & top]], minlength=n))


def _structure_unsure(lines: _Lines, code: np.ndarray, group: np.ndarray, n_groups: int,
                      closes: np.ndarray) -> np.ndarray:
    """Groups whose headers, clauses, decorators or comments leave the subset (`closes`: from
    `_closing_code` on the code rows)."""
    bad = np.zeros(n_groups, bool)
    g, d, word, header = group[code], lines.indent[code], lines.word[code], lines.header[code]
    m = code.shape[0]
    if m == 0:
        return bad
    first_in_group = np.ones(m, bool)
    first_in_group[1:] = g[1:] != g[:-1]
    last_in_group = np.append(first_in_group[1:], True)
    bad[g[last_in_group & header]] = True  # a header without a body
    p = np.maximum(np.arange(m) - 1, 0)
    has_prev = ~first_in_group
    bad[g[has_prev & header[p] & (d <= d[p])]] = True  # an empty block
    bad[g[has_prev & ~header[p] & (d > d[p])]] = True  # a deeper line after one that opens no block
    decorated = has_prev & (word[p] == DECORATOR)
    bad[g[decorated & ((d != d[p]) | ~np.isin(word, (DEF, CLASS, DECORATOR)))]] = True
    bad[g[last_in_group & (word == DECORATOR)]] = True
    # a clause continues the statement whose block the clause's own line closes
    before = _previous_at_most(d, g)  # last code row at or below one's indent, -1 if none
    b = np.maximum(before, 0)
    clause = np.isin(word, _CLAUSES)
    prev_ok = (before >= 0) & (d[b] == d) & header[b] & (closes[b] == np.arange(m))
    bad[g[clause & ~prev_ok]] = True
    root = _roots(word, clause & prev_ok, before)
    pw, r = word[b], root[b]
    allowed = np.select(
        [word == ELIF, word == ELSE, word == EXCEPT, word == FINALLY],
        [(r == IF) & np.isin(pw, (IF, ELIF)),
         ((r == IF) & np.isin(pw, (IF, ELIF))) | (np.isin(r, (FOR, WHILE)) & (pw == r)) | ((r == TRY) & (pw == EXCEPT)),
         (r == TRY) & np.isin(pw, (TRY, EXCEPT)),
         (r == TRY) & np.isin(pw, (TRY, EXCEPT, ELSE))], True)
    bad[g[clause & ~allowed]] = True
    # comments after the last code line: where the blocks close is the scanner's end-of-file rule
    comments = np.flatnonzero(lines.comment)
    after = np.searchsorted(code, comments)
    a = np.minimum(after, m - 1)
    same = (after < m) & (group[code[a]] == group[comments])
    bad[group[comments[~same]]] = True
    return bad


def _closing_code(d: np.ndarray, g: np.ndarray, header: np.ndarray) -> np.ndarray:
    """For each header among code rows, the first later code row of its group indented less than
    its block (the row below it); m when none."""
    m = d.shape[0]
    level = np.full(m, -1, np.int64)
    heads = np.flatnonzero(header)
    level[heads] = d[np.minimum(heads + 1, m - 1)]
    return _next_below(d, g, level, strict=True)


def _previous_at_most(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """For each row, the last earlier row of its group with indent <= its own, or -1."""
    m = d.shape[0]
    out = np.full(m, -1, np.int64)
    position = np.arange(m)
    group_start = np.searchsorted(g, g, side="left")
    for level in np.unique(d).tolist():
        cand = np.where(d <= level, position, -1)
        before = np.concatenate([[-1], np.maximum.accumulate(cand)[:-1]])
        mine = d == level
        out[mine] = before[mine]
    return np.where(out >= group_start, out, -1)


def _next_below(d: np.ndarray, g: np.ndarray, limit: np.ndarray, strict: bool) -> np.ndarray:
    """For each row, the first later row of its group with indent < limit (<= when not strict),
    or one past the group's last row."""
    m = d.shape[0]
    out = np.full(m, m, np.int64)
    position = np.arange(m)
    for level in np.unique(limit).tolist():
        hit = d < level if strict else d <= level
        cand = np.where(hit, position, m)
        after = np.append(np.minimum.accumulate(cand[::-1])[::-1][1:], m)
        mine = limit == level
        out[mine] = after[mine]
    group_end = np.searchsorted(g, g, side="right")
    return np.minimum(out, group_end)


def _roots(word: np.ndarray, linked: np.ndarray, before: np.ndarray) -> np.ndarray:
    """The keyword of the statement each clause belongs to (its own keyword for other rows)."""
    root = word.copy()
    link = np.where(linked, before, -1)
    while True:
        follow = link >= 0
        new = np.where(follow, root[np.maximum(link, 0)], word)
        if (new == root).all():
            return root
        root = new


def _spans(lines: _Lines, code: np.ndarray, group: np.ndarray, answered: np.ndarray,
           closes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = answered[group[code]]
    rank = np.append(np.cumsum(keep) - 1, keep.sum())  # positions among the kept code rows
    closes = rank[closes[keep]]
    code = code[keep]
    nonblank = np.flatnonzero(~lines.blank & answered[group])
    if code.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    g, d, word, header = group[code], lines.indent[code], lines.word[code], lines.header[code]
    m = code.shape[0]
    heads = np.flatnonzero(header)
    # a header's block runs up to the first non-blank row that closes it: a logical line indented
    # less than the block, or a comment indented less when the code after it is too (the scanner's
    # DEDENT waits for a comment indented at least as deep as the block); rows inside brackets
    # close nothing
    nb_pos = np.searchsorted(nonblank, code)  # position of each code row among the non-blank rows
    nb_group, nb_indent = group[nonblank], lines.indent[nonblank].copy()
    next_code = np.minimum(np.searchsorted(code, nonblank), m - 1)
    nb_indent = np.maximum(nb_indent, d[next_code])
    nb_indent[lines.continued[nonblank]] = np.iinfo(np.int64).max  # inside brackets: closes nothing
    limit = np.full(nonblank.shape[0], -1, np.int64)
    limit[nb_pos[heads]] = d[heads + 1]
    closing = _next_below(nb_indent, nb_group, limit, strict=True)
    block_end = np.zeros(m, np.int64)
    block_end[heads] = nonblank[closing[nb_pos[heads]] - 1]
    # a node runs on through the clauses that follow at its header's indent
    c = np.minimum(closes, m - 1)
    chained = header & (closes < m) & np.isin(word[c], _CLAUSES) & (d[c] == d) & (g[c] == g)
    link = np.where(chained, closes, -1)
    end = block_end.copy()
    while True:
        new = np.where(link >= 0, end[np.maximum(link, 0)], block_end)
        if (new == end).all():
            break
        end = new
    nodes = np.flatnonzero(header & np.isin(word, _COMPOUND))
    first, last = [code[nodes]], [end[nodes]]
    # decorated definitions: from the first of the decorators right above
    decorated = nodes[(nodes > 0) & (word[np.maximum(nodes - 1, 0)] == DECORATOR)]
    if decorated.shape[0]:
        is_dec = word == DECORATOR
        run_start = np.maximum.accumulate(np.where(~np.append(False, is_dec[:-1]) & is_dec, np.arange(m), -1))
        first.append(code[run_start[decorated - 1]])
        last.append(end[decorated])
    first, last = np.concatenate(first), np.concatenate(last)
    order = np.lexsort((last, first, group[first]))
    return first[order], last[order]
