"""Reward specs and components on hand-made grades, then through CodeRepo-v0: the breakdown, the
integrity policy, step shaping, hints."""
import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from code_gym.actions.parse import ToolCall
from code_gym.grading.grade import GradeResult
from code_gym.grading.audit import Finding
from code_gym.actions.replay import hermes
from code_gym.env.hints import hint_units, reference_hint
from code_gym.rewards import (AllPass, FailToPass, PassFraction, ProbeScore, RewardSpec, StaticScore, StepShaping, Submission, make_reward,
                              passed_count, static_checks, total)
from code_gym.actions.tools import RunRecords, ToolResult

from conftest import BUNDLED

SUBMIT = hermes([{"name": "submit", "arguments": {}}])
VISIBLE, HIDDEN_ADD, HIDDEN_MUL = ("tests/test_calc.py::test_add_zero", "tests/test_hidden_calc.py::test_add",
                                   "tests/test_hidden_calc.py::test_mul")
FIXED_ADD = b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"


def graded(outcomes: dict, exit_code: int = 1, integrity=None, **kw) -> GradeResult:
    return GradeResult(outcomes, exit_code, False, "", 0.1, integrity=integrity, **kw)


def sub(task, result, changes=None) -> Submission:
    return Submission(task, changes if changes is not None else {"calc/ops.py": FIXED_ADD}, result)


# -- specs --------------------------------------------------------------------------------------

def test_spec_by_name_dict_options_and_object():
    assert [(n, w, c) for n, w, c in make_reward().components] == [("f2p", 0.75, FailToPass()),
                                                                  ("probes", 0.25, ProbeScore())]
    assert [(n, w, c) for n, w, c in make_reward("f2p").components] == [("f2p", 1.0, FailToPass())]
    spec = make_reward({"tests": 1.0, "static": 0.1, "shaping": True}, integrity="report", integrity_penalty=-1)
    assert [(n, w, type(c)) for n, w, c in spec.components] == [("tests", 1.0, PassFraction), ("static", 0.1, StaticScore)]
    assert spec.shaping == StepShaping(0.15, 0.01) and spec.integrity == "report" and spec.integrity_penalty == -1.0
    weighted = make_reward({"fraction": {"weight": 2, "hidden": 3.0}, "shaping": {"progress": 0.2, "invalid": 0}})
    assert weighted.components[0][1] == 2.0 and weighted.components[0][2] == PassFraction(hidden=3.0)
    assert weighted.shaping == StepShaping(0.2, 0.0)
    assert make_reward(spec) is spec


@pytest.mark.parametrize("bad,message", [
    ("accuracy", "unknown reward component"), ({}, "non-empty"), ({"fraction": "1"}, "takes a weight"),
    ({"fraction": True}, "takes a weight"), ({"shaping": True}, "at least one outcome"),
    ({"binary": {"hidden": 2}}, "does not take options"), ({"fraction": {"hidden": -1}}, ">= 0"),
    ({"fraction": 1, "shaping": {"bonus": 1}}, "progress"), ({"fraction": 1, "shaping": 0.1}, "shaping must be"),
])
def test_bad_specs_say_what_to_do(bad, message):
    with pytest.raises(ValueError, match=message):
        make_reward(bad)


def test_bad_integrity_mode_is_refused():
    with pytest.raises(ValueError, match="integrity must be one of"):
        make_reward("binary", integrity="lenient")


# -- test components ----------------------------------------------------------------------------

def test_binary_and_fraction(tiny_task):
    partial = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "failed"})
    assert AllPass()(sub(tiny_task, partial)) == 0.0
    assert PassFraction()(sub(tiny_task, partial)) == pytest.approx(2 / 3)
    assert PassFraction(hidden=3.0)(sub(tiny_task, partial)) == pytest.approx((1 + 3) / (1 + 3 + 3))
    everything = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "passed"}, exit_code=0)
    assert AllPass()(sub(tiny_task, everything)) == 1.0
    crashed = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "passed"}, exit_code=2)
    assert AllPass()(sub(tiny_task, crashed)) == 0.0 and PassFraction()(sub(tiny_task, crashed)) == 0.0


