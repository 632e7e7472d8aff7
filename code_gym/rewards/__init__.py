"""Rewards for CodeRepo-v0: outcome components (binary, fraction, static), optional step shaping,
and the integrity policy that outranks them (hint-conditioned prompts: code_gym.hints). See docs/rewards.md."""
from code_gym.rewards.base import Submission
from code_gym.rewards.shaping import StepShaping, passed_count
from code_gym.rewards.spec import COMPONENTS, EpisodeReward, RewardSpec, make_reward, total
from code_gym.rewards.static import FileCheck, StaticScore, static_checks
from code_gym.rewards.tests import AllPass, FailToPass, PassFraction

__all__ = ["AllPass", "COMPONENTS", "EpisodeReward", "FileCheck", "FailToPass", "PassFraction", "RewardSpec",
           "StaticScore", "StepShaping", "Submission", "make_reward", "passed_count",
           "static_checks", "total"]
