r"""Project sub-diff advantages onto the response tokens that wrote them.

An anchor occurrence covers character spans of its step's action: for added lines, the spans the
environment reported (provenance); otherwise the places where its lines appear in the action text,
as written or JSON-string-escaped (tool calls carry code inside JSON strings). Lines of one
occurrence that are neighbours in the action, separated only by whitespace or JSON escapes, merge
into one span, so the line breaks and indentation between them are covered too. Each token then
gets the value of the covering occurrence with the highest priority (DiDPO: groupability score):

  A_{i,t,k} = A^E_i + \lambda A^D(o*),  o* = argmax_{o covers token k} GS(o)

and tokens no occurrence covers keep A^E_i alone. A token (s, e) covers an occurrence span [a, b)
when s < b and e > a; zero-width tokens cover nothing.
"""

from __future__ import annotations

import json
import re
from typing import Optional, Sequence

import numpy as np

from credit._util import ranges, segment_starts

_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_CONTROL = re.compile(r"[\x00-\x1f]")
_GAP = re.compile(r"(?:\s|\\[nrt])*")
_LINE_BREAKS = frozenset(["\n", "\\n", "\r\n", "\\r\\n"])


def locate_lines(action: str, lines: Sequence[str]) -> np.ndarray:
    """Character spans of `lines` in `action`, searched in order.

    Each line (trailing whitespace dropped, indentation kept) is looked up as written or
    JSON-escaped (with and without ASCII escapes), first after the previous match, then from the
    start. Blank lines and lines not found get (-1, -1).

    Args:
      action: the response text.
      lines: (n,) line texts, in diff order.

    Returns:
      (n, 2) int64 (start, end) spans.
    """
    out = np.full((len(lines), 2), -1, np.int64)
    cursor = 0
    for k, line in enumerate(lines):
        text = line.rstrip()
        if not text.strip():
            continue
        forms = _forms(text)
        pos, size = _find(action, forms, cursor)
        if pos < 0:
            pos, size = _find(action, forms, 0)
        if pos >= 0:
            out[k] = pos, pos + size
            cursor = pos + size
    return out


def _find(action: str, forms: list[str], start: int) -> tuple[int, int]:
    """(position, length) of the first of `forms` found in action[start:], or (-1, 0)."""
    for form in forms:
        pos = action.find(form, start)
        if pos >= 0:
            return pos, len(form)
    return -1, 0


def _forms(text: str) -> list[str]:
    """The line as written and as it reads inside a JSON string (with and without ASCII escapes)."""
    ascii_text = text.isascii()
    if ascii_text and not _NEEDS_ESCAPE.search(text):
        return [text]
    if _CONTROL.search(text):
        escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    else:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    forms = [text, escaped]
    if not ascii_text:
        forms.append(json.dumps(text)[1:-1])
    return forms


def _span_width(spans: np.ndarray, step: np.ndarray, n_steps: int) -> np.ndarray:
    """1 + the largest span end of each step."""
    order = np.lexsort((spans[:, 1], step))
    last = np.searchsorted(step[order], np.arange(n_steps), side="right") - 1
    has = (last >= 0) & (step[order][np.maximum(last, 0)] == np.arange(n_steps))
    return np.where(has, spans[order, 1][np.maximum(last, 0)] + 1, 0)


def provenance_spans(
    provenance: Optional[Sequence[tuple]],
    paths: Sequence[str],
    line_numbers: np.ndarray,
) -> np.ndarray:
    """Spans of added lines from the environment's provenance, (-1, -1) where none is given.

    Args:
      provenance: (path, line, start, end) tuples of one step.
      paths: (n,) file path of each added line.
      line_numbers: (n,) its line number in the new file.

    Returns:
      (n, 2) int64 spans.
    """
    out = np.full((len(paths), 2), -1, np.int64)
    if not provenance:
        return out
    index = {(p, ln): (s, e) for p, ln, s, e in provenance}
    for k, key in enumerate(zip(paths, line_numbers.tolist())):
        hit = index.get(key)
        if hit is not None:
            out[k] = hit
    return out


def merge_spans(action: str, spans: np.ndarray) -> np.ndarray:
    """Merge the spans of one occurrence's lines (see the module docstring).

    Args:
      action: the response text the spans index.
      spans: (m, 2) spans; rows with start < 0 (not located) are ignored.

    Returns:
      (k, 2) merged spans sorted by start.
    """
    spans = np.asarray(spans, np.int64).reshape(-1, 2)
    merged, _, _ = occurrence_spans([action], [spans], np.zeros(spans.shape[0], np.int64),
                                    np.arange(spans.shape[0]), np.zeros(spans.shape[0], np.int64))
    return merged


