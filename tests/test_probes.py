"""Behavioural hidden probes (code_gym.languages.python.probes): made for every bundled, HumanEval and built task;
every reference passes them; the untouched repository fails them; a test-source oracle and an
always-equal object pass the tests but not the probes (each attack graded with the probes off
and on); nondeterministic probes are dropped with a reason; a hanging probe process is bounded."""
import dataclasses
import json
import textwrap

import pytest

from code_gym.languages.python import probes
from code_gym.grading.grade import grade
from code_gym.languages.python.probe_replay import encode
from code_gym.grading.reference import reference_changes
from code_gym.rewards import Submission, make_reward
from code_gym.tasks.task import Timeouts, load_task

from conftest import BUNDLED

PYTHON_TASKS = [t for t in BUNDLED if t.language == "python"]  # Python's behavioural probes (Dafny: tests/test_dafny.py)

UNITS = next(t for t in BUNDLED if t.id == "units-temperature")
REWARD = make_reward()  # the default: f2p 0.75 + probes 0.25


def reward(task, changes, result) -> float:
    return REWARD.outcome(Submission(task, changes, result))[0]


# -- made for every task, passed by every reference ---------------------------------------------

def test_every_bundled_task_has_probes_and_names_what_it_dropped():
    for task in PYTHON_TASKS:
        made = probes.probe_set(task)
        assert made.probes, f"{task.id}: {made.reason}"
        assert made.targets and all(p.expected and len(p.expected) == len(p.steps) for p in made.probes)
        assert {p.test for p in made.probes} <= set(task.fail_to_pass + task.pass_to_pass)
        assert all(": " in reason and "::" in reason for reason in made.dropped), made.dropped


def test_every_bundled_reference_passes_its_probes_and_the_untouched_repo_fails_them():
    for task in PYTHON_TASKS:
        changes = reference_changes(task)
        result = grade(task, changes)
        assert result.resolved and result.probes.ok and result.probes.total > 0, (task.id, result.probes.failures[:3])
        assert reward(task, changes, result) == pytest.approx(1.0)
        untouched = grade(task, {})
        assert not untouched.probes.ok and untouched.probes.failed_tests, task.id
        assert reward(task, {}, untouched) == pytest.approx(0.0), task.id


def test_humaneval_references_pass_their_probes():
    from code_gym.tasks.loaders.humaneval import load_humaneval

    for task in load_humaneval(ids=["HumanEval/0", "HumanEval/12", "HumanEval/53"]):
        made = probes.probe_set(task)
        assert made.probes, f"{task.id}: {made.reason}"
        result = grade(task, reference_changes(task))
        assert result.resolved and result.probes.ok, (task.id, result.probes.failures[:3])
        assert not grade(task, {}).resolved


def test_built_task_references_pass_their_probes(tmp_path):
    from code_gym.languages.python.builder import BuildOptions, build_tasks
    from test_builder import write_project

    report = build_tasks(write_project(tmp_path / "shop"), tmp_path / "built",
                         BuildOptions(mutations_per_function=1, progress=False))
    assert report.tasks
    for task in report.tasks:
        made = probes.probe_set(task)
        assert made.probes or made.reason, task.id
        result = grade(task, reference_changes(task))
        assert result.resolved and (result.probes.ok or not result.probes.total), (task.id, result.probes.failures[:3])


# -- attacks: pass the tests, fail the probes ---------------------------------------------------

