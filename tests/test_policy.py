"""The built-in policy: candidate edits from the reference patch, branch points, softmax updates."""
import difflib

import numpy as np
import pytest

from code_gym.actions.parse import parse_action
from code_gym.apps.policy import (PARTIAL, REFERENCE, UNTOUCHED, Decision, EditPolicy, branches, build_decisions,
                             token_offsets)
from code_gym.grading.reference import reference_changes
from conftest import BUNDLED

CALC = next(t for t in BUNDLED if t.id == "calc-associativity-decimals")
LEDGER = next(t for t in BUNDLED if t.id == "ledger-allocation")


def apply(text: str, call) -> str:
    old, new = call.arguments["old_str"], call.arguments["new_str"]
    assert text.count(old) == 1
    return text.replace(old, new)


def test_every_hunk_is_a_decision_whose_reference_candidates_rebuild_the_patch():
    decisions = build_decisions(CALC)
    assert [d.path for d in decisions] == ["calc/lexer.py", "calc/parser.py", "calc/parser.py"]
    files = {}
    for d in decisions:
        assert d.labels[0] == REFERENCE and d.labels[-1] == UNTOUCHED and len(set(d.labels[1:-1])) >= 1
        [call] = parse_action(d.candidates[0].action).calls
        assert call.name == "str_replace" and call.arguments["path"] == d.path
        files[d.path] = apply(files.get(d.path, (CALC.repo / d.path).read_text()), call)
    assert {p: t.encode() for p, t in files.items()} == reference_changes(CALC)


def test_candidates_are_real_tool_calls_that_differ_from_the_reference():
    for d in build_decisions(CALC, variants=2):
        reference = parse_action(d.candidates[0].action).calls[0]
        for c in d.candidates[1:]:
            parsed = parse_action(c.action)
            assert not parsed.errors and len(parsed.calls) == 1
            call = parsed.calls[0]
            start, end = c.call
            assert c.action[start:end].startswith('{"name": ')
            if c.kind == UNTOUCHED:
                assert call.name == "view" and call.arguments["view_range"][0] == d.lines[0]
            else:
                assert call.name == "str_replace"
                assert call.arguments["old_str"] == reference.arguments["old_str"]
                assert call.arguments["new_str"] != reference.arguments["new_str"]


def test_mutations_touch_only_the_lines_the_reference_adds():
    for decision in build_decisions(CALC, variants=5):
        call = parse_action(decision.candidates[0].action).calls[0]
        reference = call.arguments["new_str"].splitlines()
        added = changed_indices(call.arguments["old_str"].splitlines(), reference, side=1)
        mutations = [c for c in decision.candidates[1:-1] if c.kind != PARTIAL]
        for c in mutations:
            new = parse_action(c.action).calls[0].arguments["new_str"].splitlines()
            touched = changed_indices(reference, new, side=0)
            assert touched and touched <= added, c.kind


def changed_indices(a, b, side):
    """Indices (in a if side == 0, else in b) of the lines that differ between a and b."""
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return {i for tag, i1, i2, j1, j2 in ops if tag != "equal" for i in (range(i1, i2) if side == 0 else range(j1, j2))}


def test_partial_variants_leave_one_block_of_a_hunk_out():
    money = build_decisions(LEDGER, variants=4)[1]  # the import line and the rounding argument
    partials = [parse_action(c.action).calls[0].arguments["new_str"] for c in money.candidates if c.kind == PARTIAL]
    assert len(partials) == 2
    assert any("ROUND_HALF_UP, Decimal" in p and "rounding=ROUND_HALF_EVEN" in p for p in partials)
    assert any("ROUND_HALF_EVEN, Decimal" in p and "rounding=ROUND_HALF_UP" in p for p in partials)


def test_variants_are_drawn_per_seed_and_capped():
    assert all(len(d.candidates) == 2 for d in build_decisions(CALC, variants=0))
    assert all(len(d.candidates) <= 3 for d in build_decisions(CALC, variants=1))
    with pytest.raises(ValueError, match="variants"):
        build_decisions(CALC, variants=-1)


def test_branches_are_where_the_texts_part():
    found = branches(["xxA1", "xxA2", "xxB"])
    assert [(b.position, b.ways) for b in found] == [(2, ((0, 1), (2,))), (3, ((0,), (1,)))]
    assert found[1].way(2) is None and found[0].way(2) == 1


def decision(texts):
    from code_gym.apps.policy import Candidate
    return Decision("f.py", (1, 1), tuple(Candidate(REFERENCE if i == 0 else "x", t, (0, len(t)))
                                          for i, t in enumerate(texts)))


def test_policy_starts_uniform_and_follows_the_advantage_at_each_branch():
    policy = EditPolicy({"t": [decision(["xxA1", "xxA2", "xxB"]), decision(["p", "q"])]}, lr=1.0)
    first, second = policy.probabilities("t")
    np.testing.assert_allclose(first, [1 / 3] * 3)
    np.testing.assert_allclose(second, [0.5, 0.5])
    assert policy.success_probability("t") == pytest.approx(1 / 6)
    choices = np.array([[0, 0], [2, 1]])
    # advantages per branch on the path; episode 1 (candidate 2) does not pass branch 1 of decision 0
    advantages = [np.array([[1.0, 1.0], [-1.0, 0.0]]), np.array([[1.0], [-1.0]])]
    policy.update("t", choices, advantages)
    first, second = policy.probabilities("t")
    assert first[0] > first[1] and first[0] > 1 / 3 > first[2]
    assert second[0] > 0.5
    assert policy.success_probability("t") > 1 / 6


def test_only_the_branch_advantage_moves_its_branch():
    policy = EditPolicy({"t": [decision(["xxA1", "xxA2", "xxB"])]}, lr=1.0)
    # credit only at the A1/A2 branch: the A-vs-B split must stay as it was
    policy.update("t", np.array([[0]]), [np.array([[0.0, 2.0]])])
    p = policy.probabilities("t")[0]
    assert p[0] + p[1] == pytest.approx(2 / 3) and p[0] > p[1]


def test_update_rejects_mismatched_shapes():
    policy = EditPolicy({"t": [decision(["a", "b"])]})
    with pytest.raises(ValueError, match="episodes, 1"):
        policy.update("t", np.array([0, 1]), [np.zeros((2, 1))])
    with pytest.raises(ValueError, match=r"advantages\[0\]"):
        policy.update("t", np.array([[0], [1]]), [np.zeros((3, 1))])


def test_sampling_follows_the_probabilities():
    policy = EditPolicy({"t": [decision(["a", "b"])]})
    policy.logits["t"][0][0][:] = [5.0, -5.0]
    rng = np.random.default_rng(0)
    assert all(policy.sample("t", rng) == (0,) for _ in range(20))


def test_token_offsets_tile_the_text():
    text = 'Next.\n<tool_call>\n{"name": "view"}\n</tool_call>\n'
    offsets = token_offsets(text)
    assert offsets[0, 0] == 0 and offsets[-1, 1] == len(text)
    assert (offsets[1:, 0] == offsets[:-1, 1]).all()