def test_f2p_pays_for_what_the_task_asks_and_charges_for_what_broke(tiny_task):
    task = dataclasses.replace(tiny_task, fail_to_pass=(HIDDEN_ADD, HIDDEN_MUL), pass_to_pass=(VISIBLE,))
    untouched = graded({VISIBLE: "passed", HIDDEN_ADD: "failed", HIDDEN_MUL: "failed"}, whole_run=False)
    assert FailToPass()(sub(task, untouched, {})) == 0.0
    half = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "failed"}, whole_run=False)
    assert FailToPass()(sub(task, half)) == pytest.approx(0.5)
    broke = graded({VISIBLE: "failed", HIDDEN_ADD: "passed", HIDDEN_MUL: "failed"}, whole_run=False)
    assert FailToPass()(sub(task, broke)) == pytest.approx(0.5 - 1.0)
    assert FailToPass(penalty=0.25)(sub(task, broke)) == pytest.approx(0.5 - 0.25)
    everything = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "passed"}, exit_code=0, whole_run=False)
    assert FailToPass()(sub(task, everything)) == 1.0
    timed_out = GradeResult({}, None, True, "", 60.0, whole_run=False)
    assert FailToPass()(sub(task, timed_out)) == -1.0
    # a task without the lists: the fraction of graded tests, as "fraction"
    assert FailToPass()(sub(tiny_task, half)) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="penalty"):
        FailToPass(penalty=-1)


def test_fraction_weighs_fail_to_pass_against_pass_to_pass(tiny_task):
    task = dataclasses.replace(tiny_task, fail_to_pass=(HIDDEN_ADD, HIDDEN_MUL), pass_to_pass=(VISIBLE,))
    result = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "failed"}, whole_run=False)
    assert PassFraction(fail_to_pass=2.0, pass_to_pass=0.5)(sub(task, result)) == pytest.approx((0.5 + 2) / (0.5 + 4))
    # the two weights multiply: a FAIL_TO_PASS test in a hidden file counts fail_to_pass * hidden
    assert PassFraction(fail_to_pass=2.0, hidden=0.0)(sub(task, result)) == 1.0
    assert PassFraction(fail_to_pass=0, pass_to_pass=0)(sub(task, result)) == 0.0


# -- static -------------------------------------------------------------------------------------

def test_static_scores_new_problems_only(tiny_task):
    def score(changes):
        return StaticScore()(sub(tiny_task, graded({}), changes))

    assert score({"calc/ops.py": FIXED_ADD}) == 1.0
    assert score({"calc/ops.py": FIXED_ADD + b"\nimport os\n"}) == 0.5  # one new unused import
    assert score({"calc/ops.py": FIXED_ADD + b"\nimport os\nprint(undefined_name)\n"}) == pytest.approx(1 / 3)
    assert score({"calc/ops.py": b"def add(a, b:\n"}) == 0.0
    assert score({"calc/ops.py": b"return 1\n"}) == 0.0  # parses, but does not compile
    assert score({"calc/ops.py": FIXED_ADD, "calc/new.py": b"x = (\n"}) == 0.5
    assert score({"tests/test_calc.py": b"x = (\n", "README.md": b"#"}) == 0.0  # no code file to score
    assert score({"calc/ops.py": None}) == 0.0


def test_static_ignores_problems_the_file_already_had(tiny_task):
    (tiny_task.repo / "calc" / "ops.py").write_text("import os\n" + FIXED_ADD.decode())
    checks = static_checks({"calc/ops.py": b"import os\n" + FIXED_ADD + b"\nimport sys\n"}, tiny_task)
    assert [(c.path, c.compiles, c.new_findings) for c in checks] == [
        ("calc/ops.py", True, ["UnusedImport: 'sys' imported but unused"])]


# -- outcome and integrity policy ---------------------------------------------------------------

CHEAT = [Finding("calc/ops.py", 3, "process-exit", "uses `os._exit`")]


