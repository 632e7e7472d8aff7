"""DiDPO's options as one frozen config (`credit.DiDPOConfig`) and its named presets
(`credit.PRESETS`, estimator names in `credit.registry`): a preset, a config and the same keyword
options give the same advantages; a bad option fails when the config is made, naming what it takes."""
import dataclasses
import functools
import itertools

import numpy as np
import pytest
from credit_testlib import added_hunk, file_diff, insert_call, load_bench, offsets

import credit
from credit import registry
from credit.config import OPTIONS, preset

REGION = {"a.py": ["def total(xs):", "    s = 0", "    for x in xs:", "        s += x", "    return s"],
          "b.py": ["def mean(xs):", "    if not xs:", "        return 0.0", "    return sum(xs) / len(xs)"]}
WEIGHT = {"a.py": 0.7, "b.py": 0.3}
PRESET_OPTIONS = {  # what each preset is documented to be (docs/credit.md)
    "didpo": {},
    "didpo-contrast": {"baseline": "contrast"},
    "didpo-split": {"baseline": "split", "cover": "call"},
}


def _call_span(action: str) -> tuple[int, int]:
    return action.index("<tool_call>") + len("<tool_call>"), action.index("</tool_call>")


def _step(path: str, fixed: bool) -> credit.Step:
    """An edit of the region in `path` (with its call's span), or a step that only views the file."""
    if fixed:
        action = insert_call(path, REGION[path])
        diff = file_diff(path, added_hunk(REGION[path], 10))
    else:
        action, diff = f'Leave it.\n<tool_call>{{"name": "view", "arguments": {{"path": "{path}"}}}}</tool_call>', ""
    return credit.Step(action, diff, token_offsets=offsets(action), calls=[_call_span(action)])


def regions_batch() -> list[credit.Trajectory]:
    """Two regions of one task, every combination of fixing them twice; the second copy of each
    scores 0.1 less, so every estimator sees spread inside its groups."""
    return [credit.Trajectory("q", [_step(p, f) for p, f in zip(REGION, fixed)],
                              sum(WEIGHT[p] for p, f in zip(REGION, fixed) if f) - 0.1 * copy)
            for fixed in itertools.product([True, False], repeat=2) for copy in range(2)]


BATCHES = {"regions": regions_batch, "bench": lambda: load_bench().rollouts(2, 6, 4, seed=3)}


def assert_same_result(a: credit.Result, b: credit.Result) -> None:
    np.testing.assert_array_equal(a.episode, b.episode)
    np.testing.assert_array_equal(a.steps.returns, b.steps.returns)
    for x, y in zip((a.steps.diff_row, a.steps.diff_anchor, a.steps.diff_advantage),
                    (b.steps.diff_row, b.steps.diff_anchor, b.steps.diff_advantage)):
        np.testing.assert_array_equal(x, y)
    assert [len(t) for t in a.tokens] == [len(t) for t in b.tokens]
    for steps_a, steps_b in zip(a.tokens, b.tokens):
        for x, y in zip(steps_a, steps_b):
            np.testing.assert_array_equal(x, y)


def token_values(result: credit.Result) -> np.ndarray:
    return np.concatenate([v for steps in result.tokens for v in steps])


def test_presets_are_the_documented_configs_and_estimator_names():
    assert tuple(credit.PRESETS) == tuple(PRESET_OPTIONS)
    assert registry.PRESETS is credit.PRESETS
    for name, options in PRESET_OPTIONS.items():
        assert credit.PRESETS[name] == credit.DiDPOConfig(**options) and preset(name) is credit.PRESETS[name]
        assert name in credit.ESTIMATORS and name in credit.STEP_LEVEL
    assert credit.PRESETS["didpo"] == credit.DiDPOConfig()  # the paper's rules are the default
    with pytest.raises(TypeError):
        credit.PRESETS["mine"] = credit.DiDPOConfig()  # the table is read-only


