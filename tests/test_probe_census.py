"""The probe census (issue 31, items 2 and 9): which FAIL_TO_PASS tests fix probes check, what the
harvest can now replay (callbacks the test defines, builtins and module-level objects passed as
arguments, arguments left at a default that is not data), and what happens to a test no fix probe
checks: `code-gym tasks validate` flags it, probes.json names it with the reason, and its credit is
withheld in the reward, said in the breakdown."""
import json
import random
import textwrap

import pytest

from code_gym.apps.cli import main
from code_gym.grading.gates import validate_task
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.languages.python import probes
from code_gym.rewards import Submission, make_reward
from code_gym.tasks.task import load_task

REWARD = make_reward()

MANIFEST = '''\
id = "census"
kind = "bugfix"
statement = """`apply` drops the last item, `Scaler` scales by one too many, `Box.total` adds one."""
visible_tests = []
hidden_tests = ["tests/test_hidden_ops.py"]
reference_patch = "solution.patch"
test_command = "python -m pytest"
fail_to_pass = ["tests/test_hidden_ops.py::test_apply_callback", "tests/test_hidden_ops.py::test_apply_builtin",
                "tests/test_hidden_ops.py::test_module_level_scaler", "tests/test_hidden_ops.py::test_box_of_a_test_type"]
pass_to_pass = []
[timeouts]
command = 10
tests = 30
'''

OPS = textwrap.dedent('''\
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * (self.k + 1)


    double = Scaler(2)


    def apply(f, xs, factory=list):
        return factory(f(x) for x in xs[:-1])


    class Box:
        def __init__(self, items):
            self.items = items

        def total(self):
            return sum(item.size for item in self.items) + 1
    ''')

FIXED = (OPS.replace("return x * (self.k + 1)", "return x * self.k")
         .replace("for x in xs[:-1])", "for x in xs)")
         .replace("sum(item.size for item in self.items) + 1", "sum(item.size for item in self.items)"))

TESTS = textwrap.dedent('''\
    from pk.ops import Box, apply, double


    def inc(x):
        return x + 1


    class Item:
        def __init__(self, size):
            self.size = size


    def test_apply_callback():
        assert apply(inc, [1, 2, 3]) == [2, 3, 4]


    def test_apply_builtin():
        assert apply(abs, [-1, 2, -3]) == [1, 2, 3]


    def test_module_level_scaler():
        assert double(21) == 42


    def test_box_of_a_test_type():
        assert Box([Item(2), Item(3)]).total() == 5
    ''')


def _solution() -> str:
    import difflib

    diff = difflib.unified_diff(OPS.splitlines(True), FIXED.splitlines(True), "a/pk/ops.py", "b/pk/ops.py")
    return "diff --git a/pk/ops.py b/pk/ops.py\n" + "".join(diff)


@pytest.fixture
def census_task(tmp_path):
    folder = tmp_path / "census"
    files = {"task.toml": MANIFEST, "solution.patch": _solution(), "repo/pk/__init__.py": "",
             "repo/pk/ops.py": OPS, "hidden/tests/test_hidden_ops.py": TESTS}
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return load_task(folder)


def test_callbacks_builtins_module_objects_and_defaults_are_replayed(census_task):
    """Each of these stopped the recording at its first call before (a test's function, a builtin,
    a method of an object no call returned, the `factory=list` default); now each gives fix
    probes. An instance of a class the test defines still cannot be replayed (importing a test
    module inside the graded run would change how pytest imports it)."""
    made = probes.probe_set(census_task)
    census = made.census(census_task.fail_to_pass)
    for name in ("test_apply_callback", "test_apply_builtin", "test_module_level_scaler"):
        fix, _ = census[f"tests/test_hidden_ops.py::{name}"]
        assert fix > 0, (name, made.dropped)
    box = "tests/test_hidden_ops.py::test_box_of_a_test_type"
    assert made.without_fix_probes(census_task.fail_to_pass) == (box,)
    assert "Item" in made.why_no_fix_probe(box) and "no earlier call returned" in made.why_no_fix_probe(box)
    steps = [p.steps for p in made.probes if p.test.endswith("test_apply_callback")][0]
    assert steps[0]["args"][0]["t"] == "stub" and [k for k, _ in steps[0]["kwargs"]] == []  # factory=list left out
    steps = [p.steps for p in made.probes if p.test.endswith("test_module_level_scaler")][0]
    assert steps[0]["self"] == {"t": "ref", "module": "pk.ops", "qualname": "double"}


