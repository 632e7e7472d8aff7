"""The execution vote's default calls (issue 31 item 10): built from the task's own tests' calls,
as the behavioural probes harvest them, so that right and wrong patches get different votes.

On units-temperature the calls generated from random arguments (still the fallback for a task
without probes) gave two reference patches, a sign flip and an off-by-one the same behaviour,
since every random string raised the same error in each: all four voted 1.0."""
import pytest

from code_gym.grading.reference import reference_changes
from code_gym.languages.python.vote import random_calls, scenario_calls
from code_gym.rewards import execution_vote

from conftest import BUNDLED

UNITS = next(t for t in BUNDLED if t.id == "units-temperature")
REGISTRY = "unitconv/registry.py"


def _variant(changes: dict, old: str, new: str) -> dict:
    text = changes[REGISTRY].decode()
    assert old in text
    return changes | {REGISTRY: text.replace(old, new, 1).encode()}


def candidates() -> list[dict]:
    reference = reference_changes(UNITS)
    return [
        reference,
        _variant(reference, "return value * self.factor + self.offset", "return self.offset + self.factor * value"),
        _variant(reference, "return value * self.factor + self.offset", "return value * self.factor - self.offset"),
        _variant(reference, 'Unit("degC", "temperature", 1.0, 273.15)', 'Unit("degC", "temperature", 1.0, 274.15)'),
    ]


def test_right_and_wrong_patches_get_different_votes():
    group = candidates()
    result = execution_vote(UNITS, group)
    assert result.errors == (None,) * 4
    assert result.calls == scenario_calls(UNITS) and result.calls
    right, rewritten, sign_flip, off_by_one = result.behaviour
    assert right == rewritten  # the same behaviour written differently
    assert len({right, sign_flip, off_by_one}) == 3
    assert result.votes == pytest.approx((1 / 3, 1 / 3, 0.0, 0.0))


def test_random_arguments_could_not_tell_them_apart():
    """What the default was: random calls of the changed functions. Kept for tasks without probes."""
    group = candidates()
    calls = random_calls(UNITS, group, 8, 0)
    assert calls
    assert execution_vote(UNITS, group, calls=calls).votes == (1.0, 1.0, 1.0, 1.0)
