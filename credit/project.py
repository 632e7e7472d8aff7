r"""Project sub-diff advantages onto the response tokens that wrote them.

An anchor occurrence covers character spans of its step's action: for added lines, the spans the
environment reported (provenance); otherwise the places where its lines appear in the action text,
as written or JSON-string-escaped (tool calls carry code inside JSON strings).

Lines are searched in diff order, a block at a time. A block is a run of changed lines that follow
each other in the file (one kind, line numbers n, n + 1, ...). Its text, the lines joined by line
breaks (without the blank lines at its ends and the trailing whitespace of its last line), is looked
up as written, then JSON-escaped (breaks read `\n`; with and without ASCII escapes), first after the
previous match of the same kind in the step (added and deleted lines keep separate cursors), then
from the start. A match must stand between line boundaries: it starts at the text's start, after a
line break (written or escaped as `\n`, `\r`) or after what opens a text in a call (a quote, a
backtick, `>` ending a tag), and ends, past trailing spaces and tabs, at the text's end, a line
break or what closes a text (a quote, a backtick, `<`). So a deleted `res = len(words)` is never
found inside an added `res = len(words) + 1`. A block found whole places each of its lines, even a line that
alone also appears earlier (quoted in the thought, say); a block not found is searched line by line
the same way (trailing whitespace dropped, indentation kept). Blank lines get no span. A line
may also end before a break escaped twice (`\\n`: a script's escape inside a JSON string). A
line given a window (a deleted line: its call's deleted edit arguments) is searched only there,
and there also without its indentation (a script's old string holds the text alone).

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
import posixpath
import re
from itertools import chain, repeat
from typing import Any, Callable, Optional, Sequence

import numpy as np

from credit._util import ranges, segment_starts

_JSON = json.JSONEncoder(ensure_ascii=False).encode
_JSON_ASCII = json.JSONEncoder().encode
_GAP = re.compile(r"(?:\s|\\[nrt])*")
# what each character can be inside a gap that _GAP accepts; every non-ASCII character is _WIDE
_OTHER, _SPACE, _BACKSLASH, _LETTER, _WIDE = range(5)
_GAP_CLASS = np.array([_SPACE if re.fullmatch(r"\s", chr(c)) else _BACKSLASH if chr(c) == "\\"
                       else _LETTER if chr(c) in "nrt" else _OTHER for c in range(128)] + [_WIDE], np.int8)
# last characters that str.rstrip may remove: ASCII whitespace, and any non-ASCII one (to be checked)
_MAY_STRIP = np.array([chr(c).isspace() for c in range(128)] + [True])
# characters JSON escapes, but for the line break (which joins the lines): control characters, quote, backslash
_ESCAPED = np.array([(c < 32 and c != 10) or chr(c) in '"\\' for c in range(129)])
_OPENS = frozenset("\n\r\"'`>")  # characters after which a line may start (besides a line break's escape)
_CLOSES = frozenset("\n\r\"'`<")  # characters before which a line may end
_ESCAPED_BREAKS = frozenset(("\\n", "\\r"))  # a line break inside a JSON or shell string
# a line break escaped twice: a Python or printf `\n` inside a JSON string (a script in a tool call)
_TWICE_ESCAPED_BREAKS = frozenset(("\\\\n", "\\\\r"))
_HEAD = 48  # characters of a long text that str.find looks for before comparing the rest
_MAX_GAP = 64  # longer gaps between lines are checked with _GAP itself (few, and mostly not whitespace)

_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"})


def _json_html(text: str) -> str:
    """JSON as Jinja's tojson, Go's encoding/json and other HTML-safe encoders write it."""
    return _JSON_ASCII(text).translate(_HTML_SAFE)


def _json_slashes(text: str) -> str:
    """JSON with every / escaped (\\/), as PHP's json_encode and some others write it."""
    return _JSON(text).replace("/", "\\/")


_Form = tuple[str, int]  # a text and the index in _ESCAPES of what made it from the line (0: as written)
_ESCAPES = (None, _JSON, _JSON_ASCII, _json_html, _json_slashes)


