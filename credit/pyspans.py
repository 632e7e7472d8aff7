"""Python block spans of many hunk sides at once, for sides whose structure indentation decides.

`credit.split` gives a Python hunk side's syntax units from tree-sitter-python's compound-statement
nodes (function, class, decorated definition, if, for, while, try, with, match). Parsing costs
about as much as everything else in DiDPO together, so `python_spans` first reads the sides in a
few vectorized passes over their bytes and answers for the sides in a subset where the nodes follow
from the lines alone; tree-sitter parses the rest (`answered` is False for them).

The subset: no string quotes, backslashes or tabs in the indentation; brackets balanced and
properly nested on each line (so every line is one logical line, and a `#` always starts a
comment); every line starting with a compound keyword ends with its one colon (no one-line
bodies, no `async`, no `match` / `case` headers); indentation that only deepens right after a
header and only returns to an open level; each clause (elif / else / except / finally) right
after a header of a statement that takes it; decorators directly above a definition; no comment
less indented than the code after it, and none after the last code line.

Inside it, as tree-sitter-python's scanner builds them (checked against tree-sitter on the
standard library and on the benchmark's code: tests/credit/test_credit_pyspans.py): a header's
block holds the lines below it up to the first non-blank line indented less than the block's first
line; the node spans the header, its block and the clauses that follow at the header's indent
with their blocks. A decorated definition spans its decorators and the definition, which is a node
of its own.
"""

from __future__ import annotations

import keyword

import numpy as np

from credit._util import ranges
from credit.text import skip_spaces

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
_PATTERNS = [(np.uint64(int.from_bytes(w.encode(), "little")), np.uint64((1 << (8 * len(w))) - 1), len(w))
             for w in _WORDS]  # every keyword fits in eight bytes
_KEYWORD_VALUES = np.array(sorted(int.from_bytes(w.encode(), "little") for w in keyword.kwlist + keyword.softkwlist),
                           np.uint64)
_SPECIAL = np.zeros(256, bool)
_SPECIAL[[ord(c) for c in "\"'\\#()[]{}:"]] = True


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
        lines = _lines(buf, e - (ends - starts), e)
    else:
        lines = _lines(data, starts, ends)
    unsure = np.zeros(n_groups, bool)
    unsure[group[lines.unsure]] = True
    code = np.flatnonzero(lines.code)
    unsure |= _structure_unsure(lines, code, group, n_groups)
    answered = ~unsure
    first, last = _spans(lines, code, group, answered)
    return answered, first, last


class _Lines:
    """Per row: blank, comment-only or code; indent; keyword; header (ends with its colon); unsure."""

    def __init__(self, blank, comment, indent, word, header, unsure):
        self.blank, self.comment, self.indent, self.word, self.header, self.unsure = (
            blank, comment, indent, word, header, unsure)
        self.code = ~blank & ~comment


def _lines(buf: np.ndarray, s: np.ndarray, e: np.ndarray) -> _Lines:
    n = s.shape[0]
    first = skip_spaces(buf, s, e)
    blank = first >= e
    head = buf[np.minimum(first, buf.shape[0] - 1)]
    comment = ~blank & (head == 35)
    code = ~blank & ~comment
    indent = first - s
    unsure = ~blank & (skip_spaces(buf, s, e, only=" ") != first)  # a tab or form feed in the indentation
    # the few bytes that matter, found in one pass: quotes, backslash, '#', brackets, ':'
    pos = np.flatnonzero(_SPECIAL[buf])
    row = np.searchsorted(s, pos, side="right") - 1
    byte = buf[pos]
    inside = (row >= 0) & (pos < e[np.maximum(row, 0)])  # bytes between the rows do not count
    pos, row, byte = pos[inside], row[inside], byte[inside]
    unsure[row[(byte == 34) | (byte == 39) | (byte == 92)]] = True
    hashes = np.flatnonzero(byte == 35)
    code_end = e.copy()
    at = np.searchsorted(row[hashes], np.arange(n))  # each row's first '#', if any
    has_hash = (at < hashes.shape[0]) & (row[hashes[np.minimum(at, max(hashes.shape[0] - 1, 0))]] == np.arange(n)
                                         if hashes.shape[0] else np.zeros(n, bool))
    code_end[has_hash] = pos[hashes[at[has_hash]]]
    live = pos < code_end[row]
    pos, row, byte = pos[live], row[live], byte[live]
    last = skip_spaces(buf, code_end - 1, first - 1, step=-1)
    ends_colon = code & (buf[np.clip(last, 0, buf.shape[0] - 1)] == 58)
    word = _keywords(buf, first, code)
    bracket = (_OPEN[byte] > 0) | (_CLOSE[byte] > 0)
    unsure |= _brackets_unsure(pos[bracket], row[bracket], byte[bracket], n) & code
    colon0 = _top_level_colons(buf, pos, row, byte, n)
    unsure |= _adjacent_names(buf, s, code_end, n) & code
    header = np.isin(word, _COMPOUND + _CLAUSES + (MATCH, CASE)) & ends_colon & (colon0 == 1)
    unsure |= code & (word == ASYNC)
    unsure |= code & np.isin(word, (MATCH, CASE)) & ends_colon
    unsure |= code & np.isin(word, _COMPOUND + _CLAUSES) & ~header
    unsure |= code & ((word == NONE) | (word == DECORATOR)) & ends_colon
    return _Lines(blank, comment, indent, word, header & ~np.isin(word, (MATCH, CASE)), unsure)


