import json

import numpy as np
import pytest
from credit_testlib import added_hunk, code_span, file_diff, insert_call, offsets, token_mask

import credit
from credit.text import similarity

AREA = ["def area(w, h):", "    if w < 0 or h < 0:", "        raise ValueError('negative')", "    return w * h"]
F_GOOD = ["def parse_price(text):", "    cleaned = text.strip().replace(',', '')", "    if not cleaned:",
          "        return 0.0", "    return float(cleaned)"]
F_BAD = ["def parse_price(text):", "    parts = text.split('.')", "    whole = int(parts[0])",
         "    cents = int(parts[1]) if len(parts) > 1 else 0", "    return whole + cents / 100"]
G = ["def format_price(value):", "    sign = '-' if value < 0 else ''", "    value = abs(value)",
     "    return sign + '$' + format(value, ',.2f')"]


def one_step(code_blocks, reward, task="q"):
    """A one-step rollout that inserts each code block as its own hunk, all in one tool call."""
    hunks, start = [], 10
    for block in code_blocks:
        hunks.append(added_hunk(block, start))
        start += len(block) + 20
    action = insert_call("shop.py", [line for block in code_blocks for line in block + [""]])
    step = credit.Step(action, file_diff("shop.py", *hunks), token_offsets=offsets(action))
    return credit.Trajectory(task, [step], reward)


def tokens_on(result, i, action, lines):
    return result.tokens[i][0][token_mask(action, code_span(action, lines))]


def test_identical_function_in_all_rollouts():
    trajs = [one_step([AREA], r) for r in (1, 1, 0, 0)]
    res = credit.didpo(trajs)
    np.testing.assert_allclose(res.episode, [0.5, 0.5, -0.5, -0.5])
    assert len(res.anchors) == 1 and res.anchors[0].kind == "added" and res.anchors[0].size == 4
    np.testing.assert_allclose(res.anchors[0].advantage, [0.5, 0.5, -0.5, -0.5])
    for i, expected in enumerate([1.0, 1.0, -1.0, -1.0]):
        action = trajs[i].steps[0].action
        inside = token_mask(action, code_span(action, AREA))
        assert 10 < inside.sum() < inside.shape[0]
        np.testing.assert_allclose(res.tokens[i][0][inside], expected)
        np.testing.assert_allclose(res.tokens[i][0][~inside], expected / 2)


def test_variants_of_f_and_a_shared_g_reference_baseline():
    assert similarity("\n".join(F_GOOD + G), "\n".join(F_BAD + G)) < 0.8  # the file-level units do not merge
    trajs = [one_step([F_GOOD, G], 1), one_step([F_GOOD, G], 1), one_step([F_BAD, G], 0), one_step([F_BAD, G], 0)]
    res = credit.didpo(trajs)
    for i, sign in enumerate([1, 1, -1, -1]):
        action = trajs[i].steps[0].action
        f_lines = F_GOOD if sign > 0 else F_BAD
        # each f variant's group is homogeneous in return: A^D = 0, f tokens keep A^E
        np.testing.assert_allclose(tokens_on(res, i, action, f_lines), 0.5 * sign)
        np.testing.assert_allclose(tokens_on(res, i, action, G), 1.0 * sign)
    assert sorted(a.size for a in res.anchors) == [2, 2, 4]


def test_variants_of_f_and_a_shared_g_contrast_baseline():
    trajs = [one_step([F_GOOD, G], 1), one_step([F_GOOD, G], 1), one_step([F_BAD, G], 0), one_step([F_BAD, G], 0)]
    res = credit.didpo(trajs, baseline="contrast")
    by_preview = {a.preview.splitlines()[1]: a for a in res.anchors}
    assert by_preview[G[1]].advantage.tolist() == [0.0] * 4  # everyone made it: no effect to measure
    assert by_preview[F_GOOD[1]].advantage.tolist() == [1.0, 1.0]
    assert by_preview[F_BAD[1]].advantage.tolist() == [-1.0, -1.0]
    for i, sign in enumerate([1, 1, -1, -1]):
        action = trajs[i].steps[0].action
        np.testing.assert_allclose(tokens_on(res, i, action, G), 0.5 * sign)
        np.testing.assert_allclose(tokens_on(res, i, action, F_GOOD if sign > 0 else F_BAD), 1.5 * sign)


def test_contrast_std_and_shrinkage():
    trajs = [one_step([F_GOOD, G], 1), one_step([F_GOOD, G], 1), one_step([F_BAD, G], 0), one_step([F_BAD, G], 0)]
    res = credit.didpo(trajs, baseline="contrast", contrast_std=True, contrast_shrink=1.0, eps=0.0)
    good = next(a for a in res.anchors if a.preview.splitlines()[1] == F_GOOD[1])
    # Delta = 1, task std (population) = 0.5, n = 2 trajectories: 1 / 0.5 * 2 / (2 + 1)
    np.testing.assert_allclose(good.advantage, [4 / 3, 4 / 3])


