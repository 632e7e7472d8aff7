import json
import re

import numpy as np

from credit.project import (locate_blocks, locate_lines, merge_spans, occurrence_spans, project_steps,
                            project_tokens, provenance_spans)

def test_locate_raw_lines_in_order():
    action = "x = 1\nprint(x)\nx = 1\n"
    spans = locate_lines(action, ["x = 1", "   ", "x = 1", "missing()"])
    assert spans.tolist() == [[0, 5], [-1, -1], [15, 20], [-1, -1]]


def test_locate_json_escaped_lines():
    code = ['    s = "a\\tb"', "\tindent = 'tab'", "    name = 'café'"]
    for ensure_ascii in (False, True):
        action = json.dumps({"new_str": "\n".join(code)}, ensure_ascii=ensure_ascii)
        spans = locate_lines(action, code)
        assert (spans[:, 0] >= 0).all()
        for (s, e), line in zip(spans.tolist(), code):
            assert json.loads('"' + action[s:e] + '"') == line


def test_merge_joins_lines_separated_by_whitespace_or_escapes():
    action = 'a = 1\\n\\n    b = 2 and then c = 3'
    spans = np.array([[28, 33], [0, 5], [9, 18]])  # "a = 1", "    b = 2", "c = 3", in any order
    assert merge_spans(action, spans).tolist() == [[0, 18], [28, 33]]
    assert merge_spans(action, np.array([[-1, -1]])).shape == (0, 2)


def test_highest_priority_span_wins_per_token():
    offsets = np.array([[0, 2], [2, 4], [4, 6], [6, 8], [8, 8]])
    spans = np.array([[0, 5], [3, 8]])
    values, covered = project_tokens(offsets, spans, np.array([1.0, 2.0]), np.array([0.5, 0.1]))
    # token 2 (4-6) overlaps both spans: the first has the higher priority; token 4 is zero-width
    assert values.tolist() == [1.0, 1.0, 1.0, 2.0, 0.0]
    assert covered.tolist() == [True, True, True, True, False]


def test_many_steps_at_once_match_one_at_a_time():
    offs = [np.array([[0, 3], [3, 6]]), np.array([[0, 0], [0, 4], [4, 9]])]
    spans = np.array([[4, 5], [0, 2], [5, 9]])
    step = np.array([0, 1, 1])
    values = np.array([1.0, 2.0, 3.0])
    both, covered = project_steps(offs, spans, step, values, np.ones(3))
    # step 0's two tokens, then step 1's three (the first zero-width)
    assert both.tolist() == [0.0, 1.0, 0.0, 2.0, 3.0]
    assert covered.tolist() == [False, True, False, True, True]
    alone = project_tokens(offs[1], spans[1:], values[1:], np.ones(2))
    assert alone[0].tolist() == both[2:].tolist()


def test_provenance_spans():
    prov = (("a.py", 3, 10, 20), ("b.py", 3, 30, 40))
    out = provenance_spans([prov], np.zeros(3, np.int64), np.array([0, 0, 1]), ("a.py", "b.py"), np.array([3, 4, 3]))
    assert out.tolist() == [[10, 20], [-1, -1], [30, 40]]


def test_block_found_as_written():
    code = ["def f(x):", "", "    return x  "]
    action = "Here it is:\n" + "\n".join(code) + "\n"
    start = action.index("def")
    last = start + len(code[0]) + 2  # a line break, the blank line and its break
    spans = locate_lines(action, code).tolist()
    assert spans == [[start, start + len(code[0])], [-1, -1], [last, last + len("    return x")]]


def test_block_found_as_json_escaped_text():
    # quotes, a backslash, a tab, trailing whitespace, a blank line and non-ASCII: each escapes differently
    code = ['def f(s):', '    """Say "hi"."""  ', '', '\treturn s + "\\\\n"', "    return 'café'"]
    for ensure_ascii in (False, True):
        call = json.dumps({"name": "edit", "arguments": {"new_str": "\n".join(code)}}, ensure_ascii=ensure_ascii)
        action = "I will add f.\n<tool_call>" + call + "</tool_call>"
        spans = locate_lines(action, code)
        assert spans[2].tolist() == [-1, -1]  # blank
        inside = action.index("<tool_call>")
        for (s, e), line in zip(spans.tolist(), code):
            if line.strip():
                assert s > inside and json.loads('"' + action[s:e] + '"') == line.rstrip()