def test_an_unknown_preset_lists_the_known_ones():
    batch = regions_batch()
    with pytest.raises(ValueError, match=r"unknown DiDPO preset 'didpo-best'; known presets: didpo, didpo-contrast, "
                                         r"didpo-split$"):
        credit.didpo(batch, config="didpo-best")
    with pytest.raises(ValueError, match="known presets: didpo, "):
        preset(None)
    with pytest.raises(ValueError, match="unknown estimator 'didpo-best'; valid names: didpo, didpo-contrast, didpo-split"):
        credit.get("didpo-best")
    with pytest.raises(TypeError, match=r"config must be a credit.DiDPOConfig or a preset name \(didpo, "):
        credit.didpo(batch, config={"baseline": "split"})


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name", PRESET_OPTIONS)
def test_a_preset_config_and_the_same_keywords_give_the_same_advantages(name, batch):
    trajectories = BATCHES[batch]()
    by_keywords = credit.didpo(trajectories, **PRESET_OPTIONS[name])
    for result in (credit.didpo(trajectories, config=name), credit.didpo(trajectories, config=credit.PRESETS[name]),
                   credit.get(name)(trajectories)):
        assert_same_result(result, by_keywords)
    assert credit.get(name)(trajectories).estimator == name


def test_the_presets_differ_on_a_batch_of_regions():
    # else the equality above could not tell one preset from another
    batch = regions_batch()
    values = {name: token_values(credit.didpo(batch, config=name)) for name in credit.PRESETS}
    for a, b in itertools.combinations(values, 2):
        assert not np.allclose(values[a], values[b]), (a, b)


def test_keyword_overrides_replace_the_configs_fields():
    batch = regions_batch()
    halved = dataclasses.replace(credit.PRESETS["didpo-split"], lambda_=0.5)
    assert halved == credit.DiDPOConfig(baseline="split", cover="call", lambda_=0.5)
    expected = credit.didpo(batch, baseline="split", cover="call", lambda_=0.5)
    for result in (credit.didpo(batch, config="didpo-split", lambda_=0.5), credit.didpo(batch, config=halved),
                   credit.get("didpo-split")(batch, lambda_=0.5)):
        assert_same_result(result, expected)
    assert not np.allclose(token_values(expected), token_values(credit.didpo(batch, config="didpo-split")))
    # an override may undo a preset's own option
    assert_same_result(credit.didpo(batch, config="didpo-split", cover="lines"), credit.didpo(batch, baseline="split"))
    assert_same_result(credit.get("didpo-contrast")(batch, baseline="reference"), credit.didpo(batch))


@pytest.mark.parametrize("options, message", [
    ({"baseline": "effect"}, r"baseline must be one of \('reference', 'contrast', 'within', 'nested', 'split'\), "
                             r"got 'effect'"),
    ({"cover": "tokens"}, r"cover must be one of \('lines', 'edit', 'call'\), got 'tokens'"),
    ({"count": "rows"}, r"count must be one of \('steps', 'trajectories'\), got 'rows'"),
    ({"singleton": "drop"}, r"singleton must be one of \('reward', 'zero'\), got 'drop'"),
    ({"mode": "std"}, r"mode must be one of \('mean_norm', 'mean_std_norm'\), got 'std'"),
    ({"levels": ("file", "line")}, r"levels must be a non-empty subset of \('file', 'hunk', 'syntax', 'block'\)"),
    ({"levels": "file"}, "levels must be a non-empty subset"),
    ({"syntax": "ast"}, r"syntax must be one of \("),
    ({"phi_form": "cubic"}, "form must be one of"),
    ({"gamma": 1.5}, "gamma must be a finite number >= 0 and <= 1, got 1.5"),
    ({"similarity": 0.0}, r"similarity \(in \(0, 1\]; 1.0: exact groups only\) must be a finite number > 0"),
    ({"max_anchors": 0}, r"max_anchors \(or None: no cap\) must be a finite number >= 1, got 0"),
    ({"lambda_": float("nan")}, "lambda_ must be a finite number, got nan"),
])
def test_a_bad_option_fails_when_the_config_is_made(options, message):
    with pytest.raises(ValueError, match=message):
        credit.DiDPOConfig(**options)
    with pytest.raises(ValueError, match=message):  # the same check for an override of a preset
        credit.didpo(regions_batch(), config="didpo-split", **options)
    with pytest.raises(ValueError, match=f"estimator 'didpo-split': {message}"):
        credit.check_options("didpo-split", options)