def _keywords(buf: np.ndarray, first: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Index into _WORDS of the keyword a row starts with, DECORATOR for '@', NONE otherwise.

    A row's first eight bytes, read as one little-endian integer, are compared with each keyword
    under a mask of its length; the byte after it must not continue a name.
    """
    word = np.full(first.shape[0], NONE, np.int64)
    rows = np.flatnonzero(code)
    window = np.ascontiguousarray(buf[np.minimum(first[rows, None] + np.arange(8), buf.shape[0] - 1)])
    value = window.view("<u8").reshape(-1)
    after = buf[np.minimum(first[rows, None] + np.arange(1, 9), buf.shape[0] - 1)]
    for k, (pattern, mask, size) in enumerate(_PATTERNS):
        hit = ((value & mask) == pattern) & ~_IDENT[after[:, size - 1]]
        word[rows[hit]] = k
    word[rows[window[:, 0] == 64]] = DECORATOR
    return word


def _brackets_unsure(pos: np.ndarray, row: np.ndarray, byte: np.ndarray, n: int) -> np.ndarray:
    """Rows whose brackets (given in order, comments left out) are not balanced and properly nested."""
    opens = _OPEN[byte] > 0
    depth = np.cumsum(np.where(opens, 1, -1))
    start = np.searchsorted(row, np.arange(n))
    before = np.concatenate([[0], depth])[start]  # depth before each row's first bracket
    rel = depth - before[row]
    bad = np.zeros(n, bool)
    bad[row[rel < 0]] = True
    end_rel = np.zeros(n, np.int64)
    has = np.flatnonzero(np.bincount(row, minlength=n) > 0)
    end_rel[has] = rel[np.searchsorted(row, has, side="right") - 1]
    bad |= end_rel != 0
    # nesting: at each level, brackets alternate open / close; each close must match its open
    ok = ~bad[row]
    level = np.where(opens, rel, rel + 1)[ok]
    kind = np.maximum(_OPEN[byte], _CLOSE[byte])[ok]
    order = np.lexsort((pos[ok], level))
    kind, row_ok = kind[order], row[ok][order]
    bad[row_ok[1::2][kind[0::2] != kind[1::2]]] = True
    return bad


def _adjacent_names(buf: np.ndarray, s: np.ndarray, code_end: np.ndarray, n: int) -> np.ndarray:
    """Rows where two names or numbers follow each other with only spaces between and neither is
    a keyword: not Python (prose, say, which tree-sitter still reads as code in its own way)."""
    ident = _IDENT[buf]
    gap = np.flatnonzero(ident[:-1] & (buf[1:] == 32)) + 1  # a space right after a name
    nxt = skip_spaces(buf, gap, np.full(gap.shape[0], buf.shape[0] - 1), only=" ")
    pair = ident[nxt]
    gap, nxt = gap[pair], nxt[pair]
    row = np.searchsorted(s, gap, side="right") - 1
    inside = (row >= 0) & (nxt < code_end[np.maximum(row, 0)])
    gap, nxt, row = gap[inside], nxt[inside], row[inside]
    if gap.shape[0] == 0:
        return np.zeros(n, bool)
    before_start = _skip_name(ident, gap - 1, s[row] - 1, step=-1) + 1
    after_end = _skip_name(ident, nxt, code_end[row], step=1)
    plain = ~_is_keyword(buf, before_start, gap) & ~_is_keyword(buf, nxt, after_end)
    bad = np.zeros(n, bool)
    bad[row[plain]] = True
    return bad


def _skip_name(ident: np.ndarray, starts: np.ndarray, limits: np.ndarray, step: int) -> np.ndarray:
    """Per position, the first one from it on (step -1: backwards) that is not a name byte."""
    pos = starts.copy()
    active = np.flatnonzero(pos != limits)
    while active.shape[0]:
        active = active[ident[pos[active]]]
        pos[active] += step
        active = active[pos[active] != limits[active]]
    return pos


def _is_keyword(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each name buf[start:end] is a Python keyword (all fit in eight bytes)."""
    size = ends - starts
    short = np.flatnonzero(size <= 8)
    window = np.ascontiguousarray(buf[np.minimum(starts[short, None] + np.arange(8), buf.shape[0] - 1)])
    mask = np.where(size[short] == 8, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << (np.uint64(8) * size[short].astype(np.uint64))) - np.uint64(1))
    out = np.zeros(starts.shape[0], bool)
    out[short] = np.isin(window.view("<u8").reshape(-1) & mask, _KEYWORD_VALUES)
    return out