def test_outcome_is_the_weighted_sum_and_its_breakdown_adds_up(tiny_task):
    spec = make_reward({"binary": 0.5, "fraction": 1.0, "static": 0.25})
    result = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "failed"}, integrity=[])
    reward, entries = spec.outcome(sub(tiny_task, result))
    assert reward == pytest.approx(0 + 2 / 3 + 0.25) == total(entries)
    assert entries["fraction"] == {"value": pytest.approx(2 / 3), "weight": 1.0, "reward": pytest.approx(2 / 3)}
    assert entries["integrity"]["reward"] == 0.0 and entries["integrity"]["mode"] == "enforce"


@pytest.mark.parametrize("mode,penalty,expected", [("enforce", 0.0, 0.0), ("enforce", -1.0, -1.0),
                                                   ("report", -1.0, 1.0), ("off", -1.0, 1.0)])
def test_a_violation_outranks_the_tests(tiny_task, mode, penalty, expected):
    spec = make_reward("binary", integrity=mode, integrity_penalty=penalty)
    result = graded({VISIBLE: "passed", HIDDEN_ADD: "passed", HIDDEN_MUL: "passed"}, exit_code=0, integrity=CHEAT)
    reward, entries = spec.outcome(sub(tiny_task, result))
    assert reward == expected == total(entries)
    assert entries["binary"]["value"] == 1.0  # what the tests said stays visible
    assert entries["integrity"]["value"] == 1.0


# -- shaping ------------------------------------------------------------------------------------

def run_tests(passed: int, failed: int = 0, paths=None, exit_code=None) -> tuple[ToolCall, ToolResult]:
    """A run_tests call on the tiny task's visible file: `passed` passing and `failed` failing records,
    and a printed summary that says 99 passed (printed text counts for nothing)."""
    tests = {f"tests/test_calc.py::test_{i}": "passed" for i in range(passed)}
    tests.update({f"tests/test_calc.py::test_f{i}": "failed" for i in range(failed)})
    code = (1 if failed else 0) if exit_code is None else exit_code
    args = {"paths": paths} if paths is not None else {}
    return ToolCall("run_tests", args), ToolResult("99 passed in 0.1s\n", records=RunRecords(tests, code, False))


def test_passed_count_reads_the_per_test_records_never_the_printed_text():
    visible = ("tests/test_calc.py",)
    assert passed_count(run_tests(4, 2)[1].records, visible) == 4
    assert passed_count(run_tests(0, 2)[1].records, visible) == 0
    assert passed_count(None, visible) is None  # printed text alone: no count
    assert passed_count(run_tests(4, 0, exit_code=1)[1].records, visible) is None  # exit code and records disagree
    assert passed_count(run_tests(4, 2, exit_code=0)[1].records, visible) is None
    assert passed_count(run_tests(4, 0, exit_code=2)[1].records, visible) is None  # the run itself failed
    assert passed_count(RunRecords({"tests/test_calc.py::t": "passed"}, None, True), visible) is None  # timed out
    other = RunRecords({"tests/test_calc.py::a": "passed", "calc/extra_test.py::b": "passed"}, 0, False)
    assert passed_count(other, visible) == 1  # only the visible tests count


def test_shaping_pays_for_new_bests_and_charges_invalid_actions(tiny_task):
    changes = {"calc/ops.py": FIXED_ADD}
    state = StepShaping(0.15, 0.01).episode(tiny_task, lambda: changes)
    assert state.step([run_tests(1, 2)], invalid=False) == {}  # the first run sets the baseline
    assert total(state.step([run_tests(2, 1)], invalid=False)) == pytest.approx(0.15)
    assert state.step([run_tests(1, 2)], invalid=False) == {}  # worse than the best: nothing
    assert state.step([run_tests(2, 1)], invalid=False) == {}  # equal to the best: nothing
    assert total(state.step([run_tests(3, 0), (None, ToolResult("error", error=True))], invalid=True)) == \
        pytest.approx(0.15 - 0.01)
    assert state.step([run_tests(9, 0, paths=["tests/test_other.py"])], invalid=False) == {}  # not the visible tests
    assert total(state.clawback()) == pytest.approx(-0.30)