def test_block_is_placed_whole_even_where_a_line_appears_earlier():
    code = ["    return total", "total = 0"]
    call = json.dumps({"new_str": "\n".join(code)})
    action = "The bug: `    return total` comes too early.\n" + call
    spans = locate_lines(action, code)
    # line by line, the first line would match the quote in the thought; as a block, both lines sit
    # in the call, one escaped line break (2 characters) apart
    start = action.index(json.dumps("\n".join(code))[1:-1])
    second = start + len(code[0]) + 2
    assert spans.tolist() == [[start, start + len(code[0])], [second, second + len(code[1])]]


def test_block_not_found_whole_is_searched_line_by_line():
    action = "x = 1\nsomething else\ny = 2\n"
    spans = locate_lines(action, ["x = 1", "y = 2"])
    y = action.index("y = 2")
    assert spans.tolist() == [[0, 5], [y, y + 5]]


def test_locate_blocks_skips_markers_and_unsearched_lines():
    # a diff's marked lines; step 0 searches its deleted block only, step 1 everything
    texts = ["-a = 1", "-b = 2", "+a = 10", "+b = 20", "+c = 3"]
    actions = ['{"old_str": "a = 1\\nb = 2", "new_str": "a = 10\\nb = 20"}', "c = 3"]
    line, step = np.array([0, 1, 2, 3, 4]), np.array([0, 0, 0, 0, 1])
    new_block = np.array([True, False, True, False, True])
    searched = np.array([True, True, False, False, True])
    spans, block = locate_blocks(actions, texts, line, step, new_block, searched, skip=1)
    a = actions[0].index("a = 1")
    assert spans.tolist() == [[a, a + 5], [a + 7, a + 12], [-1, -1], [-1, -1], [0, 5]]
    assert block[0] == block[1] >= 0 and block[2] == block[3] == -1 and block[4] >= 0


def test_provenance_last_entry_wins_and_other_steps_or_paths_do_not_count():
    prov = [(("a.py", 3, 1, 2), ("a.py", 3, 5, 9), ("c.py", 4, 7, 8)), None]
    out = provenance_spans(prov, np.array([0, 0, 1]), np.array([0, 1, 0]), ("a.py", "b.py"), np.array([3, 3, 3]))
    assert out.tolist() == [[5, 9], [-1, -1], [-1, -1]]


def test_zero_width_tokens_anywhere_cover_nothing():
    # (0, 0) special tokens at both ends and a zero-width token inside the span
    offsets = np.array([[0, 0], [0, 3], [3, 3], [3, 6], [6, 9], [0, 0]])
    values, covered = project_tokens(offsets, np.array([[2, 5]]), np.array([1.5]), np.array([1.0]))
    assert values.tolist() == [0.0, 1.5, 0.0, 1.5, 0.0, 0.0]
    assert covered.tolist() == [False, True, False, True, False, False]


def test_gaps_that_merge_are_exactly_whitespace_and_its_escapes():
    rng = np.random.default_rng(0)
    alphabet = [" ", "\t", "\n", "\\", "n", "r", "t", "x", '"', "\u00a0", "\u2003", "é"]
    for _ in range(400):
        gap = "".join(rng.choice(alphabet, size=int(rng.integers(0, 80))))
        action = "a" + gap + "b"
        merged = merge_spans(action, np.array([[0, 1], [len(action) - 1, len(action)]]))
        expected = re.fullmatch(r"(?:\s|\\[nrt])*", gap) is not None
        assert (merged.shape[0] == 1) == expected, repr(gap)