def test_a_wrong_type_or_an_unknown_option_is_a_type_error():
    for options, message in (({"max_anchors": 1.5}, "max_anchors .* must be an integer, got 1.5"),
                             ({"lambda_": "1"}, "lambda_ must be a number"),
                             ({"contrast_std": "yes"}, "contrast_std must be True or False")):
        with pytest.raises(TypeError, match=message):
            credit.DiDPOConfig(**options)
    with pytest.raises(TypeError, match=r"didpo has no option 'lamda'; its options: mode, eps, gamma, lambda_, "):
        credit.didpo(regions_batch(), lamda=0.5)
    with pytest.raises(ValueError, match="estimator 'didpo-split' has no option 'lamda'; its options: mode, eps, "):
        credit.check_options("didpo-split", {"lamda": 0.5})
    credit.check_options("didpo-split", {"lambda_": 0.5, "levels": ["file", "hunk"]})


def test_the_config_is_frozen_and_hashable_with_its_values_normalised():
    config = credit.DiDPOConfig(levels=["file", "hunk"], eps=0, max_anchors=np.int64(3), contrast_std=np.bool_(True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lambda_ = 0.5
    assert config.levels == ("file", "hunk") and type(config.eps) is float and type(config.max_anchors) is int
    assert type(config.contrast_std) is bool
    same = credit.DiDPOConfig(levels=("file", "hunk"), eps=0.0, max_anchors=3, contrast_std=True)
    assert config == same and hash(config) == hash(same) and len({config, same, credit.DiDPOConfig()}) == 2
    assert {credit.PRESETS["didpo-split"]: "best"}[credit.DiDPOConfig(baseline="split", cover="call")] == "best"
    assert OPTIONS == tuple(f.name for f in dataclasses.fields(credit.DiDPOConfig)) and len(OPTIONS) == 18


def test_the_array_entry_point_takes_a_preset_name():
    batch = regions_batch()
    steps = [(i, t, s) for i, traj in enumerate(batch) for t, s in enumerate(traj.steps)]
    width = max(len(s.token_offsets) for _, _, s in steps)
    mask = np.array([[k < len(s.token_offsets) for k in range(width)] for _, _, s in steps])
    advantages, result = credit.token_advantages(
        mask, [batch[i].task_id for i, _, _ in steps], [i for i, _, _ in steps], [t for _, t, _ in steps],
        [batch[i].reward for i, _, _ in steps], estimator="didpo-split", actions=[s.action for *_, s in steps],
        diffs=[s.diff for *_, s in steps], token_offsets=[s.token_offsets for *_, s in steps],
        calls=[s.calls for *_, s in steps], return_result=True)
    assert result.estimator == "didpo-split"
    expected = credit.didpo(batch, config="didpo-split")
    np.testing.assert_allclose(advantages[mask], token_values(expected))
    # a config of one's own: the estimator function with it bound
    own = credit.DiDPOConfig(baseline="split", cover="call", lambda_=0.5)
    advantages = credit.token_advantages(
        mask, [batch[i].task_id for i, _, _ in steps], [i for i, _, _ in steps], [t for _, t, _ in steps],
        [batch[i].reward for i, _, _ in steps], estimator=functools.partial(credit.didpo, config=own),
        actions=[s.action for *_, s in steps], diffs=[s.diff for *_, s in steps],
        token_offsets=[s.token_offsets for *_, s in steps], calls=[s.calls for *_, s in steps])
    np.testing.assert_allclose(advantages[mask], token_values(credit.didpo(batch, config=own)))
