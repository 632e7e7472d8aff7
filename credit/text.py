"""What DiDPO compares: normalised code lines, their tokens and stable hashes.

A line is compared without its comment and trailing whitespace; blank and comment-only lines are
not compared (`normalize_line`); whitespace means ASCII whitespace. Tokens are runs of word
characters (ASCII letters, digits, _ and any non-ASCII character) and single other non-space
characters. Hashes are polynomial hashes of the UTF-8 bytes modulo 2^64, finalised with
splitmix64: the same in every process, unlike Python's salted `hash()`. `tokenize` computes tokens
and hashes of many lines, and `line_table` normalises, hashes and tokenises the lines of a whole
batch, each distinct line once, in a few vectorized passes over their bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from credit._util import csr_pointers, ranges, segment_starts

_WORD_CHARS = "0-9A-Za-z_\x80-\U0010ffff"
TOKEN = re.compile(f"[{_WORD_CHARS}]+|[^{_WORD_CHARS} \t\r\n\x0b\x0c]")
_SPACE, _WORD, _PUNCT, _NEWLINE = 0, 1, 2, 3
_ASCII_KIND = np.array([_WORD if chr(c).isalnum() or c == ord("_") else _SPACE if chr(c) in " \t\r\x0b\x0c"
                        else _NEWLINE if c == 10 else _PUNCT for c in range(128)], np.int64)
_BYTE_KIND = np.concatenate([_ASCII_KIND, np.full(128, _WORD, np.int64)])  # UTF-8 lead/continuation bytes
MAX_COPIES = 64  # copies of one token beyond this many in a unit are not counted by the similarity
_POWER = np.uint64(0x100000001B3)
_POWER_INVERSE = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_MIX_LENGTH = np.uint64(0xC2B2AE3D27D4EB4F)
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.strip() removes, ASCII only
IS_SPACE = np.zeros(256, bool)
IS_SPACE[[ord(c) for c in WHITESPACE]] = True
MARKERS = (None, "#", "//", "--")  # line-comment markers, by code (0: none)
_COMMENT_MARKERS = {
    "#": (".py", ".pyi", ".sh", ".bash", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".cfg", ".jl",
          ".ps1", ".mk", "makefile", "dockerfile", ".cmake", ".txt"),
    "//": (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".java", ".js", ".cjs", ".mjs", ".jsx", ".ts", ".tsx", ".go",
           ".rs", ".swift", ".kt", ".scala", ".cs", ".php", ".dart", ".m", ".dfy"),
    "--": (".sql", ".lua", ".hs"),
}


def comment_marker(path: str) -> Optional[str]:
    """The line-comment marker of a file, from its extension (None when unknown)."""
    name = path.lower()
    for marker, endings in _COMMENT_MARKERS.items():
        if name.endswith(endings):
            return marker
    return None


def normalize_line(line: str, comment: Optional[str] = "#") -> str:
    """The line as compared: comment removed, trailing whitespace stripped, "" when nothing is left.

    A comment is removed only where no quote precedes its marker on the line (a marker inside a
    string literal is kept). For "//" languages, lines that start with "/*", "*" or "*/" are
    block-comment lines.
    """
    if comment is not None and comment in line:
        cut = line.index(comment)
        if "'" not in line[:cut] and '"' not in line[:cut]:
            line = line[:cut]
    stripped = line.strip(WHITESPACE)
    if not stripped or (comment == "//" and stripped.startswith(("/*", "*"))):
        return ""
    return line.rstrip(WHITESPACE)


def similarity(a: str, b: str, comment: Optional[str] = "#") -> float:
    """Dice similarity 2|A ∩ B| / (|A| + |B|) of the token multisets of two code texts.

    Comments and blank lines are ignored; a token counts at most MAX_COPIES times.
    """
    ta, tb = _token_counts(a, comment), _token_counts(b, comment)
    total = sum(ta.values()) + sum(tb.values())
    if total == 0:
        return 1.0
    return 2.0 * sum(min(c, tb.get(t, 0)) for t, c in ta.items()) / total


def _token_counts(text: str, comment: Optional[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in text.splitlines():
        for tok in TOKEN.findall(normalize_line(line, comment)):
            counts[tok] = min(counts.get(tok, 0) + 1, MAX_COPIES)
    return counts


def marker_code(path: str) -> int:
    """Index into MARKERS of the file's line-comment marker."""
    return MARKERS.index(comment_marker(path))


