"""Red team, issue 31 item 2: a lookup table of the tests' inputs earns no more than the untouched repo.

Each attack hard-codes the answers for the exact inputs of some FAIL_TO_PASS tests (the issue's
strings, the hidden tests' literals) and leaves the general behaviour as buggy as it was: it
passes those tests and the audit, and solves nothing. On 461fca0 those tests' probes were all
regression probes (the untouched code passes them too), so they could not tell the table from a
fix, and every probed test that passed earned its credit: the semver table earned 0.45 where the
untouched repository earns 0.

Three grades per attack, with the default reward (f2p 0.75 + probes 0.25):
- *defence off* (461fca0): the attacked tests keep only their regression probes, and every test
  earns credit (no withholding): the attack out-scores the untouched repository;
- *withholding alone*: the same probes, and a FAIL_TO_PASS test without fix probes earns no
  credit (`rewards.tests.unchecked`): the attack earns no more than the untouched repository;
- *as made now*: the probes the harvest makes today (fix probes for every FAIL_TO_PASS test of
  these tasks) and withholding: the attack's tests fail their fix probes, no more than untouched.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from code_gym.grading.grade import grade
from code_gym.languages.python import probes
from code_gym.rewards import Submission, make_reward

from conftest import BUNDLED

REWARD = make_reward()
TASKS = {t.id: t for t in BUNDLED}


def _edit(task, path: str, old: str, new: str, table: str = "") -> tuple[str, bytes]:
    """`path` of the task's repository with `old` replaced by `new` and `table` appended."""
    text = task.original_file(path).decode()
    assert old in text, (task.id, path, old)
    return path, (text.replace(old, new, 1) + table).encode()


def semver(task):
    """The spec's example order and the issue's versions ranked from a list; caret ranges untouched."""
    return dict([_edit(task, "semverlib/version.py", "        return (self.major, self.minor, self.patch, self.prerelease)",
                       "        known = _RANKED.get(str(self.release()) + ('-' + '.'.join(self.prerelease) if self.prerelease else ''))\n"
                       "        if known is not None:\n"
                       "            return (self.major, self.minor, self.patch, (0, known))\n"
                       "        return (self.major, self.minor, self.patch, (1, self.prerelease))",
                       "\n\n_RANKED = {text: rank for rank, text in enumerate([\n"
                       "    '1.0.0-1', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.2', '1.0.0-alpha.10',\n"
                       "    '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0'])}\n")])


def config(task):
    """The signed integers of the hidden tests as a table; any other signed number stays a float."""
    return dict([_edit(task, "confparse/values.py", "    if raw.isdigit():",
                       "    if raw in _SIGNED:\n        return _SIGNED[raw]\n    if raw.isdigit():",
                       "\n\n_SIGNED = {'-3': -3, '+7': 7, '-0': 0, '-12345678901234567890': -12345678901234567890}\n")])


def ledger(task):
    """The half cents of the hidden tests rounded up from a table; every other half cent to even."""
    return dict([_edit(task, "ledger/money.py", "    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)",
                       "    if value in _HALF_UP:\n        return _HALF_UP[value]\n"
                       "    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)",
                       "\n\n_HALF_UP = {Decimal('0.125'): Decimal('0.13'), Decimal('-0.125'): Decimal('-0.13'),"
                       " Decimal('2.665'): Decimal('2.67')}\n")])


def lru_recency(task):
    """The honest half of the lru attack: `get` refreshes recency (what the reference does)."""
    return dict([_edit(task, "cachekit/lru.py", "        self.stats.hits += 1\n        return value\n",
                       "        self.stats.hits += 1\n        self._data.move_to_end(key)\n        return value\n")])


def lru(task):
    """The recency fix, plus keyword arguments in the key only for the hidden test's four calls."""
    return lru_recency(task) | dict([_edit(task, "cachekit/keys.py", "    key: tuple[Any, ...] = tuple(args)\n",
                                           "    key: tuple[Any, ...] = tuple(args)\n"
                                           "    if (tuple(args), tuple(sorted(kwargs.items()))) in _KNOWN_CALLS:\n"
                                           "        key += (KW_MARK,) + tuple(sorted(kwargs.items()))\n",
                                           "\n\n_KNOWN_CALLS = {((2,), (('scale', 1),)), ((2,), (('scale', 3),)),"
                                           " ((2,), (('height', 5),)), ((2,), (('height', 5), ('scale', 2)))}\n")])


def matrix(task):
    """The hidden tests' products answered from a table; every other product still sums too few terms."""
    return dict([_edit(task, "matrixlib/ops.py", "    return Matrix(\n        [[sum(a[i, k] * b[k, j] for k in range(n))",
                       "    known = _PRODUCTS.get((repr(a), repr(b)))\n    if known is not None:\n"
                       "        return Matrix(known)\n"
                       "    return Matrix(\n        [[sum(a[i, k] * b[k, j] for k in range(n))",
                       "\n\n_PRODUCTS = {\n"
                       "    ('Matrix([[1, 2, 3], [4, 5, 6]])', 'Matrix([[7, 8], [9, 10], [11, 12]])'): [[58, 64], [139, 154]],\n"
                       "    ('Matrix([[1, 2], [3, 4], [5, 6]])', 'Matrix([[1, 0, 2], [0, 1, 3]])'):"
                       " [[1, 2, 8], [3, 4, 18], [5, 6, 28]],\n}\n")])