def test_validate_flags_the_test_and_probes_json_names_it(census_task, capsys):
    verdict = validate_task(census_task, runs=1)
    assert verdict.ok, verdict.problems
    box = "tests/test_hidden_ops.py::test_box_of_a_test_type"
    assert list(verdict.without_fix_probes) == [box]
    assert verdict.probe_census[box] == (0, 0) and verdict.fix_probes > 0

    assert main(["tasks", "validate", "--runs", "1", "--record", "--verbose", str(census_task.root)]) == 0
    out = capsys.readouterr().out
    assert "fix / regression probes" in out and "(1 FAIL_TO_PASS without fix)" in out
    assert f"FLAG no fix probe for FAIL_TO_PASS {box} (its credit is withheld)" in out
    assert "1/4 FAIL_TO_PASS tests flagged without" in out
    assert f"{box}: 0 fix, 0 regression probes" in out
    stored = json.loads((census_task.root / probes.STORED_NAME).read_text())
    assert list(stored["without_fix_probes"]) == [box] and "Item" in stored["without_fix_probes"][box]
    assert stored["census"][box] == {"fix": 0, "regression": 0}


def test_an_unchecked_test_earns_no_credit_and_the_breakdown_says_so(census_task):
    box = "tests/test_hidden_ops.py::test_box_of_a_test_type"
    reference = reference_changes(census_task)
    score, breakdown = REWARD.outcome(Submission(census_task, reference, grade(census_task, reference)))
    assert score == pytest.approx(1.0)  # the three checked tests carry the whole f2p term
    assert breakdown["f2p"]["withheld"] == [box] and "withheld" in breakdown["f2p"]["reason"]
    assert breakdown["probes"]["without_fix_probes"] == [box]
    # fixing only the unchecked test (or answering its inputs from a table) earns nothing
    only_box = {"pk/ops.py": OPS.replace("sum(item.size for item in self.items) + 1",
                                         "sum(item.size for item in self.items)").encode()}
    result = grade(census_task, only_box)
    assert result.tests[box] == "passed"
    assert REWARD.outcome(Submission(census_task, only_box, result))[0] <= REWARD.outcome(
        Submission(census_task, {}, grade(census_task, {})))[0] == 0.0


def test_a_step_that_uses_a_changed_steps_result_is_changed():
    """`a < b` where `a` was parsed from a perturbed string is a new question, though its own
    arguments (two handles) read the same: on 461fca0 it counted as repeating the test, and every
    probe of semver's ordering tests was dropped or kept as a regression probe."""
    steps = [{"kind": "call", "args": [{"t": "str", "v": "1.0.0-alpha"}]},
             {"kind": "call", "args": [{"t": "str", "v": "1.0.0"}]},
             {"kind": "method", "self": {"t": "h", "step": 0, "path": []}, "args": [{"t": "h", "step": 1, "path": []}]},
             {"kind": "call", "args": [{"t": "int", "v": "7"}]}]
    variant = [dict(steps[0], args=[{"t": "str", "v": "4.0.0-alpha"}]), *steps[1:]]
    assert probes.changed_steps(steps, variant) == [0, 2]


def test_renumbering_keeps_the_relations_and_can_leave_no_number_of_the_test():
    steps = [{"kind": "call", "args": [{"t": "str", "v": "1.0.0-alpha.2"}, {"t": "str", "v": "1.0.0-alpha.10"}],
              "kwargs": [["limit", {"t": "int", "v": "10"}]]}]
    seen_all_changed = False
    for seed in range(60):
        [step] = probes.perturb(steps, random.Random(seed))
        a, b = (arg["v"] for arg in step["args"])
        limit = step["kwargs"][0][1]["v"]
        # the values the test shows: two strings, one int and the numbers 0, 1, 2 and 10: all gone
        if probes.novelty(steps, [step]) == 7:
            seen_all_changed = True
            assert int(a.split(".")[-1]) < int(b.split(".")[-1]) and b.split(".")[-1] == limit
    assert seen_all_changed
