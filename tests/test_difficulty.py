"""The difficulty filter: k rollouts per task through CodeRepo-v0, keep tasks whose pass rate is in a band."""
import pytest

from code_gym.apps.difficulty import filter_by_pass_rate, measure
from code_gym.actions.replay import hermes, patch_to_calls

from conftest import BUNDLED

SUBMIT = {"name": "submit", "arguments": {}}


class ScriptedPolicy:
    """Solves `always` on every episode and `sometimes` on every second one; otherwise submits
    untouched. Knows the task from the statement in the reset prompt."""

    def __init__(self, always, sometimes):
        self.always, self.sometimes = always, sometimes
        self.episodes = {always.id: 0, sometimes.id: 0}

    def reset(self):
        self.fresh = True

    def __call__(self, observation: str) -> str:
        assert self.fresh, "one response per episode: submit ends it"
        self.fresh = False
        task = self.always if self.always.statement[:60] in observation else self.sometimes
        n = self.episodes[task.id]
        self.episodes[task.id] += 1
        if task is self.always or n % 2 == 0:
            return hermes(patch_to_calls(task.reference_patch, task.repo) + [SUBMIT])
        return hermes([SUBMIT])


def test_pass_rates_and_band(tiny_task):
    other = BUNDLED[0]
    policy = ScriptedPolicy(always=tiny_task, sometimes=other)
    kept, measured = filter_by_pass_rate([tiny_task, other], policy, k=2, band=(0.25, 0.75))
    assert [(m.task.id, m.pass_rate) for m in measured] == [("tiny", 1.0), (other.id, 0.5)]
    assert measured[0].mean_reward == 1.0 and measured[1].rewards[0] == 1.0 and measured[1].rewards[1] < 1.0
    assert [t.id for t in kept] == [other.id]


def test_a_policy_that_never_solves_scores_zero(tiny_task):
    [result] = measure([tiny_task], lambda obs: hermes([SUBMIT]), k=1)
    assert result.pass_rate == 0.0 and result.resolved == (False,)


@pytest.mark.parametrize("band", [(0.8, 0.2), (-0.1, 0.5), (0.5, 1.5)])
def test_bad_band_is_refused(tiny_task, band):
    with pytest.raises(ValueError, match="band"):
        filter_by_pass_rate([tiny_task], lambda obs: "", k=1, band=band)