ORACLE_INIT = textwrap.dedent('''\
    """Answers every call from the literals the test files assert (the test-source oracle)."""
    import ast
    import functools
    import os
    import sys

    from .errors import IncompatibleUnits, UnitError, UnknownUnit
    from . import convert as _convert_module, format as _format_module, parse as _parse_module, registry as _registry

    _ANSWERS, _RAISES, _MISSING = {}, {}, object()


    def _literal(node):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "approx":
            node = node.args[0]
        return ast.literal_eval(node)


    def _learn(root):
        for folder, _, files in os.walk(root):
            for name in files:
                if not (name.startswith("test") and name.endswith(".py")):
                    continue
                with open(os.path.join(folder, name)) as fh:
                    tree = ast.parse(fh.read())
                for node in ast.walk(tree):
                    try:
                        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
                            key = (node.left.func.id,) + tuple(ast.literal_eval(a) for a in node.left.args)
                            _ANSWERS[key] = _literal(node.comparators[0])
                        elif isinstance(node, ast.With) and getattr(node.items[0].context_expr.func, "attr", "") == "raises":
                            call = node.body[0].value
                            key = (call.func.id,) + tuple(ast.literal_eval(a) for a in call.args)
                            _RAISES[key] = node.items[0].context_expr.args[0].id
                    except Exception:
                        pass


    _learn(os.getcwd())


    def _answered(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            key = (fn.__name__,) + args
            if key in _RAISES:
                raise {"IncompatibleUnits": IncompatibleUnits("a", "b"), "UnknownUnit": UnknownUnit("x")}.get(
                    _RAISES[key], UnitError("x"))
            answer = _ANSWERS.get(key, _MISSING)
            return fn(*args) if answer is _MISSING else answer
        return wrapper


    convert = _convert_module.convert = _answered(_convert_module.convert)
    convert_text = _format_module.convert_text = _answered(_format_module.convert_text)
    parse_quantity = _parse_module.parse_quantity = _answered(_parse_module.parse_quantity)
    units_of = _registry.units_of = _answered(_registry.units_of)
    from .registry import Unit, lookup
    from .format import format_quantity
    ''')

ALWAYS_EQUAL_CONVERT = textwrap.dedent('''\
    """Converting values between units."""
    from __future__ import annotations

    from .errors import IncompatibleUnits
    from .registry import lookup


    class Converted(float):
        """A conversion result."""

        def __eq__(self, other):
            return self is not other

        __hash__ = float.__hash__


    def convert(value: float, source: str, target: str) -> float:
        src, dst = lookup(source), lookup(target)
        if src.dimension != dst.dimension:
            raise IncompatibleUnits(source, target)
        if src is dst:
            return float(value)
        if src.dimension == "temperature":
            return Converted(value)
        return value * src.factor / dst.factor
    ''')


def _temperature_units(task):
    registry = task.original_file("unitconv/registry.py").decode()
    return registry.replace('    Unit("h", "time", 3600.0),\n', '    Unit("h", "time", 3600.0),\n'
                            '    Unit("K", "temperature", 1.0),\n    Unit("degC", "temperature", 1.0),\n'
                            '    Unit("degF", "temperature", 1.0),\n')


def _always_equal_changes(task):
    fmt = task.original_file("unitconv/format.py").decode().replace(
        "def format_quantity(value: float, symbol: str, digits: int = 2) -> str:\n",
        "def format_quantity(value: float, symbol: str, digits: int = 2) -> str:\n"
        "    if type(value).__name__ == 'Converted':\n        return value\n")
    return {"unitconv/convert.py": ALWAYS_EQUAL_CONVERT.encode(), "unitconv/format.py": fmt.encode(),
            "unitconv/registry.py": _temperature_units(task).encode()}


@pytest.mark.parametrize("attack", ["test-source oracle", "always-equal"])
def test_attacks_that_pass_the_tests_fail_the_probes(attack):
    """Graded with the audit off (the probes are the defence shown). What the attacker gains is
    measured against the honest part of its patch: nothing for the oracle (the untouched
    repository), the three temperature units without conversions for the always-equal object.
    With the probes off the attack resolves the task and out-scores that; with them on it resolves
    nothing, every test it passes only by the trick fails its probes, and it scores no more."""
    task = UNITS
    if attack == "test-source oracle":
        changes, honest = {"unitconv/__init__.py": ORACLE_INIT.encode()}, {}
    else:
        changes, honest = _always_equal_changes(task), {"unitconv/registry.py": _temperature_units(task).encode()}
    baseline_result = grade(task, honest, audit=False)
    baseline = reward(task, honest, baseline_result)
    tricked = {t for t in task.fail_to_pass if baseline_result.tests[t] != "passed"}
    assert tricked

    off = grade(task, changes, audit=False, probes=False)
    assert off.resolved and set(off.tests.values()) == {"passed"}, off.output[-3000:]
    assert reward(task, changes, off) > baseline

    on = grade(task, changes, audit=False)
    assert set(on.tests.values()) == {"passed"} and not on.resolved
    assert not on.probes.ok and all(on.probes.uncredited(t) for t in tricked), on.probes.failures
    assert reward(task, changes, on) <= baseline
    breakdown = REWARD.outcome(Submission(task, changes, on))[1]
    assert breakdown["probes"]["failures"] and breakdown["f2p"]["value"] <= 1 - len(tricked) / len(task.fail_to_pass)


