"""util.linediff.BoundedMatcher: SequenceMatcher's alignment, line for line, within its work budget;
a correct alignment (equal blocks equal, the edits rebuilding the new text) past it."""
import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from code_gym.util.linediff import BoundedMatcher

lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "x = 1\n"]), max_size=40)


def rebuilt(a, b, opcodes):
    out = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
    return out


@settings(max_examples=400, derandomize=True, database=None)
@given(lines, lines)
def test_within_the_budget_it_is_sequence_matcher(a, b):
    assert BoundedMatcher(a, b).get_opcodes() == difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


@settings(max_examples=400, derandomize=True, database=None)
@given(lines, lines, st.integers(0, 200))
def test_past_the_budget_the_alignment_is_still_correct(a, b, work):
    matcher = BoundedMatcher(a, b, work=work)
    assert rebuilt(a, b, matcher.get_opcodes()) == b
    blocks = matcher.get_matching_blocks()
    assert blocks[-1] == (len(a), len(b), 0) and all(k for _, _, k in blocks[:-1])
    assert all(x.a + x.size <= y.a and x.b + x.size <= y.b for x, y in zip(blocks, blocks[1:]))


def test_a_local_edit_of_a_costly_file_keeps_the_smallest_diff():
    """Past the budget, the common first and last lines are matched before giving up: a one-line
    edit in a file of repeated lines is still a one-line diff."""
    a = ["x = 1\n"] * 3000 + ["y\n"] + ["x = 1\n"] * 3000
    b = ["x = 1\n"] * 3000 + ["z\n"] + ["x = 1\n"] * 3000
    matcher = BoundedMatcher(a, b, work=1000)
    assert [op for op in matcher.get_opcodes() if op[0] != "equal"] == [("replace", 3000, 3001, 3000, 3001)]