def _top_level_colons(buf: np.ndarray, pos: np.ndarray, row: np.ndarray, byte: np.ndarray, n: int) -> np.ndarray:
    """Per row, the colons outside brackets (comments left out), ':=' not counted."""
    delta = (_OPEN[byte] > 0).astype(np.int64) - (_CLOSE[byte] > 0)
    depth = np.cumsum(delta) - delta  # bracket depth before each special byte
    start = np.searchsorted(row, np.arange(n))
    row_depth = np.append(depth, 0)[start]
    colon = (byte == 58) & (buf[np.minimum(pos + 1, buf.shape[0] - 1)] != 61)
    top = colon & (depth == row_depth[row])
    return np.bincount(row[top], minlength=n)


def _structure_unsure(lines: _Lines, code: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Groups whose indentation, clauses, decorators or comments leave the subset."""
    bad = np.zeros(n_groups, bool)
    nonblank = np.flatnonzero(~lines.blank)
    base = np.full(n_groups, np.iinfo(np.int64).max)
    np.minimum.at(base, group[nonblank], lines.indent[nonblank])
    g, d, word, header = group[code], lines.indent[code], lines.word[code], lines.header[code]
    m = code.shape[0]
    if m == 0:
        return bad
    first_in_group = np.ones(m, bool)
    first_in_group[1:] = g[1:] != g[:-1]
    last_in_group = np.append(first_in_group[1:], True)
    bad[g[first_in_group & (d != base[g])]] = True
    bad[g[last_in_group & header]] = True  # a header without a body
    prev = np.arange(m) - 1
    has_prev = ~first_in_group
    p = np.maximum(prev, 0)
    deeper = has_prev & (d > d[p])
    bad[g[deeper & ~header[p]]] = True
    bad[g[has_prev & header[p] & ~deeper]] = True
    decorated = has_prev & (word[p] == DECORATOR)
    bad[g[decorated & ((d != d[p]) | ~np.isin(word, (DEF, CLASS, DECORATOR)))]] = True
    bad[g[last_in_group & (word == DECORATOR)]] = True
    before = _previous_at_most(d, g)  # last code row at or below one's indent, -1 if none
    b = np.maximum(before, 0)
    dedent = has_prev & (d < d[p])
    bad[g[dedent & ((before < 0) | (d[b] != d))]] = True
    clause = np.isin(word, _CLAUSES)
    prev_ok = (before >= 0) & (d[b] == d) & header[b]
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
    # comments: never less indented than the code after them, never after the last code line
    comments = np.flatnonzero(lines.comment)
    after = np.searchsorted(code, comments)
    has_after = after < m
    a = np.minimum(after, m - 1)
    same = has_after & (group[code[a]] == group[comments])
    bad[group[comments[~same]]] = True
    bad[group[comments[same & (lines.indent[comments] < d[a])]]] = True
    return bad


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


def _spans(lines: _Lines, code: np.ndarray, group: np.ndarray, answered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = answered[group[code]]
    code = code[keep]
    nonblank = np.flatnonzero(~lines.blank & answered[group])
    if code.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    g, d, word, header = group[code], lines.indent[code], lines.word[code], lines.header[code]
    m = code.shape[0]
    heads = np.flatnonzero(header)
    # a header's block: up to the first non-blank row indented less than its first line
    body = np.minimum(heads + 1, m - 1)
    level = np.zeros(m, np.int64)
    level[heads] = d[body]
    nb_pos = np.searchsorted(nonblank, code)  # position of each code row among the non-blank rows
    nb_group, nb_indent = group[nonblank], lines.indent[nonblank]
    limit = np.full(nonblank.shape[0], -1, np.int64)
    limit[nb_pos[heads]] = level[heads]
    closing = _next_below(nb_indent, nb_group, limit, strict=True)
    block_end = np.zeros(m, np.int64)
    block_end[heads] = nonblank[closing[nb_pos[heads]] - 1]
    # a node runs on through the clauses that follow at its header's indent
    nxt = _next_below(d, g, d, strict=False)
    has_next = nxt < np.searchsorted(g, g, side="right")
    n_ = np.minimum(nxt, m - 1)
    chained = header & has_next & np.isin(word[n_], _CLAUSES) & (d[n_] == d)
    link = np.where(chained, nxt, -1)
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