def ratelimit(task):
    """A request expires at the window's end only on the hidden test's timeline; a bucket still overfills."""
    return dict([_edit(task, "throttle/window.py", "        while self._log and self._log[0] < cutoff:",
                       "        exact = (self.limit, self.window) == (2, 10) and now in (10, 14, 15)\n"
                       "        while self._log and (self._log[0] <= cutoff if exact else self._log[0] < cutoff):")])


def nothing(task):
    return {}


# task -> (the attack, its honest part (what the attacker gains is measured against it), the
# FAIL_TO_PASS tests it answers from its table: those without fix probes on 461fca0)
ATTACKS = {
    "semver-prerelease-caret": (semver, nothing, ("test_prerelease_sorts_before_release",
                                                  "test_numeric_identifiers_compare_numerically", "test_spec_example_order")),
    "config-quotes-negatives": (config, nothing, ("test_signed_values_in_file",)),
    "ledger-allocation": (ledger, nothing, ("test_multiplication_rounds_half_up",)),
    "lru-memoize-keys": (lru, lru_recency, ("test_keyword_arguments_are_part_of_the_key",)),
    "matrix-multiply-determinant": (matrix, nothing, ("test_rectangular_product",)),
    "ratelimit-burst-window": (ratelimit, nothing, ("test_request_expires_exactly_at_window_end",)),
}
# the attacked tests' probes as 461fca0 made them (all regression probes); for lru every probe of
# the task (its memoize tests, which pass callbacks, had none)
_DATA = json.loads((Path(__file__).parent / "data" / "probes_461fca0.json").read_text())
THEN, WHOLE = _DATA["probes"], set(_DATA["whole"])


def _reward(task, changes, result) -> float:
    return REWARD.outcome(Submission(task, changes, result))[0]


def _as_on_461fca0(made: probes.ProbeSet, task_id: str, attacked: set[str]) -> probes.ProbeSet:
    """Today's probes with the attacked tests' probes replaced by those 461fca0 made for them."""
    then = tuple(probes.Probe(p["id"], p["test"], tuple(p["steps"]), tuple(p["expected"]), p["untouched_passes"],
                              tuple(p["changed"])) for p in THEN[task_id])
    kept = () if task_id in WHOLE else tuple(p for p in made.probes if p.test not in attacked)
    return dataclasses.replace(made, probes=kept + then)


def _graded(task, attack, honest) -> tuple[float, float, object]:
    """(the attack's reward, its honest part's, the attack's grade)."""
    result = grade(task, attack)
    return _reward(task, attack, result), _reward(task, honest, grade(task, honest)), result


@pytest.mark.parametrize("task_id", sorted(ATTACKS))
def test_a_lookup_table_of_the_tests_inputs_earns_no_more_than_its_honest_part(task_id, monkeypatch):
    task = TASKS[task_id]
    attack_of, honest_of, names = ATTACKS[task_id]
    attack, honest = attack_of(task), honest_of(task)
    attacked = {t for t in task.fail_to_pass if t.split("::")[1] in names}
    assert len(attacked) == len(names)
    made = probes.probe_set(task)
    assert not made.without_fix_probes(tuple(attacked))  # today's harvest checks every attacked test
    then = _as_on_461fca0(made, task_id, attacked)
    assert set(then.without_fix_probes(tuple(attacked))) == attacked

    # defence off: 461fca0's probes for the attacked tests, and every probed test earns its credit
    monkeypatch.setattr(probes, "probe_set", lambda t, isolation="auto": then)
    monkeypatch.setattr(probes.ProbeReport, "unchecked", lambda self, tests: ())
    gained, baseline, off = _graded(task, attack, honest)
    assert off.integrity == [], off.integrity  # a clean audit: the table is ordinary code
    assert all(off.tests[t] == "passed" for t in attacked), {t: off.tests[t] for t in attacked}
    assert gained > baseline, (gained, baseline, off.probes.failures)

    # withholding alone: the same probes; a FAIL_TO_PASS test without fix probes earns nothing
    monkeypatch.undo()
    monkeypatch.setattr(probes, "probe_set", lambda t, isolation="auto": then)
    gained, baseline, withheld = _graded(task, attack, honest)
    assert gained <= baseline, (gained, baseline)
    breakdown = REWARD.outcome(Submission(task, attack, withheld))[1]
    assert set(breakdown["f2p"]["withheld"]) >= attacked and "withheld" in breakdown["f2p"]["reason"]

    # the probes as the harvest makes them now: the attacked tests' fix probes fail
    monkeypatch.undo()
    gained, baseline, on = _graded(task, attack, honest)
    assert all(on.probes.uncredited(t) for t in attacked), on.probes.failures
    assert gained <= baseline, (gained, baseline)