# -- what cannot be made is dropped with a reason ------------------------------------------------

def _manifest(task_id, statement, visible, hidden):
    return (f'id = "{task_id}"\nstatement = """{statement}"""\nvisible_tests = {json.dumps(visible)}\n'
            f'hidden_tests = {json.dumps(hidden)}\nreference_patch = "solution.patch"\n')


SHUFFLE_MANIFEST = _manifest("tokens", "Fix `scale` and keep `draw` working.", ["tests/test_tokens.py"],
                             ["tests/test_hidden_tokens.py"])

SHUFFLE_SOLUTION = """\
diff --git a/tokens.py b/tokens.py
--- a/tokens.py
+++ b/tokens.py
@@ -2,8 +2,8 @@ import random
 
 
 def draw(n):
-    return [random.random() for _ in range(n + 0)]
+    return [random.random() for _ in range(n)]
 
 
 def scale(x, k):
-    return x + k
+    return x * k
"""


def _task_folder(folder, files):
    """A task folder from {relative path: text}, loaded."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return load_task(folder)


def test_a_nondeterministic_function_has_its_probes_dropped_with_a_reason(tmp_path):
    folder = tmp_path / "tokens"
    files = {
        "repo/tokens.py": "import random\n\n\ndef draw(n):\n    return [random.random() for _ in range(n + 0)]\n\n\n"
                          "def scale(x, k):\n    return x + k\n",
        "repo/tests/test_tokens.py": "from tokens import draw\n\n\ndef test_draw():\n    assert len(draw(3)) == 3\n",
        "hidden/tests/test_hidden_tokens.py": "from tokens import scale\n\n\ndef test_scale():\n"
                                               "    assert scale(2, 3) == 6\n",
        "task.toml": SHUFFLE_MANIFEST, "solution.patch": SHUFFLE_SOLUTION,
    }
    task = _task_folder(folder, files)
    made = probes.probe_set(task)
    dropped = [d for d in made.dropped if d.startswith("tests/test_tokens.py::test_draw#")]
    assert dropped and all("nondeterministic" in d for d in dropped), made.dropped
    assert made.probes and {p.test for p in made.probes} == {"tests/test_hidden_tokens.py::test_scale"}
    result = grade(task, reference_changes(task))
    assert result.resolved and result.probes.ok
    assert result.probes.dropped == made.dropped  # reported with the grade, not silently skipped


def test_a_task_whose_patch_changes_no_function_reports_why(tiny_task):
    task = dataclasses.replace(tiny_task, reference_patch=tiny_task.reference_patch.replace("calc/ops.py", "notes.txt"))
    made = probes.make_probes(task)
    assert not made.probes and made.reason


def test_probes_that_hang_are_bounded_by_the_timeout():
    """The patch hangs only when the probes call it (its caller's file is the probe file): the
    probes run first in the graded run, so the run is killed at the task's test timeout and
    scores as a failed run, below the untouched repository."""
    task = dataclasses.replace(UNITS, timeouts=Timeouts(command=5, tests=6))
    changes = reference_changes(task)
    changes["unitconv/convert.py"] = changes["unitconv/convert.py"].replace(
        b"    src, dst = lookup(source), lookup(target)\n",
        b"    import sys\n    while 'replay' in sys._getframe(2).f_code.co_name:\n        pass\n"
        b"    src, dst = lookup(source), lookup(target)\n", 1)
    off = grade(task, changes, audit=False, probes=False)
    assert off.resolved and not off.timed_out
    result = grade(task, changes, audit=False)
    assert result.timed_out and not result.resolved
    assert reward(task, changes, result) < reward(task, {}, grade(task, {}, audit=False))


# -- the encoding and the comparison ------------------------------------------------------------

def test_the_encoding_goes_by_exact_type_and_the_comparison_by_type_and_value():
    class Same:
        def __eq__(self, other):
            return True

    assert probes.mismatch(encode(1), encode(True)) and probes.mismatch(encode(1), encode(1.0))
    assert probes.mismatch(encode(212.0), encode(Same())) and probes.mismatch(encode([1, 2]), encode((1, 2)))
    assert probes.mismatch(encode(0.1 + 0.2), encode(0.3)) is None  # floats within 1e-9 relative
    assert probes.mismatch(encode({"a": 1, "b": 2}), encode({"b": 2, "a": 1})) is None
    assert probes.mismatch(encode({3, 1, 2}), encode({1, 2, 3})) is None
    assert probes.mismatch(encode(KeyError("x")), encode(ValueError("x")))
    assert "malformed" in probes.mismatch(encode([1]), {"t": "list", "v": None, "n": 1})
    assert probes.mismatch(encode(5), "forged") and probes.mismatch(encode(5), {"t": "int"})


# -- probes that lean on state an earlier probe left -----------------------------------------------

REGISTRY_MANIFEST = _manifest("registry", "`remove` should take a name out of the registry.", [],
                              ["tests/test_registry.py"])

REGISTRY_SOLUTION = """\
diff --git a/registry.py b/registry.py
--- a/registry.py
+++ b/registry.py
@@ -6,4 +6,4 @@ def add(name, value):
 
 
 def remove(name):
-    return None
+    del _ITEMS[name]
"""


def _call(name, *args):
    return {"kind": "call", "module": "registry", "qualname": name, "kwargs": [],
            "args": [{"t": "str", "v": a} if isinstance(a, str) else {"t": "int", "v": str(a)} for a in args]}


def test_a_probe_whose_answer_needs_an_earlier_probes_state_is_dropped_when_that_one_is(tmp_path):
    # six's registry of moves: a probe that removes a name another probe added passes on the
    # reference only while that probe runs before it; once the other is dropped it would fail the
    # reference itself (2 of 30 re-validated six tasks did), so the kept set is confirmed as a set
    folder = tmp_path / "registry"
    files = {
        "repo/registry.py": "_ITEMS = {}\n\n\ndef add(name, value):\n    _ITEMS[name] = value\n\n\n"
                            "def remove(name):\n    return None\n",
        "hidden/tests/test_registry.py": "import registry\n\n\ndef test_remove():\n    registry.add('spam', 1)\n"
                                         "    registry.remove('spam')\n    assert 'spam' not in registry._ITEMS\n",
        "task.toml": REGISTRY_MANIFEST, "solution.patch": REGISTRY_SOLUTION,
    }
    task = _task_folder(folder, files)
    adds = probes.Probe("t#0", "t", (_call("add", "eggs", 2),), ({"t": "none"},), changed=(0,))
    removes = probes.Probe("t#1", "t", (_call("remove", "eggs"),), ({"t": "none"},), changed=(0,))
    changes = reference_changes(task)
    kept, dropped = probes._confirmed(task, changes, [adds, removes], "auto")
    assert kept == [adds, removes] and dropped == []  # together, in this order, they answer as recorded
    kept, dropped = probes._confirmed(task, changes, [removes], "auto")  # alone: KeyError, not None
    assert kept == [] and len(dropped) == 1 and "depends on the probes replayed before it" in dropped[0]
    assert "KeyError" in dropped[0]
    # and what make_probes keeps, the reference passes when graded
    result = grade(task, changes)
    assert result.resolved and (result.probes.ok or not result.probes.total), result.probes.failures


def test_perturbing_text_with_non_decimal_digits_does_not_crash():
    # '²' is a digit to str.isdigit but not a number to int(): a probe argument holding it crashed
    # the grader's probe making in the task-supply re-validation
    import random

    for seed in range(50):
        [step] = probes.perturb([{"args": [{"t": "str", "v": "x² + ³√8 = ٣"}], "kwargs": []}], random.Random(seed))
        text = step["args"][0]["v"]
        assert "²" in text and "³" in text  # superscripts are left as they are; the Arabic-Indic digit may change
