"""The builder's pure parts: finding functions, removing bodies, AST mutations, statements and the leak check."""
import random
import textwrap

import pytest

from code_gym.languages.python.builder.mutations import OPERATORS, functions, mutation_sites, pick_mutations, remove_body
from code_gym.languages.python.builder.pipeline import check_reference_runs
from code_gym.languages.python.builder.runner import SuiteRun
from code_gym.languages.python.builder.statement import leak, write_statement

SOURCE = textwrap.dedent('''\
    """Ranges of numbers."""


    def clamp(value, low, high):
        """Limit `value` to the closed range [low, high]."""
        # the upper bound first
        if value > high:
            return high
        if value < low and low is not None:
            return low
        return value


    def tail(items, label="é"):
        return divmod(len(items[1:]), 2)


    def placeholder():
        """Not written yet."""
        raise NotImplementedError


    class Span:
        """A half-open interval."""

        def contains(self, x):
            """Whether `x` lies in the span."""
            return x not in self.holes
    ''')


def by_name():
    return {f.qualname: f for f in functions("nums.py", SOURCE)}


def test_functions_and_methods_with_a_body_are_found():
    fns = by_name()
    assert set(fns) == {"clamp", "tail", "Span.contains"}  # placeholders are skipped
    clamp = fns["clamp"]
    assert clamp.signature == "def clamp(value, low, high)"
    assert clamp.docstring == "Limit `value` to the closed range [low, high]."
    assert clamp.module_doc == "Ranges of numbers."
    assert fns["Span.contains"].class_doc == "A half-open interval."


def test_remove_body_keeps_signature_and_docstring():
    change = remove_body(by_name()["clamp"], SOURCE)
    assert change.kind == "feature"
    kept = '    """Limit `value` to the closed range [low, high]."""\n    raise NotImplementedError\n\n\ndef tail'
    assert kept in change.source
    assert "# the upper bound first" not in change.source  # comments above the body go with it
    assert change.removed == ("value > high", "value < low and low is not None", "value < low", "low is not None")


def _mutants(qualname, operator):
    fn = by_name()[qualname]
    return {c.source.splitlines()[c.line - 1].strip() for c in mutation_sites(fn, SOURCE) if c.operator == operator}


def test_each_operator_makes_the_expected_edit():
    assert _mutants("clamp", "flip-comparison") == {"if value < high:", "if value > low and low is not None:",
                                                    "if value < low and low is None:"}
    assert "if value < low:" in _mutants("clamp", "drop-condition")  # a condition's last operand dropped
    guard_dropped = [c.source for c in mutation_sites(by_name()["clamp"], SOURCE)
                     if c.operator == "drop-condition" and "value > high" not in c.source]
    assert guard_dropped and "return high" not in guard_dropped[0]  # a whole guard dropped
    # byte columns: the non-ASCII default before the site must not shift the edit
    assert _mutants("tail", "off-by-one") == {"return divmod(len(items[1:]), 3)", "return divmod(len(items[2:]), 2)"}
    assert _mutants("tail", "swap-arguments") == {"return divmod(2, len(items[1:]))"}
    assert _mutants("Span.contains", "flip-comparison") == {"return x in self.holes"}


def test_picked_mutations_spread_over_operators_and_repeat_with_the_seed():
    clamp = by_name()["clamp"]
    picked = pick_mutations(clamp, SOURCE, 2, random.Random(1))
    assert [c.operator for c in picked] == ["flip-comparison", "drop-condition"]
    again = pick_mutations(clamp, SOURCE, 2, random.Random(1))
    assert [c.source for c in picked] == [c.source for c in again]
    assert {c.operator for c in pick_mutations(clamp, SOURCE, 10, random.Random(0))} <= set(OPERATORS)


def test_statements_and_the_leak_check():
    fns = by_name()
    feature = write_statement(remove_body(fns["Span.contains"], SOURCE), [])
    assert "`Span.contains` in `nums.py` is not implemented" in feature and "def contains(self, x):" in feature
    assert "described as: A half-open interval." in feature and "described as: Ranges of numbers." in feature
    bug = next(c for c in mutation_sites(fns["clamp"], SOURCE) if c.operator == "flip-comparison")
    statement = write_statement(bug, ["tests/test_nums.py::test_clamp_high"])  # no symptom: named
    assert "`test_clamp_high`" in statement and "tests/" not in statement and "`clamp` has a bug" in statement
    assert leak(statement, bug) is None
    assert "value > high" in leak(statement + "\nHint: if value > high: return high", bug)
    assert leak("if so, return low", remove_body(fns["clamp"], SOURCE)) is None  # too short to tell anything


def _run(outcomes, exit_code=0, duration=0.5, timed_out=False):
    return SuiteRun(outcomes, exit_code, timed_out, duration, "")


@pytest.mark.parametrize("runs, gate", [
    ([_run({"t::a": "passed", "t::b": "passed"})] * 3, None),
    ([_run({"t::a": "passed", "t::b": "failed"}, exit_code=1)] * 3, "original"),
    ([_run({"t::a": "passed", "t::b": "passed"}), _run({"t::a": "failed", "t::b": "passed"}, exit_code=1),
      _run({"t::a": "passed", "t::b": "passed"})], "flaky"),
    ([_run({"t::a": "passed", "t::b": "passed"}), _run({"t::a": "passed", "t::b": "failed"}, exit_code=1),
      _run({"t::a": "passed", "t::b": "passed"})], None),  # b is PASS_TO_PASS: only FAIL_TO_PASS must be stable
    ([_run({}, exit_code=None, timed_out=True)], "runtime"),
    ([_run({"t::a": "passed", "t::b": "passed"}, duration=31.0)] * 3, "runtime"),
])
def test_reference_run_gates(runs, gate):
    verdict = check_reference_runs(runs, ["t::a"], timeout=60.0)
    assert (verdict[0] if verdict else None) == gate