def locate_lines(action: str, lines: Sequence[str]) -> np.ndarray:
    """Character spans of `lines` in `action`: as one block, else one by one (see the module docstring).

    Args:
      action: the response text.
      lines: (n,) line texts without line breaks, in diff order.

    Returns:
      (n, 2) int64 (start, end) spans, (-1, -1) for blank lines and lines not found.
    """
    n = len(lines)
    return locate_blocks([action], list(lines), np.arange(n), np.zeros(n, np.int64), np.zeros(n, bool))[0]


def locate_blocks(
    actions: Sequence[str],
    texts: Sequence[str],
    line: np.ndarray,
    step: np.ndarray,
    new_block: np.ndarray,
    searched: Optional[np.ndarray] = None,
    skip: int = 0,
    kind: Optional[np.ndarray] = None,
    window: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`locate_lines` for the changed lines of many steps, cut into blocks.

    A block found at `pos` places its line j at

      start_j = pos + sum_{i < j} (len(f(line_i)) + len(f(break))),  end_j = start_j + len(f(line_j.rstrip()))

    with f the form it was found in (as written, or a JSON escape).

    Args:
      actions: (S,) the steps' response texts.
      texts: line texts without line breaks (a batch's, say); a line's text is texts[i][skip:].
      line: (n,) the lines to locate, as indices into `texts`, in diff order inside each step.
      step: (n,) step of each, non-decreasing.
      new_block: (n,) True where a line starts a block; a step's first line, and a line that does
        not follow the previous one in `texts`, always do.
      searched: (n,) the lines to search (default: all); the others are left out of the blocks.
      skip: characters in front of each text that are not part of the line (a diff's +/- marker).
      kind: (n,) small int edit type of each line (added, deleted); each kind keeps its own cursor
        in a step, and a block never holds two kinds (default: one kind).
      window: (n, 2) the characters of its action each line is searched in, [start, end) (the
        edit argument of the call that made it, say; default: the whole action). A block never
        holds two windows; a match lies whole inside its window (the boundary characters around
        it may stand outside). In a window narrower than the action, a line not found as written
        is also looked for without its indentation (a script's old string holds the text alone).

    Returns:
      (spans (n, 2) int64, (-1, -1) for blank, unsearched and unfound lines; block (n,) id of the
      block a line was found in as one text with nothing escaped but line breaks, else -1).
    """
    n = line.shape[0]
    out = np.full((n, 2), -1, np.int64)
    if n == 0:
        return out, np.full(n, -1, np.int64)
    searched = np.ones(n, bool) if searched is None else searched
    look = np.flatnonzero(searched)
    at, size, kept = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    joined, at[look], size[look], kept[look], escaped_at = joined_texts(texts, line[look], skip)
    kind = np.zeros(n, np.int64) if kind is None else np.asarray(kind, np.int64)
    new_block = new_block | np.concatenate([[True], (line[1:] != line[:-1] + 1) | (kind[1:] != kind[:-1])])
    if window is not None:
        window = np.asarray(window, np.int64).reshape(n, 2)
        new_block = new_block | np.concatenate([[True], (window[1:] != window[:-1]).any(axis=1)])
    lo, hi = _blocks(step, new_block, searched, kept > 0)
    c0, c1 = at[lo], at[hi - 1] + kept[hi - 1]
    plain = np.searchsorted(escaped_at, c0) == np.searchsorted(escaped_at, c1)  # nothing to escape but breaks
    bounds = None if window is None else window[lo]
    found, alone = _search_blocks(actions, joined, lo, hi, step[lo], kind[lo], c0, c1, plain, at, kept, bounds)
    if alone:
        where, start, end = np.asarray(alone, np.int64).T
        out[where, 0], out[where, 1] = start, end
    return out, _place_blocks(out, found, size, kept)


def joined_texts(texts: Sequence[str], line: np.ndarray, skip: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """`_joined_lines` of texts[line[0]], texts[line[1]], ..."""
    return _joined_lines(list(map(texts.__getitem__, line.tolist())), skip)


def _joined_lines(texts: Sequence[str], skip: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The lines texts[i][skip:] joined by line breaks, each line's start in it, length and length
    without trailing whitespace, and where the joined text holds characters that JSON escapes
    (other than the line breaks).

    Read off the code points of the joined texts, with the skipped characters cut out there; only
    lines that end in whitespace or a non-ASCII character are stripped one by one.
    """
    joined = "\n".join(texts)
    codes = _code_points(joined)
    breaks = np.flatnonzero(codes == 10)
    if breaks.shape[0] != len(texts) - 1:  # some text holds a line break itself: join the lines one by one
        lines = [t[skip:] for t in texts]
        size = np.fromiter(map(len, lines), np.int64, len(lines))
        kept = np.fromiter(map(len, map(str.rstrip, lines)), np.int64, len(lines))
        joined = "\n".join(lines)
        return joined, segment_starts(size + 1), size, kept, np.arange(len(joined))
    start = np.concatenate([[0], breaks + 1])
    size = np.diff(np.concatenate([start, [codes.shape[0] + 1]])) - 1
    if skip:
        cut = np.minimum(size, skip)
        keep = np.ones(codes.shape[0], bool)
        keep[ranges(start, start + cut)] = False
        codes = codes[keep]
        joined = codes.tobytes().decode("ascii" if codes.dtype == np.uint8 else "utf-32-le", "surrogatepass")
        start, size = start - segment_starts(cut), size - cut
    kept = size.copy()
    filled = np.flatnonzero(size > 0)
    for k in filled[_MAY_STRIP[np.minimum(codes[start[filled] + size[filled] - 1], 128)]].tolist():
        kept[k] = len(joined[start[k]:start[k] + size[k]].rstrip())
    escaped_at = np.flatnonzero(_ESCAPED[np.minimum(codes, 128)])
    return joined, start, size, kept, escaped_at


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


def _search_blocks(actions: Sequence[str], joined: str, lo: np.ndarray, hi: np.ndarray, step: np.ndarray,
                   kind: np.ndarray, c0: np.ndarray, c1: np.ndarray, plain: np.ndarray, at: np.ndarray,
                   kept: np.ndarray, bounds: Optional[np.ndarray] = None) -> tuple[tuple, list]:
    """Search the blocks (lines lo..hi-1, text joined[c0:c1]) in order, each from the end of the
    previous match of its step and kind, then from the start (of its window `bounds`, when given);
    line by line where the block is not found.

    Returns:
      (blocks found whole: arrays lo, hi, position, escape index, and {index among them: the lines'
      (sizes, kept sizes) in its escaped form} for forms that escape more than the line breaks;
      lines found alone: (line, start, end)).
    """
    n_blocks = lo.shape[0]
    pos, escape = np.full(n_blocks, -1, np.int64), np.zeros(n_blocks, np.int64)
    recounted: dict[int, tuple[list[int], list[int]]] = {}
    alone: list[tuple[int, int, int]] = []
    forms_of: dict[str, list[_Form]] = {}
    lo_l, hi_l, step_l, kind_l, c0_l, c1_l, plain_l = (x.tolist() for x in (lo, hi, step, kind, c0, c1, plain))
    w0_l, w1_l = ([0] * n_blocks, [None] * n_blocks) if bounds is None else (bounds[:, 0].tolist(),
                                                                            bounds[:, 1].tolist())

    def rest(b: int, cursors: dict[int, int]) -> None:
        """The searches after the first: the escaped forms, then the lines one by one."""
        a, e, c, w0, w1 = lo_l[b], hi_l[b], kind_l[b], w0_l[b], w1_l[b]
        action, text = actions[step_l[b]], joined[c0_l[b]:c1_l[b]]
        forms = _forms(text, plain_l[b])
        found, k = _search(action, forms, cursors.get(c, 0), w0, w1)
        if found >= 0:
            form, escaped = forms[k]
            cursors[c] = found + len(form)
            if escaped > 0 and len(form) != len(text) + e - a - 1:  # more escaped than the breaks
                recounted[b] = _escaped_sizes(text, form, _ESCAPES[escaped])
            pos[b], escape[b] = found, escaped
            return
        narrow = w1 is not None and (w0 > 0 or w1 < len(action))  # a window inside the action
        for j in range(a, e) if e - a > 1 or narrow else ():
            if kept[j]:
                one = joined[int(at[j]):int(at[j] + kept[j])]
                # inside a window, also without its indentation (a script's string holds the text alone)
                tries = ([one] if e - a > 1 else []) + ([one.lstrip()] if narrow and one[:1].isspace() else [])
                for t in tries:
                    forms = forms_of.get(t) or forms_of.setdefault(t, _forms(t))
                    found, k = _search(action, forms, cursors.get(c, 0), w0, w1)
                    if found >= 0:
                        cursors[c] = found + len(forms[k][0])
                        alone.append((j, found, cursors[c]))
                        break

    cursors: dict[int, int] = {}
    current = -1
    for b in range(n_blocks):
        s, c = step_l[b], kind_l[b]
        if s != current:
            cursors, current = {}, s
        text = joined[c0_l[b]:c1_l[b]]
        found = _find(actions[s], text, max(cursors.get(c, 0), w0_l[b]), w1_l[b])
        if found >= 0:
            cursors[c], pos[b] = found + len(text), found
        else:
            rest(b, cursors)
    return _found_blocks(lo, hi, pos, escape, recounted), alone


def _found_blocks(lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, escape: np.ndarray, recounted: dict) -> tuple:
    """The blocks found whole, as `_search_blocks` returns them."""
    whole = np.flatnonzero(pos >= 0)
    index = np.cumsum(pos >= 0) - 1
    return lo[whole], hi[whole], pos[whole], escape[whole], {int(index[b]): v for b, v in recounted.items()}


def _forms(text: str, plain: bool = False) -> list[_Form]:
    """The text as written and as it reads inside a JSON string (with and without ASCII escapes; as
    HTML-safe encoders write <, >, & and ' (\\u003c ...); with / escaped), each with the index in
    _ESCAPES of the function that makes it. plain: the text holds nothing
    JSON escapes but line breaks, so its escaped form is a replace (a few times faster)."""
    escaped = text.replace("\n", "\\n") if plain else _JSON(text)[1:-1]
    forms: list[_Form] = [(text, 0), (escaped, 1)] if escaped != text else [(text, 0)]
    if not text.isascii():
        forms.append((_JSON_ASCII(text)[1:-1], 2))
    if "<" in text or ">" in text or "&" in text or "'" in text:
        forms.append((_json_html(text)[1:-1], 3))
    if "/" in text:
        forms.append((_json_slashes(text)[1:-1], 4))
    return forms


def _search(action: str, forms: list[_Form], cursor: int, lo: int = 0, hi: Optional[int] = None) -> tuple[int, int]:
    """(position, form index) of the first form found in action[max(cursor, lo):hi], else in
    action[lo:hi]; (-1, -1)."""
    for start in (max(cursor, lo), lo) if cursor > lo else (lo,):
        for k, (form, _) in enumerate(forms):
            pos = _find(action, form, start, hi)
            if pos >= 0:
                return pos, k
    return -1, -1


def _find(action: str, form: str, start: int, end: Optional[int] = None) -> int:
    """The first position >= start where `form` stands in `action` (whole before `end`) between
    line boundaries (`_at_line_start`, `_at_line_end`), -1 if none. A long form is found by its
    head and the rest compared (str.find prepares a table the size of its pattern on every call)."""
    head = form[:_HEAD]
    end = len(action) if end is None else end
    pos = action.find(head, start, end)
    while pos >= 0 and not (pos + len(form) <= end and action.startswith(form, pos) and _at_line_start(action, pos)
                            and _at_line_end(action, pos + len(form))):
        pos = action.find(head, pos + 1, end)
    return pos


def _at_line_start(action: str, pos: int) -> bool:
    """Whether a line may start at `pos`: the text's start, after a line break (written or escaped),
    or after what opens a text in a call (a quote, a backtick, the end of a tag)."""
    return pos == 0 or action[pos - 1] in _OPENS or action[pos - 2:pos] in _ESCAPED_BREAKS


def _at_line_end(action: str, pos: int) -> bool:
    """Whether a line may end at `pos` (trailing spaces and tabs skipped): the text's end, a line
    break (written, escaped, or escaped twice: a script's `\\n` in a JSON string), or what closes a
    text in a call (a quote, a backtick, a tag)."""
    end = len(action)
    while pos < end and action[pos] in " \t":
        pos += 1
    return (pos == end or action[pos] in _CLOSES or action[pos:pos + 2] in _ESCAPED_BREAKS
            or action[pos:pos + 3] in _TWICE_ESCAPED_BREAKS)


def _escaped_sizes(text: str, form: str, escape: Callable[[str], str]) -> tuple[list[int], list[int]]:
    """Length of each line of a block's text in its escaped form `form`, with and without trailing
    whitespace (the text's last line has none)."""
    lines = text.split("\n")
    if "\\" in text:
        sizes = [len(escape(x)) - 2 for x in lines]
    else:  # then the form's only backslash-n pairs are the escaped line breaks
        sizes = list(map(len, form.split("\\n")))
    return sizes, [len(escape(x.rstrip())) - 2 if x[-1:].isspace() else n for x, n in zip(lines, sizes)]


def _place_blocks(out: np.ndarray, found: tuple, size: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Write the spans of the lines of the blocks found whole (`_search_blocks`, formula in
    `locate_blocks`); return each line's block id where nothing but line breaks was escaped in it,
    else -1."""
    block_of = np.full(out.shape[0], -1, np.int64)
    if not len(found[0]):
        return block_of
    lo, hi, pos, escape = (np.array(x, np.int64) for x in found[:4])
    form_size, form_kept, recount = size.copy(), kept.copy(), np.zeros(lo.shape[0], bool)
    for b, sizes in found[4].items():
        a, e = int(lo[b]), int(hi[b])
        form_size[a:e], form_kept[a:e], recount[b] = sizes[0], sizes[1], True
    k = ranges(lo, hi)
    block = np.repeat(np.arange(lo.shape[0]), hi - lo)
    stride = form_size[k] + np.where(escape[block] == 0, 1, 2)
    before = np.cumsum(stride) - stride
    start = pos[block] + before - before[segment_starts(hi - lo)][block]
    keep = kept[k] > 0
    out[k[keep], 0] = start[keep]
    out[k[keep], 1] = start[keep] + form_kept[k[keep]]
    block_of[k] = np.where(recount[block], -1, block)
    return block_of


def provenance_spans(
    provenance: Sequence[Optional[Sequence[tuple]]],
    step: np.ndarray,
    path: np.ndarray,
    path_names: Sequence[str],
    line_numbers: np.ndarray,
) -> np.ndarray:
    """Spans of lines from the environment's provenance, (-1, -1) where none is given.

    Entry (path, line, start, end) of step s gives the span of the line of that path and number in
    step s; of repeated entries the last counts. One sorted key (step, path, line) for the batch.

    Args:
      provenance: (S,) per step, its (path, line, start, end) tuples (None or empty: none).
      step: (n,) step of each line.
      path: (n,) its file, an index into path_names.
      path_names: the distinct file paths.
      line_numbers: (n,) its line number in the new file.

    Returns:
      (n, 2) int64 spans.
    """
    out = np.full((line_numbers.shape[0], 2), -1, np.int64)
    given = [s for s, entries in enumerate(provenance) if entries]
    if not given or not line_numbers.shape[0]:
        return out
    fields = list(chain.from_iterable(chain.from_iterable(provenance[s] for s in given)))  # path, line, start, end, ...
    n = len(fields) // 4
    entry_step = np.repeat(given, [len(provenance[s]) for s in given])
    ids = _path_ids(path_names)
    entry_id = np.fromiter(map(ids.get, map(same_path, fields[0::4]), repeat(len(ids))), np.int64, n)
    entry_line, entry_start, entry_end = (np.fromiter(fields[k::4], np.int64, n) for k in (1, 2, 3))
    dims = (len(provenance), len(ids) + 1, int(max(entry_line.max(), line_numbers.max())) + 1)
    key = np.ravel_multi_index((entry_step, entry_id, entry_line), dims)
    query = np.ravel_multi_index((step, path, line_numbers), dims, mode="clip")
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], query, side="right") - 1
    hit = np.flatnonzero((at >= 0) & (key[order][np.maximum(at, 0)] == query) & (line_numbers >= 0))
    out[hit, 0] = entry_start[order[at[hit]]]
    out[hit, 1] = entry_end[order[at[hit]]]
    return out


def widen_spans(
    line_spans: np.ndarray,
    line_step: np.ndarray,
    containers: np.ndarray,
    container_step: np.ndarray,
    attributed: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Each line's span widened to the container (an edit argument, a tool call) that holds it.

    A located line takes the span of the container of its step that holds its span whole; one
    that none holds takes the container `attributed` names (the call that made it), if any; the
    others keep their own span.

    Args:
      line_spans: (L, 2) spans of the lines (start < 0: not located).
      line_step: (L,) step of each line.
      containers: (C, 2) spans, not overlapping inside one step.
      container_step: (C,) step of each.
      attributed: (L,) a container index per line, -1 for none (default: none).

    Returns:
      (L, 2) int64 spans.
    """
    out = np.array(line_spans, np.int64).reshape(-1, 2)
    if containers.shape[0] and out.shape[0]:
        width = int(max(containers[:, 1].max(), out[:, 1].max())) + 2
        order = np.argsort(container_step * width + containers[:, 0], kind="stable")
        keys = (container_step * width + containers[:, 0])[order]
        at = np.searchsorted(keys, line_step * width + out[:, 0], side="right") - 1
        c = order[np.maximum(at, 0)]
        held = ((at >= 0) & (out[:, 0] >= 0) & (container_step[c] == line_step) & (containers[c, 1] >= out[:, 1]))
        if attributed is not None:
            take = np.where(held, c, np.where(attributed >= 0, attributed, -1))
        else:
            take = np.where(held, c, -1)
        hit = np.flatnonzero(take >= 0)
        out[hit] = containers[take[hit]]
    return out


def same_path(path: Any) -> Any:
    """A file path as a diff names it: "./m.py", "src//m.py" and "src/./m.py" name the diff's
    "m.py" and "src/m.py" (a path written either way by a tool or a caller found no line before)."""
    if not isinstance(path, str) or not path:
        return path
    out = posixpath.normpath(path)
    return out[2:] if out.startswith("./") else out


def _path_ids(path_names: Sequence[str]) -> dict:
    return {same_path(p): k for k, p in enumerate(path_names)}


def line_calls(
    entries: Sequence[Optional[Sequence[tuple]]],
    step: np.ndarray,
    path: np.ndarray,
    path_names: Sequence[str],
    kind: np.ndarray,
    line_numbers: np.ndarray,
) -> np.ndarray:
    """The call that made each line, from the steps' `line_calls` (-1: not given).

    Entry (path, kind, line, call) of step s names the call of that line of step s (kind
    "added" or "deleted" is +1 / -1 in `kind`); of repeated entries the last counts.

    Args:
      entries: (S,) per step, its (path, kind, line, call) tuples (None or empty: none).
      step, path, kind, line_numbers: (n,) step, file (an index into path_names), edit type
        (+1 added, -1 deleted) and line number of each line.

    Returns:
      (n,) int64 call indices.
    """
    out = np.full(line_numbers.shape[0], -1, np.int64)
    given = [s for s, e in enumerate(entries) if e]
    if not given or not line_numbers.shape[0]:
        return out
    fields = list(chain.from_iterable(chain.from_iterable(entries[s] for s in given)))
    n = len(fields) // 4
    entry_step = np.repeat(given, [len(entries[s]) for s in given])
    ids = _path_ids(path_names)
    entry_path = np.fromiter(map(ids.get, map(same_path, fields[0::4]), repeat(len(ids))), np.int64, n)
    entry_kind = np.fromiter((k == "added" for k in fields[1::4]), np.int64, n)
    entry_line, entry_call = (np.fromiter(fields[k::4], np.int64, n) for k in (2, 3))
    dims = (len(entries), len(ids) + 1, 2, int(max(entry_line.max(), line_numbers.max())) + 1)
    key = np.ravel_multi_index((entry_step, entry_path, entry_kind, entry_line), dims)
    query = np.ravel_multi_index((step, path, (kind > 0).astype(np.int64), np.maximum(line_numbers, 0)), dims)
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], query, side="right") - 1
    hit = np.flatnonzero((at >= 0) & (key[order][np.maximum(at, 0)] == query))
    out[hit] = entry_call[order[at[hit]]]
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
    m = spans.shape[0]
    merged, _, _ = occurrence_spans([action], spans, np.zeros(m, np.int64), np.arange(m), np.zeros(m, np.int64))
    return merged


def occurrence_spans(
    actions: Sequence[str],
    line_spans: np.ndarray,
    line_step: np.ndarray,
    member_line: np.ndarray,
    member_occurrence: np.ndarray,
    line_block: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merged spans of many occurrences in many steps, with one vectorized pass.

    Args:
      actions: (S,) the steps' response texts.
      line_spans: (L, 2) spans of the changed lines of all steps (start < 0: not located).
      line_step: (L,) step of each line.
      member_line: (n,) line (row of line_spans) of each (occurrence, line) membership.
      member_occurrence: (n,) occurrence id of each membership (an occurrence lies in one step).
      line_block: (L,) the block each line was found in as one text (`locate_blocks`), -1 for none;
        neighbours from one block join without a look at the text between them.

    Returns:
      (spans (k, 2) in each step's own coordinates, occurrence of each span (k,), step of each span (k,)).
    """
    located = np.flatnonzero(line_spans[:, 0] >= 0)
    ordered = located[_order(line_step[located], line_spans[located, 0])]
    rank = np.full(line_spans.shape[0], -1, np.int64)
    rank[ordered] = np.arange(ordered.shape[0])
    keep = rank[member_line] >= 0
    occ, r = member_occurrence[keep], rank[member_line[keep]]
    by = _order(occ, r)
    occ, r = occ[by], r[by]
    follows = (occ[1:] == occ[:-1]) & (r[1:] == r[:-1] + 1)
    pair = np.flatnonzero(follows)
    before, after = ordered[r[pair]], ordered[r[pair + 1]]
    if line_block is not None:
        unknown = (line_block[before] < 0) | (line_block[before] != line_block[after])
        pair, before, after = pair[unknown], before[unknown], after[unknown]
    follows[pair] = _joins(actions, line_step[after], line_spans[before, 1], line_spans[after, 0])
    first = np.flatnonzero(np.concatenate([[True], ~follows])) if r.shape[0] else np.zeros(0, np.int64)
    ends = np.maximum.reduceat(line_spans[ordered[r], 1], first) if first.shape[0] else np.zeros(0, np.int64)
    spans = np.stack([line_spans[ordered[r[first]], 0], ends], axis=1).reshape(-1, 2)
    return spans, occ[first], line_step[ordered[r[first]]]


def _order(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """Stable order by (major, minor), both non-negative: one sort of major * (1 + max minor) + minor
    (mostly sorted runs already, which the stable sort takes in linear time)."""
    return np.argsort(major * (int(minor.max(initial=0)) + 1) + minor, kind="stable")


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
        read = np.zeros(len(actions), bool)
        read[step[short]] = True
        read = np.flatnonzero(read).tolist()  # the actions with gaps to read, joined into one text
        texts = [actions[s] for s in read]
        base = np.zeros(len(actions), np.int64)
        base[read] = segment_starts(np.fromiter(map(len, texts), np.int64, len(texts)))
        chars = _code_points("".join(texts))
        at = ranges(base[step[short]] + end[short], base[step[short]] + start[short])
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

    With its step's non-empty tokens in order, span [a, b) covers tokens first..last-1, first =
    #{tokens ending <= a}, last = #{tokens starting < b} (a binary search per span). The span bounds
    cut the tokens into intervals that every span covers whole or not at all, so the winner is
    found per interval and its value repeated over the interval's tokens.

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
    return project_flat(tokens, n_tokens, spans, span_step, values, priority)


def project_flat(
    tokens: np.ndarray,
    n_tokens: np.ndarray,
    spans: np.ndarray,
    span_step: np.ndarray,
    values: np.ndarray,
    priority: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """`project_steps` with the steps' token offsets one after another in `tokens` (T, 2),
    n_tokens[s] of step s."""
    m = spans.shape[0]
    if values.shape != (m,) or priority.shape != (m,) or span_step.shape != (m,):
        raise ValueError(f"span_step, values and priority must have shape ({m},)")
    n_all = tokens.shape[0]
    real = None if (tokens[:, 1] > tokens[:, 0]).all() else np.flatnonzero(tokens[:, 1] > tokens[:, 0])
    if real is not None:  # zero-width tokens cover nothing and may stand anywhere: leave them out
        tokens = tokens[real]
        n_tokens = np.bincount(np.repeat(np.arange(len(n_tokens)), n_tokens)[real], minlength=len(n_tokens))
    bounds = np.concatenate([[0], np.cumsum(n_tokens)])
    lo, hi = bounds[span_step], bounds[span_step + 1]
    first = _count_sorted(tokens[:, 1], lo, hi, spans[:, 0], below=False)
    last = np.maximum(_count_sorted(tokens[:, 0], lo, hi, spans[:, 1], below=True), first)
    value, covered = _paint(tokens.shape[0], first, last, values, priority)
    if real is None:
        return value, covered
    all_values, all_covered = np.zeros(n_all), np.zeros(n_all, bool)
    all_values[real], all_covered[real] = value, covered
    return all_values, all_covered


def _count_sorted(sorted_values: np.ndarray, lo: np.ndarray, hi: np.ndarray, x: np.ndarray, below: bool) -> np.ndarray:
    """lo + #{i in [lo, hi): sorted_values[i] < x} (below) or <= x, per query, where each range
    of sorted_values is sorted: a binary search on all queries at once."""
    lo, hi = lo.copy(), hi.copy()
    last = max(sorted_values.shape[0] - 1, 0)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        v = sorted_values[np.minimum(mid, last)]
        right = open_ & ((v < x) if below else (v <= x))
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


def _paint(n: int, first: np.ndarray, last: np.ndarray, values: np.ndarray,
           priority: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item of 0..n-1, the value of the highest-priority range [first, last) holding it (ties
    to the later range), and whether any does; found per interval between range bounds."""
    m = first.shape[0]
    cuts = np.sort(np.concatenate([first, last, [0, n]]))
    cuts = cuts[np.concatenate([[True], cuts[1:] != cuts[:-1]])]
    lo, hi = np.searchsorted(cuts, first), np.searchsorted(cuts, last)
    by_rank = np.lexsort((np.arange(m), priority))  # lowest priority first; of equal ones the later range last
    rank = np.empty(m, np.int64)
    rank[by_rank] = np.arange(m)
    best = np.full(cuts.shape[0] - 1, -1, np.int64)
    np.maximum.at(best, ranges(lo, hi), np.repeat(rank, hi - lo))
    won = best >= 0
    interval_value = np.zeros(best.shape[0])
    interval_value[won] = values[by_rank[best[won]]]
    size = np.diff(cuts)
    return np.repeat(interval_value, size), np.repeat(won, size)
