r"""Project sub-diff advantages onto the response tokens that wrote them.

An anchor occurrence covers character spans of its step's action: for added lines, the spans the
environment reported (provenance); otherwise the places where its lines appear in the action text,
as written or JSON-string-escaped (tool calls carry code inside JSON strings).

Lines are searched in diff order, a block at a time. A block is a run of changed lines that follow
each other in the file (one kind, line numbers n, n + 1, ...). Its text, the lines joined by line
breaks (without the blank lines at its ends and the trailing whitespace of its last line), is looked
up as written, then JSON-escaped (breaks read `\n`; with and without ASCII escapes), first after the
previous match, then from the start. A block found whole places each of its lines, even a line that
alone also appears earlier (quoted in the thought, say); a block not found is searched line by line
the same way (trailing whitespace dropped, indentation kept). Blank lines get no span.

Lines of one occurrence that are neighbours in the action, separated only by whitespace or JSON
escapes of it (`\n`, `\t`, `\r`), merge into one span, so the line breaks and indentation between
them are covered too. Each token then gets the value of the covering occurrence with the highest
priority (DiDPO: groupability score):

  A_{i,t,k} = A^E_i + \lambda A^D(o*),  o* = argmax_{o covers token k} GS(o)

and tokens no occurrence covers keep A^E_i alone. A token (s, e) covers an occurrence span [a, b)
when s < b and e > a; zero-width tokens cover nothing; of equal priorities the later span wins.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from typing import Callable, Optional, Sequence

import numpy as np

from credit._util import ranges, segment_starts

_JSON = json.JSONEncoder(ensure_ascii=False).encode
_JSON_ASCII = json.JSONEncoder().encode
_GAP = re.compile(r"(?:\s|\\[nrt])*")
# what each character can be inside a gap that _GAP accepts; every non-ASCII character is _WIDE
_OTHER, _SPACE, _BACKSLASH, _LETTER, _WIDE = range(5)
_GAP_CLASS = np.array([_SPACE if re.fullmatch(r"\s", chr(c)) else _BACKSLASH if chr(c) == "\\"
                       else _LETTER if chr(c) in "nrt" else _OTHER for c in range(128)] + [_WIDE], np.int8)
_MAX_GAP = 64  # longer gaps between lines are checked with _GAP itself (few, and mostly not whitespace)

Form = tuple[str, Optional[Callable[[str], str]]]
_ESCAPES = (None, _JSON, _JSON_ASCII)


def locate_lines(action: str, lines: Sequence[str]) -> np.ndarray:
    """Character spans of `lines` in `action`: as one block, else one by one (see the module docstring).

    Args:
      action: the response text.
      lines: (n,) line texts without line breaks, in diff order.

    Returns:
      (n, 2) int64 (start, end) spans, (-1, -1) for blank lines and lines not found.
    """
    return locate_blocks([action], [lines], np.zeros(len(lines), bool))


def locate_blocks(
    actions: Sequence[str],
    lines: Sequence[Sequence[str]],
    new_block: np.ndarray,
    searched: Optional[np.ndarray] = None,
) -> np.ndarray:
    """`locate_lines` for the changed lines of many steps, cut into blocks.

    A block found in a form that keeps each line's length (as written, or escaped with nothing to
    escape but the line breaks) places line j of the block at

      start_j = pos + sum_{i < j} (len(line_i) + len(break)),  end_j = start_j + len(line_j.rstrip())

    with the lengths taken in the found form otherwise.

    Args:
      actions: (S,) the steps' response texts.
      lines: (S,) per step, its line texts (without line breaks) in diff order; n lines in all.
      new_block: (n,) True where a line starts a block (a step's first line always does).
      searched: (n,) the lines to search (default: all); the others are left out of the blocks.

    Returns:
      (n, 2) int64 spans, (-1, -1) for blank, unsearched and unfound lines.
    """
    texts = list(chain.from_iterable(lines))
    n = len(texts)
    out = np.full((n, 2), -1, np.int64)
    if n == 0:
        return out
    step = np.repeat(np.arange(len(lines)), np.fromiter(map(len, lines), np.int64, len(lines)))
    size = np.fromiter(map(len, texts), np.int64, n)
    kept = np.fromiter(map(len, map(str.rstrip, texts)), np.int64, n)
    lo, hi = _blocks(step, new_block, np.ones(n, bool) if searched is None else searched, kept > 0)
    joined = "\n".join(texts)
    at, kept_list = segment_starts(size + 1).tolist(), kept.tolist()
    found: list[tuple[int, int, int, int, bool]] = []  # blocks found whole: lo, hi, position, escape, recount
    form_size = size.copy()  # each line's length in the form its block was found in
    forms_of: dict[str, list[Form]] = {}
    cursor, current = 0, -1
    for a, e, s in zip(lo.tolist(), hi.tolist(), step[lo].tolist()):
        if s != current:
            cursor, current = 0, s
        action = actions[s]
        text = joined[at[a]:at[e - 1] + kept_list[e - 1]]
        forms = _forms(text)
        pos, k = _search(action, forms, cursor)
        if pos >= 0:
            form, escape = forms[k]
            cursor = pos + len(form)
            recount = escape is not None and len(form) != len(text) + e - a - 1  # more escaped than breaks
            if recount:
                form_size[a:e] = _escaped_sizes(texts[a:e], text, form, escape)
            found.append((a, e, pos, _ESCAPES.index(escape), recount))
            continue
        for j in range(a, e) if e - a > 1 else ():
            if kept_list[j]:
                line = joined[at[j]:at[j] + kept_list[j]]
                forms = forms_of.get(line) or forms_of.setdefault(line, _forms(line))
                pos, k = _search(action, forms, cursor)
                if pos >= 0:
                    cursor = pos + len(forms[k][0])
                    out[j] = pos, cursor
    _place_blocks(out, found, texts, size, kept, form_size)
    return out


def _blocks(step: np.ndarray, new_block: np.ndarray, searched: np.ndarray,
            nonblank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, end) line of each block, blank lines at its ends left out; blocks of blank lines dropped."""
    start = np.asarray(new_block, bool).copy()
    start[0] = True
    start[1:] |= (step[1:] != step[:-1]) | (searched[1:] != searched[:-1])
    block = np.cumsum(start)
    line = np.flatnonzero(searched & nonblank)
    first = np.ones(line.shape[0], bool)
    first[1:] = block[line[1:]] != block[line[:-1]]
    last = np.ones(line.shape[0], bool)
    last[:-1] = first[1:]
    return line[first], line[last] + 1


def _forms(text: str) -> list[Form]:
    """The text as written and as it reads inside a JSON string (with and without ASCII escapes),
    each with the escape function that makes it (None: as written)."""
    forms: list[Form] = [(text, None)]
    escaped = _JSON(text)[1:-1]
    if escaped != text:
        forms.append((escaped, _JSON))
    if not text.isascii():
        forms.append((_JSON_ASCII(text)[1:-1], _JSON_ASCII))
    return forms


def _search(action: str, forms: list[Form], cursor: int) -> tuple[int, int]:
    """(position, form index) of the first form found in action[cursor:], else in action; (-1, -1)."""
    for start in (cursor, 0) if cursor else (0,):
        for k, (form, _) in enumerate(forms):
            pos = action.find(form, start)
            if pos >= 0:
                return pos, k
    return -1, -1


def _escaped_sizes(lines: list[str], text: str, form: str, escape: Callable[[str], str]) -> list[int]:
    """Length of each line of a block inside its escaped form (the last line without trailing whitespace)."""
    if "\\" not in text:  # then the form's only backslash-n pairs are the escaped line breaks
        return list(map(len, form.split("\\n")))
    return [len(escape(line)) - 2 for line in lines[:-1]] + [len(escape(lines[-1].rstrip())) - 2]


def _place_blocks(out: np.ndarray, found: list[tuple[int, int, int, int, bool]], texts: list[str],
                  size: np.ndarray, kept: np.ndarray, form_size: np.ndarray) -> None:
    """Write the spans of the lines of the blocks found whole (formula in `locate_blocks`).

    found: (lo, hi, position, escape index in _ESCAPES, recount) per block; recount: some line
    changed length when escaped, so form_size holds its escaped length (the last line's without
    trailing whitespace).
    """
    if not found:
        return
    lo, hi, pos, escape, recount = np.asarray(found, np.int64).T
    line = ranges(lo, hi)
    block = np.repeat(np.arange(lo.shape[0]), hi - lo)
    stride = form_size[line] + np.where(escape[block] == 0, 1, 2)
    before = np.cumsum(stride) - stride
    start = pos[block] + before - before[segment_starts(hi - lo)][block]
    last = np.zeros(line.shape[0], bool)
    last[np.cumsum(hi - lo) - 1] = True
    counted = recount[block].astype(bool)
    end = start + np.where(counted, form_size[line], kept[line])
    trailing = np.flatnonzero(counted & ~last & (kept[line] < size[line]))
    for k in trailing.tolist():  # trailing whitespace of a line of an escaped block (tabs escape, say)
        end[k] = start[k] + len(_ESCAPES[escape[block[k]]](texts[line[k]].rstrip())) - 2
    keep = kept[line] > 0
    out[line[keep], 0] = start[keep]
    out[line[keep], 1] = end[keep]


def provenance_spans(
    provenance: Sequence[Optional[Sequence[tuple]]],
    paths: Sequence[Sequence[str]],
    line_numbers: np.ndarray,
) -> np.ndarray:
    """Spans of lines from the environment's provenance, (-1, -1) where none is given.

    Entry (path, line, start, end) of step s gives the span of the line of that path and number in
    step s; of repeated entries the last counts. One sorted key (step, path id, line) for the batch.

    Args:
      provenance: (S,) per step, its (path, line, start, end) tuples (None or empty: none).
      paths: (S,) per step, the file path of each of its lines; n lines in all.
      line_numbers: (n,) each line's number in the new file.

    Returns:
      (n, 2) int64 spans.
    """
    out = np.full((line_numbers.shape[0], 2), -1, np.int64)
    given = [s for s, entries in enumerate(provenance) if entries]
    if not given or not line_numbers.shape[0]:
        return out
    entry_path, entry_line, entry_start, entry_end = zip(*chain.from_iterable(provenance[s] for s in given))
    entry_step = np.repeat(given, [len(provenance[s]) for s in given])
    n_lines = np.fromiter(map(len, paths), np.int64, len(paths))
    line_step = np.repeat(np.arange(len(paths)), n_lines)
    asked = np.flatnonzero(np.isin(line_step, given))
    asked_paths = list(chain.from_iterable(paths[s] for s in given))
    ids = {p: k for k, p in enumerate(dict.fromkeys(chain(entry_path, asked_paths)))}
    entry_line = np.asarray(entry_line, np.int64)
    numbers = line_numbers[asked]
    dims = (len(provenance), len(ids), int(max(entry_line.max(), numbers.max(initial=0))) + 1)
    key = np.ravel_multi_index((entry_step, _ids(ids, entry_path), entry_line), dims)
    query = np.ravel_multi_index((line_step[asked], _ids(ids, asked_paths), numbers), dims, mode="clip")
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], query, side="right") - 1
    hit = np.flatnonzero((at >= 0) & (key[order][np.maximum(at, 0)] == query) & (numbers >= 0))
    out[asked[hit], 0] = np.asarray(entry_start, np.int64)[order[at[hit]]]
    out[asked[hit], 1] = np.asarray(entry_end, np.int64)[order[at[hit]]]
    return out