def test_lines_of_one_block_join_without_reading_the_gap():
    spans = np.array([[0, 5], [7, 12], [14, 19]])
    step, member, occurrence = np.zeros(3, np.int64), np.arange(3), np.zeros(3, np.int64)
    action = "a = 1\\nb = 2XXc = 3"  # the gap before "c = 3" is no whitespace
    assert occurrence_spans([action], spans, step, member, occurrence)[0].tolist() == [[0, 12], [14, 19]]
    # told that the last two lines were found as one block, the text between them is not read
    block = np.array([-1, 0, 0])
    assert occurrence_spans([action], spans, step, member, occurrence, block)[0].tolist() == [[0, 19]]


def test_deleted_line_that_prefixes_an_added_line_is_not_placed_inside_it():
    # two search/replace edits of one step; the second one's deleted line is a prefix of its added
    # line. One cursor shared by both kinds, and no line boundaries, put the deleted `res =
    # len(words)` inside the added `res = len(words) + 1` (the cursor stood past the search block).
    action = ("<search>\nn = 0\nres = len(words)\n</search>\n<replace>\nn = 1\nres = len(words) + 1\n</replace>")
    texts = ["-n = 0", "+n = 1", "-res = len(words)", "+res = len(words) + 1"]
    kind = np.array([0, 1, 0, 1])  # diff order: the two hunks one after the other
    spans, _ = locate_blocks([action], texts, np.arange(4), np.zeros(4, np.int64), np.ones(4, bool), skip=1,
                             kind=kind)
    deleted = action.index("res = len(words)\n")
    added = action.index("res = len(words) + 1")
    assert spans.tolist() == [[9, 14], [action.index("n = 1"), action.index("n = 1") + 5],
                              [deleted, deleted + 16], [added, added + 20]]


def test_a_line_is_found_only_between_line_boundaries():
    # written inside a longer line, or as the tail of one, it is not there
    assert locate_lines("res = len(words) + 1\nxres = len(words)\n", ["res = len(words)"]).tolist() == [[-1, -1]]
    # after a line break, its JSON escape, a quote or a tag, and before one (trailing blanks allowed)
    for action in ("a\nres = 1  \nb", '{"s": "a\\nres = 1\\nb"}', "<code>res = 1</code>", "'res = 1'"):
        (s, e), = locate_lines(action, ["res = 1"]).tolist()
        assert action[s:e] == "res = 1", action


def test_a_window_keeps_the_search_inside_it():
    # the deleted line stands in the thought and in old_str; searched in old_str's window only
    action = 'Wrong:\nx = 1\n{"old_str": "x = 1", "new_str": "x = 2"}'
    old = action.index('"x = 1"') + 1
    texts = ["-x = 1"]
    one = np.zeros(1, np.int64)
    spans, _ = locate_blocks([action], texts, one, one, np.ones(1, bool), skip=1)
    assert spans.tolist() == [[7, 12]]  # without a window: the first place, the thought
    spans, _ = locate_blocks([action], texts, one, one, np.ones(1, bool), skip=1,
                             window=np.array([[old, old + 5]]))
    assert spans.tolist() == [[old, old + 5]]
    # a window that does not hold it: not found, not placed elsewhere
    spans, _ = locate_blocks([action], texts, one, one, np.ones(1, bool), skip=1, window=np.array([[0, 4]]))
    assert spans.tolist() == [[-1, -1]]


def test_in_a_window_a_line_is_also_found_without_its_indentation():
    # a script's old string holds `return a + b` without the indentation the file has
    action = "python3 -c \"s.replace('return a + b', 'return a * b')\""
    at = action.index("return a + b")
    one = np.zeros(1, np.int64)
    spans, _ = locate_blocks([action], ["-    return a + b"], one, one, np.ones(1, bool), skip=1,
                             window=np.array([[at - 1, at + 13]]))
    assert spans.tolist() == [[at, at + 12]]
    spans, _ = locate_blocks([action], ["-    return a + b"], one, one, np.ones(1, bool), skip=1)
    assert spans.tolist() == [[-1, -1]]  # the whole action: indentation kept


def test_a_line_ends_before_a_twice_escaped_break():
    # a Python `\n` escape inside a JSON string: backslash, backslash, n
    action = '{"command": "s.replace(\'    for x:\\\\n        y\')"}'
    spans = locate_lines(action, ["    for x:", "        y"])
    assert [action[s:e] for s, e in spans.tolist()] == ["    for x:", "        y"]