def occurrence_spans(
    actions: Sequence[str],
    line_spans: Sequence[np.ndarray],
    member_step: np.ndarray,
    member_line: np.ndarray,
    member_occurrence: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merged spans of many occurrences in many steps, with one vectorized pass.

    Args:
      actions: (S,) the steps' response texts.
      line_spans: (S,) arrays (L_s, 2) of the spans of each step's changed lines (-1 if not located).
      member_step: (n,) step of each (occurrence, line) membership.
      member_line: (n,) line index inside that step.
      member_occurrence: (n,) occurrence id of each membership (an occurrence lies in one step).

    Returns:
      (spans (k, 2) in each step's own coordinates, occurrence of each span (k,), step of each span (k,)).
    """
    n_lines = np.asarray([s.shape[0] for s in line_spans], np.int64)
    line_base = segment_starts(n_lines)
    flat = np.concatenate(line_spans).reshape(-1, 2) if line_spans else np.zeros((0, 2), np.int64)
    step_of = np.repeat(np.arange(len(line_spans)), n_lines)
    located = np.flatnonzero(flat[:, 0] >= 0)
    ordered = located[np.lexsort((flat[located, 0], step_of[located]))]
    rank = np.full(flat.shape[0], -1, np.int64)
    rank[ordered] = np.arange(ordered.shape[0])
    joins = _joins(actions, flat[ordered], step_of[ordered])

    line = line_base[member_step] + member_line
    keep = rank[line] >= 0
    occ, r = member_occurrence[keep], rank[line[keep]]
    by = np.lexsort((r, occ))
    occ, r = occ[by], r[by]
    new = np.ones(r.shape[0], bool)
    new[1:] = (occ[1:] != occ[:-1]) | (r[1:] != r[:-1] + 1) | ~joins[r[1:]]
    first = np.flatnonzero(new)
    ends = np.maximum.reduceat(flat[ordered[r], 1], first) if first.shape[0] else np.zeros(0, np.int64)
    spans = np.stack([flat[ordered[r[first]], 0], ends], axis=1).reshape(-1, 2)
    return spans, occ[first], step_of[ordered[r[first]]]


def _joins(actions: Sequence[str], spans: np.ndarray, step: np.ndarray) -> np.ndarray:
    """joins[k]: located line k (in step, start order) continues line k - 1 of the same step."""
    out = np.zeros(spans.shape[0], bool)
    same = np.flatnonzero(step[1:] == step[:-1]) + 1
    for k, s, end, start in zip(same.tolist(), step[same].tolist(), spans[same - 1, 1].tolist(),
                                spans[same, 0].tolist()):
        gap = actions[s][end:start]
        out[k] = start <= end or gap in _LINE_BREAKS or _GAP.fullmatch(gap) is not None
    return out


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
    out = project_steps([np.asarray(offsets, np.int64).reshape(-1, 2)], np.asarray(spans, np.int64).reshape(-1, 2),
                        np.zeros(len(spans), np.int64), np.asarray(values, np.float64),
                        np.asarray(priority, np.float64))
    return out[0]


def project_steps(
    offsets: Sequence[np.ndarray],
    spans: np.ndarray,
    span_step: np.ndarray,
    values: np.ndarray,
    priority: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """`project_tokens` for many steps at once: one searchsorted and one sort for the whole batch.

    Args:
      offsets: (S,) arrays (T_s, 2) of token offsets.
      spans: (m, 2) character spans, each in its own step's coordinates.
      span_step: (m,) step of each span.
      values, priority: (m,) as in `project_tokens`.

    Returns:
      per step, (values (T_s,), covered (T_s,)).
    """
    m = spans.shape[0]
    if values.shape != (m,) or priority.shape != (m,) or span_step.shape != (m,):
        raise ValueError(f"span_step, values and priority must have shape ({m},)")
    n_tokens = np.asarray([o.shape[0] for o in offsets], np.int64)
    tokens = np.concatenate(offsets).reshape(-1, 2) if offsets else np.zeros((0, 2), np.int64)
    step_of = np.repeat(np.arange(len(offsets)), n_tokens)
    # one character axis for the batch: step s occupies [base[s], base[s] + width[s])
    width = np.asarray([int(o[:, 1].max(initial=0)) + 1 for o in offsets], np.int64)
    if m:
        width = np.maximum(width, _span_width(spans, span_step, len(offsets)))
    base = segment_starts(width)
    real = np.flatnonzero(tokens[:, 1] > tokens[:, 0])
    start = tokens[real, 0] + base[step_of[real]]
    end = tokens[real, 1] + base[step_of[real]]
    first = np.searchsorted(end, spans[:, 0] + base[span_step], side="right")
    last = np.maximum(np.searchsorted(start, spans[:, 1] + base[span_step], side="left"), first)
    token = ranges(first, last)
    span = np.repeat(np.arange(m), last - first)
    order = np.lexsort((span, priority[span], token))
    token, span = token[order], span[order]
    best = np.ones(token.shape[0], bool)
    best[:-1] = token[1:] != token[:-1]
    value = np.zeros(tokens.shape[0])
    covered = np.zeros(tokens.shape[0], bool)
    value[real[token[best]]] = values[span[best]]
    covered[real[token[best]]] = True
    cut = segment_starts(n_tokens)
    return [(value[c:c + n], covered[c:c + n]) for c, n in zip(cut.tolist(), n_tokens.tolist())]