def _ids(ids: dict[str, int], paths: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(ids.__getitem__, paths), np.int64, len(paths))


def merge_spans(action: str, spans: np.ndarray) -> np.ndarray:
    """Merge the spans of one occurrence's lines (see the module docstring).

    Args:
      action: the response text the spans index.
      spans: (m, 2) spans; rows with start < 0 (not located) are ignored.

    Returns:
      (k, 2) merged spans sorted by start.
    """
    spans = np.asarray(spans, np.int64).reshape(-1, 2)
    m = spans.shape[0]
    merged, _, _ = occurrence_spans([action], spans, np.zeros(m, np.int64), np.arange(m), np.zeros(m, np.int64))
    return merged


def occurrence_spans(
    actions: Sequence[str],
    line_spans: np.ndarray,
    line_step: np.ndarray,
    member_line: np.ndarray,
    member_occurrence: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merged spans of many occurrences in many steps, with one vectorized pass.

    Args:
      actions: (S,) the steps' response texts.
      line_spans: (L, 2) spans of the changed lines of all steps (start < 0: not located).
      line_step: (L,) step of each line.
      member_line: (n,) line (row of line_spans) of each (occurrence, line) membership.
      member_occurrence: (n,) occurrence id of each membership (an occurrence lies in one step).

    Returns:
      (spans (k, 2) in each step's own coordinates, occurrence of each span (k,), step of each span (k,)).
    """
    located = np.flatnonzero(line_spans[:, 0] >= 0)
    ordered = located[np.lexsort((line_spans[located, 0], line_step[located]))]
    rank = np.full(line_spans.shape[0], -1, np.int64)
    rank[ordered] = np.arange(ordered.shape[0])
    keep = rank[member_line] >= 0
    occ, r = member_occurrence[keep], rank[member_line[keep]]
    by = np.lexsort((r, occ))
    occ, r = occ[by], r[by]
    follows = (occ[1:] == occ[:-1]) & (r[1:] == r[:-1] + 1)
    pair = np.flatnonzero(follows)
    before, after = ordered[r[pair]], ordered[r[pair + 1]]
    follows[pair] = _joins(actions, line_step[after], line_spans[before, 1], line_spans[after, 0])
    first = np.flatnonzero(np.concatenate([[True], ~follows])) if r.shape[0] else np.zeros(0, np.int64)
    ends = np.maximum.reduceat(line_spans[ordered[r], 1], first) if first.shape[0] else np.zeros(0, np.int64)
    spans = np.stack([line_spans[ordered[r[first]], 0], ends], axis=1).reshape(-1, 2)
    return spans, occ[first], line_step[ordered[r[first]]]


def _joins(actions: Sequence[str], step: np.ndarray, end: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Whether a line ending at `end` and the next starting at `start` in actions[step] join: they
    touch or overlap, or the text between them fully matches _GAP.

    Gaps up to _MAX_GAP characters are read all at once as classes of characters: _GAP matches
    exactly when there is no _OTHER, each backslash is followed by an n/r/t letter and each such
    letter follows a backslash (a backslash never ends an escape, so the pairs cannot overlap);
    gaps with non-ASCII characters and no such fault go to _GAP itself.
    """
    out = start <= end
    gap = np.flatnonzero(~out)
    width = (start - end)[gap]
    slow = gap[width > _MAX_GAP].tolist()
    short, width = gap[width <= _MAX_GAP], width[width <= _MAX_GAP]
    if short.shape[0]:
        base = segment_starts(np.fromiter(map(len, actions), np.int64, len(actions)))[step[short]]
        chars = _code_points("".join(actions))
        at = ranges(base + end[short], base + start[short])
        kind = _GAP_CLASS[np.minimum(chars[at], 128)]
        first = np.zeros(kind.shape[0] + 1, bool)
        first[segment_starts(width)] = True
        first[-1] = True  # the position after the last gap: a backslash before it has no letter
        prev_kind = np.concatenate([[_OTHER], kind[:-1]])
        next_kind = np.concatenate([kind[1:], [_OTHER]])
        fault = ((kind == _OTHER) | ((kind == _BACKSLASH) & (first[1:] | (next_kind != _LETTER)))
                 | ((kind == _LETTER) & (first[:-1] | (prev_kind != _BACKSLASH))))
        owner = np.repeat(np.arange(short.shape[0]), width)
        faults = np.bincount(owner, fault, short.shape[0])
        out[short] = faults == 0
        wide = np.bincount(owner, kind == _WIDE, short.shape[0])
        slow += short[(faults == 0) & (wide > 0)].tolist()
    for k in slow:
        out[k] = _GAP.fullmatch(actions[step[k]], end[k], start[k]) is not None
    return out


def _code_points(text: str) -> np.ndarray:
    """The text's characters as integer code points."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)


def project_tokens(
    offsets: np.ndarray,
    spans: np.ndarray,
    values: np.ndarray,
    priority: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-token value of the highest-priority span that overlaps each token (one step).

    Args:
      offsets: (T, 2) token character offsets, non-empty tokens in order.
      spans: (m, 2) character spans.
      values: (m,) value of each span.
      priority: (m,) priority of each span; ties go to the later span.

    Returns:
      (values (T,) float64 with 0 where uncovered, covered (T,) bool).
    """
    spans = np.asarray(spans, np.int64).reshape(-1, 2)
    return project_steps([np.asarray(offsets, np.int64).reshape(-1, 2)], spans, np.zeros(spans.shape[0], np.int64),
                         np.asarray(values, np.float64), np.asarray(priority, np.float64))


def project_steps(
    offsets: Sequence[np.ndarray],
    spans: np.ndarray,
    span_step: np.ndarray,
    values: np.ndarray,
    priority: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """`project_tokens` for many steps at once, with work per span and one pass over the tokens.

    The steps share one character axis, step s at [s W, (s + 1) W) with W = 1 + the largest token
    or span end, so one sorted array of token bounds serves every step: span [a, b) covers the
    non-empty tokens first..last-1 with first = #{tokens ending <= a}, last = #{tokens starting < b}.
    The span bounds cut the tokens into intervals that every span covers whole or not at all, so the
    winner is found per interval and the values are repeated over each interval's tokens.

    Args:
      offsets: (S,) arrays (T_s, 2) of token offsets.
      spans: (m, 2) character spans, each in its own step's coordinates.
      span_step: (m,) step of each span.
      values, priority: (m,) as in `project_tokens`.

    Returns:
      (values, covered) of all tokens, (sum_s T_s,) each, the steps' tokens one after another.
    """
    m = spans.shape[0]
    if values.shape != (m,) or priority.shape != (m,) or span_step.shape != (m,):
        raise ValueError(f"span_step, values and priority must have shape ({m},)")
    n_tokens = np.fromiter(map(len, offsets), np.int64, len(offsets))
    tokens = np.concatenate(offsets).reshape(-1, 2) if offsets else np.zeros((0, 2), np.int64)
    width = max(int(tokens[:, 1].max(initial=0)), int(spans[:, 1].max(initial=0))) + 1
    shift = np.repeat(np.arange(len(offsets)) * width, n_tokens)
    real = None if (tokens[:, 1] > tokens[:, 0]).all() else np.flatnonzero(tokens[:, 1] > tokens[:, 0])
    if real is not None:
        tokens, shift = tokens[real], shift[real]
    first = np.searchsorted(tokens[:, 1] + shift, spans[:, 0] + span_step * width, side="right")
    last = np.maximum(np.searchsorted(tokens[:, 0] + shift, spans[:, 1] + span_step * width, side="left"), first)
    bounds = np.unique(np.concatenate([first, last, [0, tokens.shape[0]]]))
    lo, hi = np.searchsorted(bounds, first), np.searchsorted(bounds, last)
    by_rank = np.lexsort((np.arange(m), priority))  # lowest priority first; of equal ones the later span last
    rank = np.empty(m, np.int64)
    rank[by_rank] = np.arange(m)
    best = np.full(bounds.shape[0] - 1, -1, np.int64)
    np.maximum.at(best, ranges(lo, hi), np.repeat(rank, hi - lo))
    size = np.diff(bounds)
    value = np.repeat(np.where(best >= 0, values[by_rank[best]], 0.0), size)
    covered = np.repeat(best >= 0, size)
    if real is None:
        return value, covered
    all_values, all_covered = np.zeros(n_tokens.sum()), np.zeros(n_tokens.sum(), bool)
    all_values[real], all_covered[real] = value, covered
    return all_values, all_covered
