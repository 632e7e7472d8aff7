"""Split a step's unified diff into sub-diffs at several levels.

A sub-diff (unit) is a set of changed lines of one edit type (added or deleted) of one step:

  file    all added (or deleted) lines of one file
  hunk    all added (or deleted) lines of one hunk
  syntax  the changed lines inside one function / class / compound statement: the file's
          tree-sitter grammar (`credit.syntax`) parses the hunk side (its changed lines and the
          context between them); files no grammar reads, and sides that do not parse, use
          indentation blocks (a line and the more indented lines below it, a closing bracket at
          the same indent included)
  block   a maximal run of consecutive changed lines of one edit type

Units with the same line set are kept once (the coarsest level wins). Binary files and pure
renames have no changed lines and give no units. This is DiDPO's sub-diff decomposition
(reference: verl-code `didpo/snippet.py`), applied to the diffs the environment observed.

`split_diffs` splits a whole batch at once. Diffs in git's format are scanned with vectorized
passes over the bytes of all of them together (hunk bodies are found from the line counts in the
hunk headers, as unidiff reads them); a diff the scan does not recognise (no hunk, a header out of
place, counts that do not match its lines) goes through unidiff, which parses it or raises its
error. The two paths give the same result (tested on the same diffs).
"""

from __future__ import annotations

import codecs
import functools
import itertools
import operator
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import unidiff

from credit._util import csr_pointers, lexsort_ints, ranges, segment_starts
from credit.syntax import Grammar, block_spans, grammar_for
from credit.text import skip_spaces

LEVELS = ("file", "hunk", "syntax", "block")
SYNTAX_MODES = ("tree-sitter", "indent")
ADDED, DELETED = 1, -1

# diffs split together: a batch's scans and unit passes are vectorized over all its diffs at once,
# and past a few thousand diffs their arrays outgrow the cache (the refbench large batch, 13.8k
# diffs: 660 ms in one piece, ~500 in pieces of 2,048; docs/benchmarks.md)
_CHUNK_DIFFS = 2048


@dataclass(frozen=True, eq=False)
class SubDiffs:
    """The changed lines of one diff and its units, as flat arrays.

    Attributes:
      paths: (L,) file path of each changed line (the new path; the old one for deleted files).
      kinds: (L,) int8 edit type, ADDED (+1) or DELETED (-1).
      line_numbers: (L,) 1-based line number in the new file (added) or old file (deleted).
      texts: (L,) line text without the +/- marker and line break.
      unit_levels: (U,) int8 index into LEVELS of each unit.
      unit_ptr: (U + 1,) CSR pointers: unit u holds lines unit_lines[unit_ptr[u]:unit_ptr[u + 1]].
      unit_lines: (M,) line indices, ascending inside each unit.
    """

    paths: tuple[str, ...]
    kinds: np.ndarray
    line_numbers: np.ndarray
    texts: tuple[str, ...]
    unit_levels: np.ndarray
    unit_ptr: np.ndarray
    unit_lines: np.ndarray

    @property
    def n_units(self) -> int:
        return len(self.unit_levels)

    def unit(self, u: int) -> np.ndarray:
        """Line indices of unit u."""
        return self.unit_lines[self.unit_ptr[u]:self.unit_ptr[u + 1]]

    def unit_text(self, u: int) -> str:
        """The unit's lines, joined (a readable preview)."""
        return "\n".join(self.texts[i] for i in self.unit(u))


