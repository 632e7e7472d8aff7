import numpy as np
import pytest

from credit.episode import episode_advantage, step_returns


def test_mean_norm_subtracts_the_group_mean():
    adv = episode_advantage(np.array([1.0, 1.0, 0.0, 0.0, 3.0, 5.0]), ["a", "a", "a", "a", "b", "b"])
    np.testing.assert_allclose(adv, [0.5, 0.5, -0.5, -0.5, -1.0, 1.0])


def test_mean_std_norm_divides_by_the_unbiased_std():
    # group [1, 1, 0, 0]: mean 0.5, unbiased variance 1/3
    adv = episode_advantage(np.array([1.0, 1.0, 0.0, 0.0]), [7, 7, 7, 7], mode="mean_std_norm", eps=0.0)
    np.testing.assert_allclose(adv, np.array([0.5, 0.5, -0.5, -0.5]) / np.sqrt(1 / 3))


def test_weights_count_a_trajectory_as_several_samples():
    # weights 3 and 1: mean = (3 * 1 + 0) / 4 = 0.75
    adv = episode_advantage(np.array([1.0, 0.0]), [0, 0], weights=np.array([3, 1]))
    np.testing.assert_allclose(adv, [0.25, -0.75])


def test_singleton_rule():
    rewards, groups = np.array([2.0, 1.0, 0.0]), ["alone", "pair", "pair"]
    np.testing.assert_allclose(episode_advantage(rewards, groups), [2.0, 0.5, -0.5])
    np.testing.assert_allclose(episode_advantage(rewards, groups, singleton="zero"), [0.0, 0.5, -0.5])
    np.testing.assert_allclose(episode_advantage(rewards, groups, mode="mean_std_norm", eps=0.0)[0], 2.0)
    # one trajectory of three steps (weight 3) is not a singleton: its baseline is itself
    assert episode_advantage(np.array([2.0]), [0], weights=np.array([3]))[0] == 0.0


def test_step_returns_by_hand():
    # G_2 = 1, G_1 = 0 + 0.5 * 1, G_0 = 2 + 0.5 * 0.5
    np.testing.assert_allclose(step_returns(np.array([2.0, 0.0, 1.0]), gamma=0.5), [2.25, 0.5, 1.0])


def test_step_returns_padding_does_not_change_earlier_returns():
    out = step_returns(np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]), gamma=0.95)
    np.testing.assert_allclose(out[0], [0.95, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(out[1], [0.95**3, 0.95**2, 0.95, 1.0])


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    r = torch.tensor([1.0, 0.0], dtype=torch.float64)
    adv = episode_advantage(r, [0, 0])
    assert isinstance(adv, torch.Tensor) and adv.dtype == torch.float64
    assert adv.tolist() == [0.5, -0.5]
    ret = step_returns(torch.tensor([[0.0, 1.0]]), gamma=0.5)
    assert isinstance(ret, torch.Tensor) and ret.dtype == torch.float32
    assert ret.tolist() == [[0.5, 1.0]]


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "std"}, "mode must be one of"),
    ({"singleton": "skip"}, "singleton must be one of"),
    ({"weights": np.array([1, 0])}, "positive"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        episode_advantage(np.array([1.0, 0.0]), [0, 0], **kwargs)


def test_lengths_must_match():
    with pytest.raises(ValueError, match="group_ids has length 3"):
        episode_advantage(np.array([1.0, 0.0]), [0, 0, 0])
