import json

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
    out = provenance_spans([prov], [["a.py", "a.py", "b.py"]], np.array([3, 4, 3]))
    assert out.tolist() == [[10, 20], [-1, -1], [30, 40]]