def test_mean_std_norm_divides_a_d_by_the_population_std():
    trajs = [one_step([AREA], r) for r in (1, 0, 0, 0)]
    res = credit.didpo(trajs, mode="mean_std_norm", eps=0.0)
    g = np.array([1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(res.anchors[0].advantage, (g - g.mean()) / g.std())


def test_a_near_duplicate_with_a_renamed_variable_shares_the_anchor():
    renamed = [line.replace(" h", " height").replace("h)", "height)") for line in AREA]
    assert renamed != AREA
    trajs = [one_step([AREA], 1), one_step([renamed], 0), one_step([["x = 1"]], 0)]
    res = credit.didpo(trajs)
    assert len(res.anchors) == 1
    assert res.anchors[0].trajectories.tolist() == [0, 1]
    np.testing.assert_allclose(res.anchors[0].advantage, [0.5, -0.5])


def test_empty_diff_gets_no_diff_advantage_and_returns_use_gamma():
    def rollout(reward):
        first = one_step([AREA], 0).steps[0]
        second = credit.Step("running the tests", "", token_offsets=offsets("running the tests"))
        return credit.Trajectory("q", [first, second], reward)

    res = credit.didpo([rollout(1), rollout(0)], gamma=0.5)
    np.testing.assert_allclose(res.steps.returns, [0.5, 1.0, 0.0, 0.0])
    # the edit step's A^D compares G_0: [0.5, 0] around 0.25
    np.testing.assert_allclose(res.anchors[0].advantage, [0.25, -0.25])
    assert res.steps.diff_row.tolist() == [0, 2]
    np.testing.assert_allclose(res.tokens[0][1], 0.5)
    np.testing.assert_allclose(res.tokens[1][1], -0.5)


def test_provenance_points_at_the_characters_that_wrote_the_lines():
    code = "\n".join(AREA)
    escaped = json.dumps(code)[1:-1]
    action = f"Plan:\n{escaped}\n<tool_call>{json.dumps({'name': 'insert', 'arguments': {'new_str': code}})}</tool_call>"
    second = action.index(escaped, action.index("<tool_call>"))
    prov, pos = [], second
    for k, line in enumerate(AREA):
        esc = json.dumps(line)[1:-1]
        prov.append(("shop.py", 10 + k, pos, pos + len(esc)))
        pos += len(esc) + 2
    step = credit.Step(action, file_diff("shop.py", added_hunk(AREA, 10)), token_offsets=offsets(action),
                       provenance=prov)
    trajs = [credit.Trajectory("q", [step], r) for r in (1, 0)]
    res = credit.didpo(trajs)
    plan = token_mask(action, (6, 6 + len(escaped)))
    call = token_mask(action, (second, second + len(escaped)))
    np.testing.assert_allclose(res.tokens[0][0][call], 1.0)
    np.testing.assert_allclose(res.tokens[0][0][plan], 0.5)
    # without provenance the text search finds the first copy, in the plan
    plain = credit.didpo([credit.Trajectory("q", [credit.Step(action, step.diff, token_offsets=offsets(action))], r)
                          for r in (1, 0)])
    np.testing.assert_allclose(plain.tokens[0][0][plan], 1.0)
    # the same file written "./shop.py" or "sub/../shop.py" by the tool: found all the same (before,
    # no line matched the diff's "shop.py" and the tokens got no A^D at all)
    for written in ("./shop.py", "sub/../shop.py"):
        moved = credit.Step(action, step.diff, token_offsets=offsets(action),
                            provenance=[(written, line, a, b) for _, line, a, b in prov])
        got = credit.didpo([credit.Trajectory("q", [moved], r) for r in (1, 0)])
        np.testing.assert_array_equal(got.tokens[0][0], res.tokens[0][0])


def test_deleted_lines_form_their_own_anchor_located_in_old_str():
    old = ["def legacy(x):", "    y = x * 2", "    z = y + 1", "    return z"]
    diff = file_diff("shop.py", "@@ -5,4 +5,0 @@\n" + "".join("-" + line + "\n" for line in old))
    args = {"command": "str_replace", "old_str": "\n".join(old), "new_str": ""}
    call = {"name": "str_replace_editor", "arguments": args}
    action = "Remove it.\n<tool_call>" + json.dumps(call) + "</tool_call>"
    trajs = [credit.Trajectory("q", [credit.Step(action, diff, token_offsets=offsets(action))], r) for r in (1, 0)]
    res = credit.didpo(trajs)
    assert [a.kind for a in res.anchors] == ["deleted"]
    np.testing.assert_allclose(res.tokens[0][0][token_mask(action, code_span(action, old))], 1.0)


def test_dicts_are_accepted_and_torch_offsets_give_torch_tokens():
    torch = pytest.importorskip("torch")
    trajs = [one_step([AREA], r) for r in (1, 0)]
    as_dicts = credit.didpo([t.to_dict() for t in trajs])
    np.testing.assert_allclose(as_dicts.tokens[0][0], credit.didpo(trajs).tokens[0][0])
    step = trajs[0].steps[0]
    torch_step = credit.Step(step.action, step.diff, token_offsets=torch.from_numpy(step.offsets))
    with_torch = credit.Trajectory("q", [torch_step], 1)
    res = credit.didpo([with_torch, trajs[1]])
    assert isinstance(res.tokens[0][0], torch.Tensor) and isinstance(res.tokens[1][0], np.ndarray)
    np.testing.assert_allclose(res.tokens[0][0].numpy(), as_dicts.tokens[0][0])


def test_stats_report_timings_coverage_and_group_sizes():
    trajs = [one_step([AREA], r) for r in (1, 1, 0, 0)] + [one_step([["x = 1"]], 1, task="other")]
    res = credit.didpo(trajs)
    st = res.stats
    phases = {"input_conversion", "episode", "split", "group", "anchors", "advantage", "project", "total"}
    assert set(st["time_ms"]) == set(st["cpu_ms"]) == phases
    assert st["n_anchors"] == 1 and st["group_size"] == {"mean": 4.0, "median": 4.0, "max": 4}
    assert st["coverage"]["lines"] == pytest.approx(16 / 17)
    assert st["coverage"]["steps"] == pytest.approx(4 / 5)
    assert 0 < st["coverage"]["tokens"] < 1 and st["coverage"]["occurrences_located"] == 1.0
    # the singleton task keeps its reward (reference singleton rule)
    assert res.episode[4] == 1.0
    assert credit.didpo(trajs, singleton="zero").episode[4] == 0.0


def test_options_are_checked():
    trajs = [one_step([AREA], 1)]
    with pytest.raises(ValueError, match="baseline must be one of"):
        credit.didpo(trajs, baseline="effect")
    with pytest.raises(ValueError, match="count must be one of"):
        credit.didpo(trajs, count="rows")
    nan = float("nan")
    for options, message in (({"similarity": 0.0}, r"similarity \(in \(0, 1\]"), ({"levels": "file"}, "levels must be"),
                             ({"syntax": "ast"}, "syntax must be one of"), ({"s0": 0.0}, "s0 must be a finite number > 0"),
                             ({"psi_form": "cubic"}, "form must be one of"), ({"max_anchors": 0}, "max_anchors"),
                             ({"lambda_": nan}, "lambda_ must be a finite number, got nan"),
                             ({"eps": -0.5}, "eps must be a finite number >= 0"), ({"g0": float("inf")}, "g0"),
                             ({"s0": nan}, "s0"), ({"contrast_shrink": nan}, "contrast_shrink"),
                             ({"gamma": 1.5}, "gamma must be a finite number >= 0 and <= 1")):
        with pytest.raises(ValueError, match=message):
            credit.didpo(trajs, **options)
    # NaN options reached the advantages, and a cap of 1.5 gave two anchors a task: now all refused
    for options, message in (({"max_anchors": 1.5}, "max_anchors .* must be an integer, got 1.5"),
                             ({"max_anchors": "3"}, "max_anchors"), ({"lambda_": "1"}, "lambda_ must be a number"),
                             ({"similarity": True}, "similarity"), ({"contrast_std": "yes"}, "contrast_std")):
        with pytest.raises(TypeError, match=message):
            credit.didpo(trajs, **options)
    for name, options in (("grpo", {"eps": nan}), ("gigpo", {"omega": nan}), ("rloo", {"gamma": -1.0}),
                          ("dr_grpo", {"gamma": nan})):
        with pytest.raises(ValueError, match=next(iter(options))):
            credit.get(name)(trajs, **options)
    bad = credit.Trajectory("q", [credit.Step("a", "not a diff")], 1)
    with pytest.raises(ValueError, match=r"trajectory 0 \(task 'q'\), step 0: diff is not empty"):
        credit.didpo([bad])


def test_one_diff_over_two_languages_ignores_each_ones_comments():
    def rollout(comment, reward):
        py = ["def f(x):", f"    # {comment}", "    return x * 2"]
        c = ["int g(int x) {", f"    // {comment}", "    return x * 2;", "}"]
        action = insert_call("a.py", py) + insert_call("b.c", c)
        diff = file_diff("a.py", added_hunk(py, 3)) + file_diff("b.c", added_hunk(c, 7))
        return credit.Trajectory("q", [credit.Step(action, diff, token_offsets=offsets(action))], reward)

    res = credit.didpo([rollout("double it", 1), rollout("twice", 0)])
    assert sorted(a.preview.splitlines()[0] for a in res.anchors) == ["def f(x):", "int g(int x) {"]
    assert all(a.size == 2 for a in res.anchors)


def test_tokens_are_the_same_read_in_windows_or_as_arrays():
    """List offsets read in windows around the spans (the projection adds by token positions), or
    given as arrays (read whole: it adds by a mask of the rows' tokens): the same values reach the
    same tokens, and a step without offsets stays None."""
    trajs = [one_step([F_GOOD, G], 1), one_step([F_GOOD, G], 1), one_step([F_BAD, G], 0), one_step([F_BAD, G], 0)]
    as_arrays = [{"task_id": t.task_id, "reward": t.reward,
                  "steps": [{"action": s.action, "diff": s.diff, "token_offsets": s.token_offsets} for s in t.steps]}
                 for t in trajs]
    as_lists = json.loads(json.dumps(as_arrays, default=np.ndarray.tolist))
    for rows in (as_arrays, as_lists):  # a step with nothing to train on, after one that has
        rows.append({"task_id": "q", "reward": 0.5, "steps": [dict(rows[0]["steps"][0]),
                                                             {"action": "no tokens here", "diff": ""}]})
    want = credit.didpo(as_arrays)
    assert want.tokens[-1][1] is None and want.stats["coverage"]["tokens"] > 0.2
    runs = {"windows": credit.didpo(as_lists)}
    for name, got in runs.items():
        assert len(got.tokens) == len(want.tokens), name
        for got_steps, want_steps in zip(got.tokens, want.tokens):
            for g, w in zip(got_steps, want_steps, strict=True):
                assert (g is None) == (w is None), name
                if w is not None:
                    np.testing.assert_array_equal(g, w, err_msg=name)
    assert not np.array_equal(want.tokens[0][0], np.full_like(want.tokens[0][0], want.tokens[0][0][0]))


@pytest.mark.parametrize("encode", [
    lambda text: text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027"),
    lambda text: text.replace("/", "\\/"),
], ids=["html-safe JSON (tojson)", "escaped slashes"])
def test_lines_in_json_as_other_encoders_write_it_are_found(encode):
    # Jinja's tojson and Go write <, >, & and ' as \u003c ...; PHP escapes every /: before, the
    # lines holding them were found nowhere (0 of 30 tokens), while a stat said every occurrence was
    lines = ["if a < b and b > 0:", "    x = a & b", "    y = 'q/r'"]
    plain = json.dumps({"name": "create", "arguments": {"path": "m.py", "file_text": "\n".join(lines)}})
    diff = file_diff("m.py", added_hunk(lines, 1))

    def run(action):
        return credit.didpo([credit.Trajectory("q", [credit.Step(action, diff, token_offsets=offsets(action))], r)
                             for r in (1, 1, 0, 0)])

    want, got = run(plain), run(encode(plain))
    assert want.stats["coverage"]["lines_located"] == got.stats["coverage"]["lines_located"] == 1.0
    for result, action in ((want, plain), (got, encode(plain))):
        text = json.dumps("\n".join(lines))[1:-1] if result is want else encode(json.dumps("\n".join(lines))[1:-1])
        inside = token_mask(action, (action.index(text), action.index(text) + len(text)))
        np.testing.assert_allclose(result.tokens[0][0][inside], 1.0)
        np.testing.assert_allclose(result.tokens[0][0][~inside], 0.5)


@pytest.mark.parametrize("crlf", [False, True])
def test_an_anchor_preview_is_its_first_lines_joined_and_cut(crlf):
    """Anchor.preview: the representative occurrence's changed lines joined by line breaks (no
    carriage returns left on them), cut at 240 characters."""
    long = ["def long_name(x):"] + [f"    value_{k} = x * {k} + {k * 7}  # a line long enough to run past the cut" for k in
                                    range(8)] + ["    return x"]
    trajs = [one_step([long, AREA], r) for r in (1, 0, 1)]
    if crlf:
        trajs = [credit.Trajectory(t.task_id, [credit.Step(s.action, s.diff.replace("\n", "\r\n"),
                                                           token_offsets=s.token_offsets) for s in t.steps], t.reward)
                 for t in trajs]
    res = credit.didpo(trajs, levels=("hunk",))
    previews = sorted(a.preview for a in res.anchors)
    assert previews == sorted(["\n".join(long)[:240], "\n".join(AREA)])
    assert len(previews[1]) == 240 and "\r" not in "".join(previews)