def line_table(texts: Sequence[str], markers: np.ndarray, *, skip: int = 0) -> "LineTable":
    """Content ids, indentation and distinct contents of many lines, computed on their bytes.

    Each line is compared as `normalize_line` gives it, without its indentation; content ids are
    numbered in order of first appearance, and `contents` is `tokenize` of the distinct contents
    in id order. Each distinct (text, marker) is normalised once, with searches over the positions
    of comment markers, quotes and non-space bytes instead of per-line string operations.

    Args:
      texts: (L,) line texts without line breaks.
      markers: (L,) int index into MARKERS of each line's comment marker.
      skip: ASCII characters in front of each text that are not part of it (a diff's +/- marker).

    Returns:
      LineTable.
    """
    markers = np.asarray(markers, np.int64)
    if markers.shape != (len(texts),):
        raise ValueError(f"markers must have shape ({len(texts)},), got {markers.shape}")
    if not texts:
        return LineTable(np.zeros(0, np.int64), np.zeros(0, np.int64), tokenize([]))
    distinct, key_marker, line_key = _distinct_lines(texts, markers)
    data = np.frombuffer(("\n".join(distinct) + "\n").encode("utf-8", "surrogatepass"), np.uint8)
    ends = np.flatnonzero(data == 10)
    if ends.shape[0] != len(distinct):
        raise ValueError("line texts must not contain line breaks")
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64) + skip
    first, last = _content_spans(data, starts, ends, key_marker)
    compared = np.flatnonzero(first <= last)
    lengths = last[compared] - first[compared] + 1
    codes = data[ranges(first[compared], last[compared] + 1)].astype(np.uint64)
    prefix, inverse = _prefix_hash(codes)
    bounds = segment_starts(lengths)
    hashes = _span_hash(prefix, inverse, bounds, bounds + lengths)
    uniq, at, inv = np.unique(hashes, return_index=True, return_inverse=True)
    rank = np.empty(uniq.shape[0], np.int64)
    order = np.argsort(at, kind="stable")
    rank[order] = np.arange(uniq.shape[0])
    key_content = np.full(len(distinct), -1, np.int64)
    key_content[compared] = rank[inv.reshape(-1)]
    key_indent = np.zeros(len(distinct), np.int64)
    key_indent[compared] = np.minimum(first[compared] - starts[compared], 0xFFFF)
    # the distinct contents, in id order, joined by newlines for the tokenizer
    rep = compared[at[order]]
    lo, hi = first[rep], last[rep] + 2
    joined = data[ranges(lo, hi)].copy()
    joined[np.cumsum(hi - lo) - 1] = 10
    contents = _tokenize_bytes(joined[:-1], rep.shape[0]) if rep.shape[0] else tokenize([])
    content = key_content[line_key]
    if np.unique(key_marker).shape[0] > 1:  # keys are grouped by marker: renumber along the lines
        has = np.flatnonzero(content >= 0)
        uniq, at, inv = np.unique(content[has], return_index=True, return_inverse=True)
        order = np.argsort(at, kind="stable")
        rank = np.empty(uniq.shape[0], np.int64)
        rank[order] = np.arange(uniq.shape[0])
        content[has] = rank[inv.reshape(-1)]
        contents = _take(contents, uniq[order])
    return LineTable(content, key_indent[line_key], contents)


def _take(contents: "Contents", ids: np.ndarray) -> "Contents":
    """The contents `ids`, in that order (token ids unchanged)."""
    lo, hi = contents.token_ptr[ids], contents.token_ptr[ids + 1]
    ptr = csr_pointers(hi - lo)
    return Contents(contents.hashes[ids], ptr, contents.tokens[ranges(lo, hi)], contents.n_tokens)