class DiffError(ValueError):
    """A diff of a batch that is not a unified diff; `index` is its position in the batch."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


@dataclass(frozen=True, eq=False)
class DiffBatch:
    """The changed lines and units of D diffs, as flat arrays.

    Diff d holds lines line_ptr[d]:line_ptr[d + 1] and units diff_units[d]:diff_units[d + 1];
    `unit_lines` holds batch-wide line indices. `sub(d)` gives one diff's SubDiffs.

    Attributes:
      line_ptr: (D + 1,) CSR pointers of each diff's changed lines.
      path_names: the distinct file paths; path_ids: (L,) index into them of each line.
      kinds, line_numbers: (L,) as in SubDiffs.
      source, line_source: each line's text is source[line_source] without its first character
        (the +/- marker) and trailing carriage returns (`texts`, `marked_texts`).
      diff_units: (D + 1,) CSR pointers of each diff's units.
      unit_levels, unit_ptr, unit_lines: as in SubDiffs, over the whole batch.
    """

    line_ptr: np.ndarray
    path_names: tuple[str, ...]
    path_ids: np.ndarray
    kinds: np.ndarray
    line_numbers: np.ndarray
    source: list[str]
    line_source: np.ndarray
    carriage_returns: bool
    diff_units: np.ndarray
    unit_levels: np.ndarray
    unit_ptr: np.ndarray
    unit_lines: np.ndarray

    def texts_of(self, lines: np.ndarray) -> list[str]:
        """Texts of the given lines."""
        out = [self.source[i][1:] for i in self.line_source[lines].tolist()]
        return [t.rstrip("\r") for t in out] if self.carriage_returns else out

    @functools.cached_property
    def texts(self) -> list[str]:
        """(L,) every line's text (made on first use)."""
        return self.texts_of(np.arange(self.line_source.shape[0]))

    def marked_texts(self) -> list[str]:
        """Every line's text with its marker in front (and any carriage return left on)."""
        ids = self.line_source.tolist()
        if len(ids) < 2:
            return [self.source[i] for i in ids]
        return list(operator.itemgetter(*ids)(self.source))  # (the items gathered in C)

    def sub(self, d: int) -> SubDiffs:
        lo, hi = int(self.line_ptr[d]), int(self.line_ptr[d + 1])
        u0, u1 = int(self.diff_units[d]), int(self.diff_units[d + 1])
        if hi == lo:
            return _EMPTY
        ptr = self.unit_ptr[u0:u1 + 1]
        return SubDiffs(
            paths=tuple(self.path_names[i] for i in self.path_ids[lo:hi].tolist()),
            kinds=self.kinds[lo:hi], line_numbers=self.line_numbers[lo:hi],
            texts=tuple(self.texts_of(np.arange(lo, hi))),
            unit_levels=self.unit_levels[u0:u1], unit_ptr=ptr - ptr[0],
            unit_lines=self.unit_lines[ptr[0]:ptr[-1]] - lo)


def split_diff(
    diff: str,
    *,
    levels: Sequence[str] = LEVELS,
    syntax: str = "tree-sitter",
    min_syntax_lines: int = 3,
) -> SubDiffs:
    """Split a unified diff (git format) into units at the requested levels.

    Args:
      diff: the diff text; "" gives no units.
      levels: any of "file", "hunk", "syntax", "block".
      syntax: "tree-sitter" (each file parsed by its grammar in `credit.syntax.GRAMMARS`,
        indentation blocks for files no grammar reads) or "indent" (indentation blocks everywhere,
        faster).
      min_syntax_lines: hunk sides with fewer changed lines get no syntax units (a block of one
        or two lines is the same as its line block).

    Returns:
      SubDiffs.
    """
    try:
        return split_diffs([diff], levels=levels, syntax=syntax, min_syntax_lines=min_syntax_lines).sub(0)
    except DiffError as err:
        raise ValueError(str(err)) from None


def split_diffs(
    diffs: Sequence[str],
    *,
    levels: Sequence[str] = LEVELS,
    syntax: str = "tree-sitter",
    min_syntax_lines: int = 3,
) -> DiffBatch:
    """`split_diff` for many diffs at once (see the module docstring); raises DiffError."""
    check_options(levels, syntax)
    want = tuple(lv in levels for lv in LEVELS)
    diffs = list(diffs)
    batches = []
    for lo in range(0, max(len(diffs), 1), _CHUNK_DIFFS):
        chunk = diffs[lo:lo + _CHUNK_DIFFS]
        try:
            scanned, slow = _scan(chunk)
            parts = [scanned] if scanned is not None else []
            for d in slow:
                parts.append(_parse_with_unidiff(d, chunk[d]))
        except DiffError as err:
            raise DiffError(err.index + lo, str(err)) from None
        batches.append(_units(_merge(parts), len(chunk), want, syntax == "tree-sitter", min_syntax_lines))
    return batches[0] if len(batches) == 1 else _concat(batches)