def test_shaping_pays_nothing_while_the_workspace_fails_the_audit(tiny_task):
    cheating = {"tests/test_calc.py": b"def test_add_zero():\n    pass\n"}
    state = StepShaping().episode(tiny_task, lambda: cheating)
    state.step([run_tests(0, 1)], invalid=False)
    assert state.step([run_tests(1, 0)], invalid=False) == {}
    unguarded = StepShaping().episode(tiny_task, lambda: cheating, gated=False)
    unguarded.step([run_tests(0, 1)], invalid=False)
    assert total(unguarded.step([run_tests(1, 0)], invalid=False)) == pytest.approx(0.15)


# -- hints --------------------------------------------------------------------------------------

@pytest.mark.parametrize("task", BUNDLED, ids=[t.id for t in BUNDLED])
def test_hint_units_cover_every_hunk_once(task):
    from unidiff import PatchSet
    hunks = [str(h) for f in PatchSet(task.reference_patch) for h in f]
    units = hint_units(task)
    assert sorted(h for u in units for h in u.hunks) == sorted(hunks)
    assert len({(u.path, u.name) for u in units}) == len(units)


def test_hint_shows_whole_units_of_the_chosen_fraction():
    task = next(t for t in BUNDLED if t.id == "inventory-reservations")
    units = hint_units(task)
    assert [(u.path, u.name) for u in units] == [
        ("stockroom/inventory.py", "Inventory.__init__"), ("stockroom/inventory.py", "Inventory"),
        ("stockroom/reports.py", "stock_report")]
    assert reference_hint(task, 0.0).text == ""
    everything = reference_hint(task, 1.0)
    assert (everything.shown, everything.total) == (3, 3) and everything.text.startswith("## Hint")
    assert all(h in everything.text for u in units for h in u.hunks)
    one = reference_hint(task, 0.3, np.random.default_rng(0))
    assert one.shown == 1 and sum(u.render() in one.text for u in units) == 1
    assert reference_hint(task, 0.3, np.random.default_rng(0)).text == one.text
    with pytest.raises(ValueError, match="between 0 and 1"):
        reference_hint(task, 1.5)


# -- through the environment --------------------------------------------------------------------

def bash(command: str) -> str:
    return hermes([{"name": "bash", "arguments": {"command": command}}])


def test_env_reports_every_component_and_keeps_outcome_reward(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, reward={"binary": 1.0, "fraction": 0.5, "static": 0.1})
    obs, info = env.reset(seed=0)
    assert "## Grading rules" in obs and "## Hint" not in obs and info["hint"] == {"shown": 0, "total": 0}
    assert not (env.unwrapped.ws.root / "tests" / "test_hidden_calc.py").exists()  # hidden tests stay out
    _, reward, _, _, info = env.step(bash("sed -i 's/a - b/a + b/' calc/ops.py"))
    assert reward == 0.0 and info["reward_breakdown"] == {"total": 0.0}
    _, reward, terminated, _, info = env.step(SUBMIT)
    breakdown = info["reward_breakdown"]
    assert terminated and info["tests_passed"] == 2 and info["integrity"] == []
    assert breakdown["binary"]["value"] == 0.0 and breakdown["fraction"]["value"] == pytest.approx(2 / 3)
    assert breakdown["static"] == {"value": 1.0, "weight": 0.1, "reward": pytest.approx(0.1)}
    assert reward == pytest.approx(1 / 3 + 0.1) == breakdown["total"] == info["outcome_reward"]
    env.close()