def _distinct_lines(texts: Sequence[str], markers: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The distinct (marker, text) pairs as (texts, markers), and the index of each line's pair."""
    distinct: list[str] = []
    distinct_markers = []
    keys = np.empty(len(texts), np.int64)
    for code in np.unique(markers).tolist():
        at = np.flatnonzero(markers == code)
        chosen = texts if at.shape[0] == len(texts) else [texts[i] for i in at.tolist()]
        uniq = list(dict.fromkeys(chosen))
        index = dict(zip(uniq, range(len(distinct), len(distinct) + len(uniq))))
        keys[at] = np.fromiter(map(index.__getitem__, chosen), np.int64, len(chosen))
        distinct.extend(uniq)
        distinct_markers.append(np.full(len(uniq), code, np.int64))
    return distinct, np.concatenate(distinct_markers), keys


def _content_spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   markers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive byte span (first, last) of each line's compared content; first > last when none.

    `normalize_line`, vectorized: the comment starts at the line's first marker unless a quote
    comes before it; the content is what is left, without surrounding whitespace.
    """
    cut = ends.copy()
    quotes = np.flatnonzero((data == 34) | (data == 39))
    for code, marker in enumerate(MARKERS):
        rows = np.flatnonzero(markers == code)
        if marker is None or rows.shape[0] == 0:
            continue
        at = find_bytes(data, marker.encode())
        pos = first_at_or_after(at, starts[rows], ends[rows])
        quote = first_at_or_after(quotes, starts[rows], ends[rows])
        comment = pos < ends[rows]
        cut[rows[comment & (quote >= pos)]] = pos[comment & (quote >= pos)]
    first = skip_spaces(data, starts, cut)
    empty = first >= cut
    last = skip_spaces(data, cut - 1, first - 1, step=-1)
    first[empty], last[empty] = 1, 0
    block = (markers == MARKERS.index("//")) & ~empty
    if block.any():  # "/*" and "*" lines are block comments in "//" languages
        head = data[first[block]]
        nxt = data[np.minimum(first[block] + 1, data.shape[0] - 1)]
        drop = np.flatnonzero(block)[(head == 42) | ((head == 47) & (nxt == 42))]
        first[drop], last[drop] = 1, 0
    return first, last


def find_bytes(data: np.ndarray, pattern: bytes) -> np.ndarray:
    """Start positions of `pattern` in a uint8 buffer (candidates by first byte, then narrowed)."""
    code = np.frombuffer(pattern, np.uint8)
    at = np.flatnonzero(data[:max(data.shape[0] - code.shape[0] + 1, 0)] == code[0])
    for k in range(1, code.shape[0]):
        at = at[data[at + k] == code[k]]
    return at


def skip_spaces(data: np.ndarray, starts: np.ndarray, limits: np.ndarray, step: int = 1,
                only: str | None = None) -> np.ndarray:
    """Per row, the first position from its start on (step -1: backwards) that is not ASCII
    whitespace (`only`: none of these characters), or its limit when every byte up to the limit is."""
    space = IS_SPACE
    if only is not None:
        space = np.zeros(256, bool)
        space[[ord(c) for c in only]] = True
    return skip_while(lambda at: space[data[at]], starts, limits, step)


def skip_while(test, starts: np.ndarray, limits: np.ndarray, step: int = 1) -> np.ndarray:
    """Per row, the first position from its start on (step -1: backwards) where `test` (positions
    -> bools) is False, or its limit.

    Steps all rows one position at a time, keeping only the rows still passing: the cost is the
    total distance walked (an indentation, a name), not the size of the buffer.
    """
    pos = np.asarray(starts, np.int64).copy()
    limits = np.asarray(limits, np.int64)
    active = np.flatnonzero((limits - pos) * step > 0)  # a start at or past its limit stays put
    while active.shape[0]:
        active = active[test(pos[active])]
        pos[active] += step
        active = active[pos[active] != limits[active]]
    return pos


def first_at_or_after(positions: np.ndarray, starts: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """The first of the sorted `positions` at or after each start, or the limit when it is past it."""
    k = np.searchsorted(positions, starts)
    pos = positions[np.minimum(k, positions.shape[0] - 1)] if positions.shape[0] else np.zeros_like(starts)
    return np.where((k < positions.shape[0]) & (pos < limits), pos, limits)


def tokenize(contents: list[str]) -> "Contents":
    """Stable hashes and token ids of many line contents (see the module docstring).

    Args:
      contents: C line contents without line breaks.

    Returns:
      Contents: (C,) hashes, token CSR (C + 1,) / (T,) with ids dense in 0..n_tokens-1.
    """
    if not contents:
        return Contents(np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int64), 1)
    return _tokenize_bytes(np.frombuffer("\n".join(contents).encode("utf-8", "surrogatepass"), np.uint8),
                           len(contents))


def _tokenize_bytes(data: np.ndarray, n_lines: int) -> "Contents":
    """`tokenize` of n_lines line contents given as UTF-8 bytes joined by newlines."""
    codes = data.astype(np.uint64)
    n = codes.shape[0]
    kind = _BYTE_KIND[data]
    word = kind == _WORD
    starts_word = word & ~np.concatenate([[False], word[:-1]])
    ends_word = word & ~np.concatenate([word[1:], [False]])
    starts = np.flatnonzero(starts_word | (kind == _PUNCT))
    ends = np.empty_like(starts)
    is_word = word[starts]
    ends[is_word] = np.flatnonzero(ends_word) + 1
    ends[~is_word] = starts[~is_word] + 1
    line_start = np.concatenate([[0], np.flatnonzero(kind == _NEWLINE) + 1])
    line_end = np.append(line_start[1:] - 1, n)

    prefix, inverse = _prefix_hash(codes)
    token_hash = _span_hash(prefix, inverse, starts, ends)
    uniq, token_ids = np.unique(token_hash, return_inverse=True)
    owner = np.searchsorted(line_start, starts, side="right") - 1
    ptr = csr_pointers(np.bincount(owner, minlength=n_lines))
    return Contents(_span_hash(prefix, inverse, line_start, line_end), ptr, token_ids.reshape(-1).astype(np.int64),
                    max(int(uniq.shape[0]), 1))


def _prefix_hash(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """H[i] = sum_{j < i} c_j P^j and the powers P^-i, modulo 2^64."""
    n = codes.shape[0]
    powers, inverse = _powers(n + 1)
    prefix = np.zeros(n + 1, np.uint64)
    np.cumsum(codes * powers[:n], out=prefix[1:])
    return prefix, inverse[:n + 1]


_POWERS = [np.ones(1, np.uint64), np.ones(1, np.uint64)]  # P^i and P^-i, grown as needed


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P^i and P^-i for i < n (at least), modulo 2^64: constants, computed once per size doubling."""
    if _POWERS[0].shape[0] < n:
        size = max(n, 2 * _POWERS[0].shape[0], 1 << 16)
        for k, base in enumerate((_POWER, _POWER_INVERSE)):
            table = np.empty(size, np.uint64)
            table[0] = 1
            np.cumprod(np.full(size - 1, base, np.uint64), out=table[1:])
            _POWERS[k] = table
    return _POWERS[0], _POWERS[1]


def _span_hash(prefix: np.ndarray, inverse: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Hash of codes[s:e] for each span: (H[e] - H[s]) P^-s, length mixed in, splitmix64-finalised."""
    x = (prefix[ends] - prefix[starts]) * inverse[starts] + (ends - starts).astype(np.uint64) * _MIX_LENGTH
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@dataclass(frozen=True, eq=False)
class LineTable:
    """Lines as compared: (L,) content id (-1 for a blank or comment line), (L,) indentation in
    characters, and the distinct contents."""

    content: np.ndarray
    indent: np.ndarray
    contents: "Contents"


@dataclass(frozen=True, eq=False)
class Contents:
    """Distinct line contents: (C,) stable hashes, token CSR (C + 1,) / (T,), vocabulary size."""

    hashes: np.ndarray
    token_ptr: np.ndarray
    tokens: np.ndarray
    n_tokens: int