def _concat(batches: list[DiffBatch]) -> DiffBatch:
    """The batches as one, in order (paths numbered by first appearance, as one batch would)."""
    names = tuple(dict.fromkeys(p for b in batches for p in b.path_names))
    name_id = {p: i for i, p in enumerate(names)}

    def pointers(name: str) -> np.ndarray:
        ptrs = [getattr(b, name) for b in batches]
        base = segment_starts(np.asarray([int(p[-1]) for p in ptrs], np.int64)).tolist()
        return np.concatenate([p[:-1] + b for p, b in zip(ptrs, base)] + [[sum(int(p[-1]) for p in ptrs)]])

    def shifted(name: str, sizes: list[int]) -> np.ndarray:
        base = segment_starts(np.asarray(sizes, np.int64)).tolist()
        return np.concatenate([getattr(b, name) + s for b, s in zip(batches, base)])

    return DiffBatch(
        line_ptr=pointers("line_ptr"), path_names=names,
        path_ids=np.concatenate([np.asarray([name_id[p] for p in b.path_names], np.int64)[b.path_ids]
                                 for b in batches]),
        kinds=np.concatenate([b.kinds for b in batches]),
        line_numbers=np.concatenate([b.line_numbers for b in batches]),
        source=list(itertools.chain.from_iterable(b.source for b in batches)),
        line_source=shifted("line_source", [len(b.source) for b in batches]),
        carriage_returns=any(b.carriage_returns for b in batches),
        diff_units=pointers("diff_units"), unit_levels=np.concatenate([b.unit_levels for b in batches]),
        unit_ptr=pointers("unit_ptr"), unit_lines=shifted("unit_lines", [b.kinds.shape[0] for b in batches]))


def check_options(levels: Sequence[str], syntax: str) -> None:
    if isinstance(levels, str) or not levels or any(lv not in LEVELS for lv in levels):
        raise ValueError(f"levels must be a non-empty subset of {LEVELS}, got {levels!r}")
    if syntax not in SYNTAX_MODES:
        raise ValueError(f"syntax must be one of {SYNTAX_MODES}, got {syntax!r}")


