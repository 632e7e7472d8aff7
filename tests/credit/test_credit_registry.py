import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import credit

ROOT = Path(__file__).resolve().parents[2]


def test_every_estimator_by_name_takes_the_same_input():
    assert credit.ESTIMATORS == ("didpo", "didpo-contrast", "didpo-split", "grpo", "dr_grpo", "rloo", "gigpo")
    assert credit.STEP_LEVEL == ("didpo", "didpo-contrast", "didpo-split", "gigpo")
    trajs = [credit.Trajectory("q", [credit.Step("ab", "", token_offsets=[(0, 2)])], r) for r in (1, 0)]
    for name in credit.ESTIMATORS:
        res = credit.get(name)(trajs)
        assert res.estimator == name and credit.get(name).__name__ == name  # a preset's results carry its name
        assert res.episode.shape == (2,) and res.steps.returns.shape == (2,)
        assert [t[0].shape for t in res.tokens] == [(1,), (1,)]


def test_a_preset_binds_its_options_and_a_call_overrides_them():
    trajs = [credit.Trajectory("q", [credit.Step("ab", "", token_offsets=[(0, 2)])], r) for r in (1, 0)]
    preset = credit.get("didpo-contrast")
    np.testing.assert_allclose(preset(trajs).tokens[0][0], credit.didpo(trajs, baseline="contrast").tokens[0][0])
    np.testing.assert_allclose(preset(trajs, baseline="reference").episode, credit.didpo(trajs).episode)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid names: didpo, didpo-contrast, didpo-split, grpo, dr_grpo, rloo, gigpo"):
        credit.get("ppo")


def test_credit_imports_nothing_from_code_gym():
    for path in (ROOT / "credit").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("code_gym", "integrations") for n in names), path


def test_numpy_only_use_never_imports_torch():
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
sys.path.insert(0, {str(ROOT / 'tests' / 'credit')!r})
import numpy as np
import credit
from credit_testlib import added_hunk, file_diff, insert_call, offsets
lines = ["def f(x):", "    return x + 1"]
action = insert_call("m.py", lines)
step = credit.Step(action, file_diff("m.py", added_hunk(lines, 3)), token_offsets=offsets(action))
trajs = [credit.Trajectory("q", [step], r) for r in (1, 0)]
for name in credit.ESTIMATORS:
    credit.get(name)(trajs)
credit.episode_advantage(np.array([1.0, 0.0]), [0, 0])
credit.token_advantages(np.ones((2, len(step.offsets)), bool), [0, 0], [0, 1], [0, 0], [1.0, 0.0],
                        actions=[action] * 2, diffs=[step.diff] * 2, token_offsets=[step.offsets] * 2)
assert "torch" not in sys.modules, "torch was imported"
assert not any(m.startswith("code_gym") for m in sys.modules)
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_check_options_refuses_names_and_values_before_a_run():
    credit.check_options("didpo", {"lambda_": 0.5, "cover": "call"})
    credit.check_options("didpo-contrast", {"contrast_shrink": 2.0})
    for name, options, message in (("didpo", {"lamda": 1}, "has no option 'lamda'; its options: mode, "),
                                   ("grpo", {"baseline": "contrast"}, "estimator 'grpo' has no option 'baseline'"),
                                   ("didpo", {"mode": "bogus"}, "mode must be one of"),
                                   ("didpo", {"max_anchors": "None"}, "max_anchors")):
        with pytest.raises(ValueError, match=message):
            credit.check_options(name, options)
