"""curves.png shows every batch reward (issue 31): a reward spec with penalties makes negative
means, which a reward axis fixed at [0, 1] hid."""
import pytest

pytest.importorskip("matplotlib")

from code_gym.apps.train import UpdateStats, plot_curves, reward_limits  # noqa: E402


def _history(*rewards):
    return [UpdateStats(0, 0, 0.1, float("nan"), float("nan"), 0.0, {"a": 0.1})] + [
        UpdateStats(i + 1, 8 * (i + 1), 0.2, 0.0, r, 1.0, {"a": 0.2}) for i, r in enumerate(rewards)]


def test_negative_mean_rewards_are_on_the_plot(tmp_path):
    fig = plot_curves({"didpo": _history(-0.75, -0.2, 0.3)}, tmp_path / "c.png", "t")
    low, high = fig.axes[1].get_ylim()
    assert low < -0.75 and high >= 1.0
    assert fig.axes[0].get_ylim() == pytest.approx((0, 1.02))  # a probability stays in [0, 1]
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reward_axis_spans_zero_to_one_and_every_finite_value():
    assert reward_limits([0.2, 0.5]) == (0.0, pytest.approx(1.02))
    low, high = reward_limits([-2.0, float("nan"), 3.0])
    assert low < -2.0 and high > 3.0
    assert reward_limits([]) == (0.0, pytest.approx(1.02))