@dataclass(frozen=True, eq=False)
class _Body:
    """Hunk body lines (context and changed, without "\\" markers) of some diffs, in order.

    Per line: diff, file (global id, one per file section), hunk (global id), type (+1 added,
    -1 deleted, 0 context), line number (new file for added and context, old for deleted), and
    where its text is: source[at] with the +/-/space marker in front, and data[start:end] in
    UTF-8 without the marker (texts are made only when asked for). Per file: its path.
    """

    diff: np.ndarray
    file: np.ndarray
    hunk: np.ndarray
    type: np.ndarray
    number: np.ndarray
    at: np.ndarray
    source: list[str]
    data: np.ndarray
    start: np.ndarray
    end: np.ndarray
    file_paths: list[str]
    carriage_returns: bool = False

    def texts(self, lines: np.ndarray) -> list[str]:
        """Texts of the given body lines, without marker and line break."""
        out = [self.source[i][1:] for i in self.at[lines].tolist()]
        return [t.rstrip("\r") for t in out] if self.carriage_returns else out

    def shapes(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`_row_shapes` of the given body lines."""
        return _shapes(self.data, self.start[lines], self.end[lines])


# line numbers and counts in ASCII digits that fit in int64 (a longer number is a malformed header)
_HUNK_HEADER = re.compile(r"@@ -([0-9]{1,18})(?:,([0-9]{1,18}))? \+([0-9]{1,18})(?:,([0-9]{1,18}))? @@")


def _scan(diffs: list[str]) -> tuple[Optional[_Body], list[int]]:
    """Hunk bodies of the diffs in git's format, read in vectorized passes over all the diffs'
    bytes; the indices of the diffs left to unidiff (no hunk, or anything the scan does not
    recognise)."""
    todo = [d for d, text in enumerate(diffs) if text.strip()]
    if not todo:
        return None, []
    texts = [diffs[d] if diffs[d].endswith("\n") else diffs[d] + "\n" for d in todo]
    joined = "".join(texts)
    lines = joined.split("\n")
    data = np.frombuffer(joined.encode("utf-8", "surrogatepass"), np.uint8)
    ends = np.flatnonzero(data == 10)
    starts = np.concatenate([[0], ends[:-1] + 1])
    counts = np.fromiter(map(str.count, texts, itertools.repeat("\n")), np.int64, len(texts))
    line_diff = np.repeat(np.asarray(todo, np.int64), counts)
    diff_end = np.cumsum(counts)
    first = data[starts]
    second = data[np.minimum(starts + 1, data.shape[0] - 1)]
    old = (first == 32) | (first == 45) | (first == 10)  # context (an empty line is one), deleted
    new = (first == 32) | (first == 43) | (first == 10)  # context, added
    odd = ~(old | new | (first == 92))  # not a hunk body line
    at = np.flatnonzero((first == 64) & (second == 64))

    bad: set[int] = set()
    fields = []  # (start, count, start, count) strings of each header, the counts "1" when left out
    keep = np.ones(at.shape[0], bool)
    for k, h in enumerate(at.tolist()):
        m = _HUNK_HEADER.match(lines[h])
        if m is None:
            bad.add(int(line_diff[h]))
            keep[k] = False
            continue
        fields.append(m.groups("1"))
    at = at[keep]
    header = np.array(fields, np.int64).reshape(-1, 4)

    both = np.concatenate([[0], np.cumsum(old.astype(np.int64) + new)])
    olds = np.concatenate([[0], np.cumsum(old)])
    odds = np.concatenate([[0], np.cumsum(odd)])
    b0 = at + 1
    target = both[b0] + header[:, 1] + header[:, 3]
    e = np.maximum(np.searchsorted(both, target, side="left"), b0)
    hunk_diff = line_diff[at]
    limit = diff_end[np.searchsorted(np.asarray(todo), hunk_diff)]
    e = np.minimum(e, limit)
    ok = (both[e] == target) & (olds[e] - olds[b0] == header[:, 1]) & (odds[e] == odds[b0])
    prev_end = np.concatenate([[-1], e[:-1]])
    same_diff = np.concatenate([[False], hunk_diff[1:] == hunk_diff[:-1]])
    opens = ~(same_diff & (prev_end == at))  # a hunk that does not follow the last one starts a file
    ok &= ~same_diff | (prev_end <= at)
    bad.update(hunk_diff[~ok].tolist())

    file_paths: list[str] = []
    for k in np.flatnonzero(opens).tolist():
        h, d = int(at[k]), int(hunk_diff[k])
        path = _file_path(lines[h - 2], lines[h - 1]) if h >= 2 and line_diff[h - 2] == d and (
            not same_diff[k] or prev_end[k] <= h - 2) else None
        if path is None:
            bad.add(d)
        file_paths.append(path or "")
    with_hunks = set(hunk_diff.tolist())
    bad.update(d for d in todo if d not in with_hunks)
    good = ~np.isin(hunk_diff, np.fromiter(bad, np.int64, len(bad)))
    hunk_file = np.cumsum(opens) - 1

    body = ranges(b0[good], e[good])
    hunk_of = np.repeat(np.flatnonzero(good), e[good] - b0[good])
    marker = first[body] != 92  # "\ No newline at end of file" is not a line of the file
    body, hunk_of = body[marker], hunk_of[marker]
    kind = np.where(first[body] == 43, ADDED, np.where(first[body] == 45, DELETED, 0)).astype(np.int8)
    news = np.concatenate([[0], np.cumsum(new)])
    number = np.where(kind == DELETED, header[hunk_of, 0] + olds[body] - olds[b0[hunk_of]],
                      header[hunk_of, 2] + news[body] - news[b0[hunk_of]])
    used = np.flatnonzero(np.bincount(hunk_file[good], minlength=len(file_paths)))
    remap = np.full(len(file_paths), -1, np.int64)
    remap[used] = np.arange(used.shape[0])
    return _Body(line_diff[body], remap[hunk_file[hunk_of]], hunk_of, kind, number, body, lines, data,
                 starts[body] + 1, ends[body], [file_paths[i] for i in used.tolist()], "\r" in joined), sorted(bad)


def _unquoted(path: str) -> str:
    """A path as git writes a name with non-ASCII bytes or quotes in it ("a/\\303\\274.py", C
    escapes of its UTF-8 bytes, between quotes) turned back into the name ("a/ü.py")."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    try:
        return codecs.escape_decode(path[1:-1].encode())[0].decode("utf-8", "surrogateescape")
    except (ValueError, UnicodeError):
        return path


@functools.lru_cache(maxsize=4096)
def _file_path(source: str, target: str) -> Optional[str]:
    """The file path of a `--- source` / `+++ target` header pair, as unidiff's PatchedFile.path."""
    if not (source.startswith("--- ") and target.startswith("+++ ")):
        return None
    src, tgt = (_unquoted(side[4:].split("\t", 1)[0]) for side in (source, target))
    if not src or not tgt:
        return None
    path = src
    if src == "/dev/null" or (tgt != "/dev/null" and src[2:] != tgt[2:]):
        path = tgt
    return path[2:] if path.startswith(("a/", "b/")) else path


def _parse_with_unidiff(d: int, diff: str) -> _Body:
    """One diff's hunk bodies through unidiff (what the scan did not recognise)."""
    wrong = next((line for line in diff.splitlines() if line.startswith("@@") and not _HUNK_HEADER.match(line)), None)
    if wrong is not None:  # unidiff skips it and the hunk's lines with it, or misreads its numbers
        raise DiffError(d, f"hunk header {wrong[:80]!r} is not '@@ -start,count +start,count @@': pass the "
                           "unified diff the step made (git diff, difflib.unified_diff)")
    try:
        patch = unidiff.PatchSet(diff)
    except unidiff.UnidiffParseError as err:
        raise DiffError(d, f"diff is not a valid unified diff: {err}") from None
    if len(patch) == 0:
        raise DiffError(d, (
            "diff is not empty but has no file header ('diff --git', '---' / '+++'): pass the "
            "unified diff the step made, or '' when it changed nothing"))
    file, hunk, kind, number, source, paths = [], [], [], [], [], []
    n_hunks = 0
    for pf in patch:
        if pf.is_binary_file or not len(pf):
            continue
        for h in pf:
            for ln in h:
                if ln.line_type == "\\":
                    continue
                t = ADDED if ln.line_type == "+" else DELETED if ln.line_type == "-" else 0
                file.append(len(paths))
                hunk.append(n_hunks)
                kind.append(t)
                number.append(ln.source_line_no if t == DELETED else ln.target_line_no)
                source.append(ln.line_type + ln.value.rstrip("\r\n"))
            n_hunks += 1
        paths.append(pf.path)
    data, start, end = _encode_rows([line[1:] for line in source])
    return _Body(np.full(len(kind), d, np.int64), np.asarray(file, np.int64), np.asarray(hunk, np.int64),
                 np.asarray(kind, np.int8), np.asarray(number, np.int64), np.arange(len(source)), source,
                 data, start, end, paths)


def _merge(parts: list[_Body]) -> _Body:
    """The parts as one _Body in diff order, with file and hunk ids numbered along it."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        empty = np.zeros(0, np.int64)
        return _Body(empty, empty, empty, np.zeros(0, np.int8), empty, empty, [], np.zeros(0, np.uint8), empty, empty,
                     [])
    file_base = segment_starts(np.asarray([len(p.file_paths) for p in parts], np.int64))
    hunk_base = segment_starts(np.asarray([int(p.hunk.max(initial=-1)) + 1 for p in parts], np.int64))
    order = np.argsort(np.concatenate([p.diff for p in parts]), kind="stable")
    file = np.concatenate([p.file + b for p, b in zip(parts, file_base.tolist())])[order]
    hunk = np.concatenate([p.hunk + b for p, b in zip(parts, hunk_base.tolist())])[order]
    source_base = segment_starts(np.asarray([len(p.source) for p in parts], np.int64))
    at = np.concatenate([p.at + b for p, b in zip(parts, source_base.tolist())])[order]
    paths = list(itertools.chain.from_iterable(p.file_paths for p in parts))
    file_rank, file_ids = _first_appearance(file)

    def cat(name):
        return np.concatenate([getattr(p, name) for p in parts])[order]

    data_base = segment_starts(np.asarray([p.data.shape[0] for p in parts], np.int64))
    start = np.concatenate([p.start + b for p, b in zip(parts, data_base.tolist())])[order]
    end = np.concatenate([p.end + b for p, b in zip(parts, data_base.tolist())])[order]
    return _Body(cat("diff"), file_rank, _first_appearance(hunk)[0], cat("type"), cat("number"), at,
                 list(itertools.chain.from_iterable(p.source for p in parts)), np.concatenate([p.data for p in parts]),
                 start, end, [paths[i] for i in file_ids.tolist()], any(p.carriage_returns for p in parts))


def _first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids renumbered 0.. in order of first appearance, and the original id of each new number."""
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    by_first = np.argsort(first)
    rank = np.empty(uniq.shape[0], np.int64)
    rank[by_first] = np.arange(uniq.shape[0])
    return rank[inverse.reshape(-1)], uniq[by_first]


def _units(body: _Body, n_diffs: int, want: tuple[bool, ...], tree_sitter: bool, min_syntax_lines: int) -> DiffBatch:
    """Units of every diff from its hunk bodies (vectorized, apart from one parse per distinct hunk
    side that a grammar reads)."""
    changed = np.flatnonzero(body.type != 0)
    n_lines = changed.shape[0]
    cid = np.full(body.type.shape[0], -1, np.int64)
    cid[changed] = np.arange(n_lines)
    kind = body.type[changed]
    file = body.file[changed]
    hunk = body.hunk[changed]
    deleted = (kind == DELETED).astype(np.int64)
    side = hunk * 2 + deleted  # a hunk's added lines, then its deleted lines
    pieces: list = []  # per level: (level, file of each unit, unit of each member, member lines)
    if want[0]:
        pieces.append(_by_label(0, file * 2 + deleted, file))
    if want[1]:
        pieces.append(_by_label(1, side, file))
    if want[2]:
        pieces.append(_syntax_units(body, cid, side, tree_sitter, min_syntax_lines))
    if want[3]:
        run = np.ones(n_lines, bool)  # a run: consecutive body lines of one edit type
        run[1:] = (changed[1:] != changed[:-1] + 1) | (kind[1:] != kind[:-1]) | (hunk[1:] != hunk[:-1])
        pieces.append(_by_label(3, np.cumsum(run), file))
    return _assemble(pieces, body, changed, n_diffs, file)


def _by_label(level: int, label: np.ndarray, file: np.ndarray):
    """Units grouping the changed lines by a label that is non-decreasing within each file,
    so the units come out in line order."""
    order = lexsort_ints((label, file))  # stable: each unit's lines stay ascending
    new = np.ones(order.shape[0], bool)
    new[1:] = label[order][1:] != label[order][:-1]
    unit = np.cumsum(new) - 1
    return level, file[order][new], unit, order


def _syntax_units(body: _Body, cid: np.ndarray, side: np.ndarray, tree_sitter: bool, min_syntax_lines: int):
    """Block units of each hunk side with enough changed lines: its rows are the body lines from
    its first to its last changed line, without the other side's lines."""
    counts = np.bincount(side, minlength=int(side.max(initial=-1)) + 1)
    changed = np.flatnonzero(body.type != 0)
    sides = np.flatnonzero(counts >= min_syntax_lines)
    none = (2, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    if sides.shape[0] == 0:
        return none
    lo = np.full(counts.shape[0], -1, np.int64)
    hi = np.full(counts.shape[0], -1, np.int64)
    lo[side[::-1]] = changed[::-1]
    hi[side] = changed
    rows = ranges(lo[sides], hi[sides] + 1)
    row_side = np.repeat(np.arange(sides.shape[0]), hi[sides] - lo[sides] + 1)
    other = np.where(sides[row_side] % 2 == 0, DELETED, ADDED)
    keep = body.type[rows] != other
    rows, row_side = rows[keep], row_side[keep]
    n_rows = np.bincount(row_side, minlength=sides.shape[0])
    base = segment_starts(n_rows)
    # sides a grammar reads: parsed (`credit.syntax`); the rest, and sides that do not parse, by
    # indentation in one vectorized pass
    by_indent = np.ones(sides.shape[0], bool)
    parts = []
    if tree_sitter:
        grammars = [grammar_for(p) for p in body.file_paths]
        side_file = body.file[lo[sides]]
        for grammar in dict.fromkeys(g for g in grammars if g is not None):
            read = np.fromiter((g is grammar for g in grammars), bool, len(grammars))
            chosen = np.flatnonzero(read[side_file])
            parts.append(_parsed_side_spans(grammar, body, rows, base, n_rows, chosen))
            by_indent[chosen[parts[-1][3]]] = False
    lo_arr, hi_arr, span_side = (_cat([p[k] for p in parts]) for k in range(3))
    if by_indent.any():
        at = np.flatnonzero(by_indent[row_side])
        first, last = _indent_blocks(*body.shapes(rows[at]), row_side[at])
        lo_arr = np.concatenate([lo_arr, at[first]])
        hi_arr = np.concatenate([hi_arr, at[last] + 1])
        span_side = np.concatenate([span_side, row_side[at[first]]])
    if lo_arr.shape[0] == 0:
        return none
    order = lexsort_ints((hi_arr, lo_arr, span_side))
    lo_arr, hi_arr, span_side = lo_arr[order], hi_arr[order], span_side[order]
    members = cid[rows[ranges(lo_arr, hi_arr)]]
    owner = np.repeat(np.arange(lo_arr.shape[0]), hi_arr - lo_arr)
    keep = members >= 0
    return 2, body.file[lo[sides[span_side]]], owner[keep], members[keep]


def _parsed_side_spans(grammar: Grammar, body: _Body, rows: np.ndarray, base: np.ndarray, n_rows: np.ndarray,
                       chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Block spans of the `chosen` sides, each distinct side text read once: by the grammar's reader
    where it answers, else parsed (`credit.syntax`).

    Returns:
      (lo, hi) row spans (hi exclusive) and their side, and per chosen side whether it parsed
      (False: the grammar found an error, indentation blocks apply).
    """
    sizes = n_rows[chosen]
    uid = sequence_ids(body.source, body.at[rows[ranges(base[chosen], base[chosen] + sizes)]], sizes)
    _, first_of = np.unique(uid, return_index=True)
    rep = chosen[first_of]  # one side per distinct text, in id order
    n_rep = rep.shape[0]
    rep_base = segment_starts(n_rows[rep])
    owner, rel_lo, rel_hi = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    answered = np.zeros(n_rep, bool)
    if grammar.reader is not None:
        rep_rows = rows[ranges(base[rep], base[rep] + n_rows[rep])]
        answered, first, last = grammar.reader(body.data, body.start[rep_rows], body.end[rep_rows],
                                               np.repeat(np.arange(n_rep), n_rows[rep]), n_rep)
        span_rep = np.searchsorted(rep_base, first, side="right") - 1
        owner.append(span_rep)
        rel_lo.append(first - rep_base[span_rep])
        rel_hi.append(last + 1 - rep_base[span_rep])
    left = np.flatnonzero(~answered)
    texts = body.texts(rows[ranges(base[rep[left]], base[rep[left]] + n_rows[rep[left]])])
    bounds = segment_starts(n_rows[rep[left]]).tolist() + [len(texts)]
    sides = [tuple(texts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    # texts equal but for their +/- markers (a line added in one side, context in another) parse once
    spans_of = dict(zip(dict.fromkeys(sides), block_spans(grammar, list(dict.fromkeys(sides)))))
    found = [spans_of[side] for side in sides]
    parsed = np.ones(n_rep, bool)
    parsed[left] = np.fromiter((spans is not None for spans in found), bool, len(found))
    count = np.fromiter((len(spans or ()) for spans in found), np.int64, len(found))
    owner.append(np.repeat(left, count))
    rel_lo.append(np.fromiter((f for spans in found if spans for f, _ in spans), np.int64, int(count.sum())))
    rel_hi.append(np.fromiter((last + 1 for spans in found if spans for _, last in spans), np.int64, int(count.sum())))
    owner, rel_lo, rel_hi = np.concatenate(owner), np.concatenate(rel_lo), np.concatenate(rel_hi)
    order = lexsort_ints((owner,))
    owner, rel_lo, rel_hi = owner[order], rel_lo[order], rel_hi[order]
    ptr = np.searchsorted(owner, np.arange(n_rep + 1))
    # every side gets the spans of its text, moved to its rows
    take = ranges(ptr[uid], ptr[uid + 1])
    side_of = np.repeat(chosen, ptr[uid + 1] - ptr[uid])
    return base[side_of] + rel_lo[take], base[side_of] + rel_hi[take], side_of, parsed[uid]


def sequence_ids(texts: list[str], at: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The sequences of texts texts[at[0:sizes[0]]], texts[at[sizes[0]:...]], ... numbered by first
    appearance, equal sequences alike (a dict keyed by the tuples of strs)."""
    ptr = csr_pointers(sizes)
    marked = list(map(texts.__getitem__, at.tolist()))
    keys: dict[tuple[str, ...], int] = {}
    bounds = ptr.tolist()
    return np.fromiter((keys.setdefault(tuple(marked[b:e]), len(keys)) for b, e in zip(bounds[:-1], bounds[1:])),
                       np.int64, sizes.shape[0])


def indent_spans(rows: Sequence[str], group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indentation blocks (`_indent_spans`) of many groups of rows in a few vectorized passes.

    A non-blank row r of indent d opens a block that ends before q, the next non-blank row of its
    group with indent <= d; it takes q too when q has indent d and starts with a closing bracket
    (q then opens no block of its own); otherwise it ends at the last non-blank row before q (or
    of the group). Blocks of one row are dropped.

    Args:
      rows: (n,) row texts.
      group: (n,) group of each row, non-decreasing.

    Returns:
      (first, last) inclusive row indices of the blocks, sorted by group then first row.
    """
    indent, closer = _row_shapes(rows)
    return _indent_blocks(indent, closer, np.asarray(group, np.int64))


def _indent_blocks(indent: np.ndarray, closer: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`indent_spans` given each row's indent (-1: blank) and closer flag."""
    solid = np.flatnonzero(indent >= 0)
    if solid.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    d, g = indent[solid], group[solid]
    closer = closer[solid]
    n = solid.shape[0]
    nxt = np.full(n, n, np.int64)  # next solid row of the group with indent <= own
    position = np.arange(n)
    for level in np.unique(d).tolist():
        cand = np.where(d <= level, position, n)
        after = np.append(np.minimum.accumulate(cand[::-1])[::-1][1:], n)
        mine = d == level
        nxt[mine] = after[mine]
    group_end = np.searchsorted(g, g, side="right")  # one past the group's last solid row
    nxt = np.minimum(nxt, group_end)
    has_next = nxt < group_end
    safe = np.minimum(nxt, n - 1)
    link = has_next & (d[safe] == d) & closer[safe]  # r could take q; q is taken unless r was
    taker = np.full(n, -1, np.int64)
    taker[nxt[link]] = np.flatnonzero(link)
    consumed = np.zeros(n, bool)
    while True:  # along a run of closers at one indent, taken and not taken alternate
        now = (taker >= 0) & ~consumed[np.maximum(taker, 0)]
        if (now == consumed).all():
            break
        consumed = now
    takes = link & ~consumed
    last = np.where(takes, nxt, nxt - 1)
    keep = (last > position) & ~consumed
    return solid[keep], solid[last[keep]]


def _row_shapes(rows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(indent, -1 for a blank row; starts with a closing bracket or `end`) of each row."""
    return _shapes(*_encode_rows(rows))


def _encode_rows(rows: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows as UTF-8 bytes joined by line breaks, and each row's (start, end)."""
    data = np.frombuffer(("\n".join(rows) + "\n").encode("utf-8", "surrogatepass"), np.uint8)
    ends = np.flatnonzero(data == 10)
    return data, np.concatenate([[0], ends[:-1] + 1]).astype(np.int64), ends


def _shapes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_row_shapes` of the rows data[starts[i]:ends[i]] of a byte buffer."""
    first = skip_spaces(data, starts, ends)
    blank = first >= ends
    pad = np.append(data, np.zeros(3, np.uint8))
    head = pad[first]
    closer = (head == 125) | (head == 41) | (head == 93) | (
        (head == 101) & (pad[first + 1] == 110) & (pad[first + 2] == 100))  # } ) ] end
    return np.where(blank, -1, first - starts), closer & ~blank


def _assemble(pieces: list, body: _Body, changed: np.ndarray, n_diffs: int, file: np.ndarray) -> DiffBatch:
    """Order the units as split_diff always has (per file: file, hunk, syntax, block units, each
    level in line order), drop empty ones and repeated line sets (the first, coarsest, stays).

    A unit is always every changed line of one edit type from its first to its last line inside
    one hunk side, or inside one file for a file unit, so (first, last) tells line sets apart.
    """
    n_units = [len(unit_file) for _, unit_file, _, _ in pieces]
    level = np.repeat(np.asarray([lv for lv, _, _, _ in pieces], np.int64), n_units)
    unit_file = _cat([f for _, f, _, _ in pieces])
    sizes = _cat([np.bincount(u, minlength=n) for (_, _, u, _), n in zip(pieces, n_units)])
    line = _cat([m for _, _, _, m in pieces])
    ptr = csr_pointers(sizes)
    order = lexsort_ints((level, unit_file))
    order = order[sizes[order] > 0]
    span = line[ptr[order]] * max(changed.shape[0], 1) + line[ptr[order + 1] - 1]
    _, first = np.unique(span, return_index=True)
    order = order[np.sort(first)]
    unit_ptr = csr_pointers(sizes[order])
    line_diff = body.diff[changed]
    file_diff = np.zeros(len(body.file_paths), np.int64)
    file_diff[body.file] = body.diff
    names = tuple(dict.fromkeys(body.file_paths))
    name_id = {p: i for i, p in enumerate(names)}
    path_of_file = np.fromiter((name_id[p] for p in body.file_paths), np.int64, len(body.file_paths))
    return DiffBatch(
        line_ptr=np.searchsorted(line_diff, np.arange(n_diffs + 1), side="left"), path_names=names,
        path_ids=path_of_file[file], kinds=body.type[changed], line_numbers=body.number[changed],
        source=body.source, line_source=body.at[changed], carriage_returns=body.carriage_returns,
        diff_units=np.searchsorted(file_diff[unit_file[order]], np.arange(n_diffs + 1), side="left"),
        unit_levels=level[order].astype(np.int8), unit_ptr=unit_ptr,
        unit_lines=line[ranges(ptr[order], ptr[order + 1])])


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)


_EMPTY = SubDiffs(
    paths=(), kinds=np.zeros(0, np.int8), line_numbers=np.zeros(0, np.int64), texts=(),
    unit_levels=np.zeros(0, np.int8), unit_ptr=np.zeros(1, np.int64), unit_lines=np.zeros(0, np.int64),
)