def test_env_cheat_scores_the_penalty_with_findings(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, integrity_penalty=-1.0)
    env.reset(seed=0)
    env.step(bash("printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > calc/ops.py"
                  " && printf 'import pytest\\n' > conftest.py"))
    _, reward, _, _, info = env.step(SUBMIT)
    assert info["tests_passed"] == 3 and info["resolved"] is False  # the tests pass, the audit fails
    assert reward == -1.0 == info["outcome_reward"]
    assert info["integrity"] == [{"path": "conftest.py", "line": 0, "rule": "conftest", "message": "adds, changes or deletes a conftest.py"}]
    assert "integrity audit failed" in env.unwrapped.last_observation
    env.close()


def test_env_shaping_and_clawback(tiny_task):
    visible = tiny_task.repo / "tests" / "test_calc.py"
    visible.write_text(visible.read_text() + "\n\ndef test_add():\n    assert add(2, 3) == 5\n")  # fails at first
    env = gym.make("CodeRepo-v0", task=tiny_task, reward={"fraction": 1.0, "shaping": True})
    env.reset(seed=0)
    rewards, outputs = [], []
    for action in ([{"name": "run_tests", "arguments": {}}],
                   [{"name": "bash", "arguments": {"command": "sed -i 's/a - b/a + b/' calc/ops.py"}},
                    {"name": "run_tests", "arguments": {}}],
                   "no tool call at all",
                   [{"name": "bash", "arguments": {"command": "echo 'import os; os._exit(0)' >> calc/ops.py"}},
                    {"name": "submit", "arguments": {}}]):
        _, reward, _, _, info = env.step(hermes(action) if isinstance(action, list) else action)
        rewards.append(reward)
        outputs.append([r["output"][-300:] for r in info["tool_results"]])
    assert rewards[:3] == [0.0, pytest.approx(0.15), pytest.approx(-0.01)], outputs
    # the final patch fails the audit: outcome 0 and the progress bonus is taken back
    assert info["outcome_reward"] == 0.0 and rewards[3] == pytest.approx(-0.15)
    assert info["reward_breakdown"]["progress_clawback"]["reward"] == pytest.approx(-0.15)
    env.close()


def test_env_report_mode_keeps_the_test_reward(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, integrity="report", reward="fraction")
    env.reset(seed=0)
    env.step(bash("sed -i 's/a - b/a + b/' calc/ops.py"))  # add fixed: its two tests and their probes pass
    env.step(bash("echo 'import sys' >> tests/test_calc.py"))
    _, reward, _, _, info = env.step(SUBMIT)
    assert reward == pytest.approx(2 / 3) and [f["rule"] for f in info["integrity"]] == ["protected-path"]
    env.close()


def test_env_hint_option_reveals_reference_hunks(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, integrity="off", hint=0.5)
    obs, info = env.reset(seed=0)
    # the tiny reference is one hunk across both functions: one module-level unit, shown whole
    assert info["hint"] == {"shown": 1, "total": 1}
    assert "+    return a + b" in obs and "+    return a * b" in obs and "## Grading rules" not in obs
    obs, info = env.reset(seed=0, options={"hint": 0.0})
    assert info["hint"]["shown"] == 0 and "## Hint" not in obs
    env.close()


def test_reward_spec_objects_pass_through_gym_make(tiny_task):
    spec = RewardSpec(components=(("binary", 1.0, AllPass()),), integrity="off")
    env = gym.make("CodeRepo-v0", task=tiny_task, reward=spec)
    assert env.unwrapped.reward_spec is spec
    env.close()


def test_static_does_not_parse_a_source_too_large_to_audit(monkeypatch):
    """As the audit (oversized-source): parsing a 15 MB .py took the host to 6.2 GiB."""
    from code_gym.languages.python import static
    from code_gym.languages.python.audit import MAX_SOURCE_BYTES

    parsed = []
    findings = static._findings
    monkeypatch.setattr(static, "_findings", lambda source, path: parsed.append(path) or findings(source, path))
    check = static.check_file("calc/big.py", None, b"x = 1\n" * (MAX_SOURCE_BYTES // 6 + 10))
    assert not check.compiles and check.score == 0.0 and "too large" in check.error and parsed == []
    assert static.check_file("calc/ok.py", None, b"x = 1\n").score == 1.0 and parsed == ["calc/ok.py"]
