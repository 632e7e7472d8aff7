"""Rewards for CodeRepo-v0: outcome components (binary, fraction, static), optional step shaping,
the integrity policy that outranks them, and hint-conditioned prompts. See docs/rewards.md."""
from code_gym.rewards.base import Submission
from code_gym.rewards.hints import Hint, HintUnit, hint_units, make_hint
from code_gym.rewards.shaping import StepShaping, passed_count
from code_gym.rewards.spec import COMPONENTS, EpisodeReward, RewardSpec, make_reward, total
from code_gym.rewards.static import FileCheck, StaticScore, static_checks
from code_gym.rewards.tests import AllPass, PassFraction

__all__ = ["AllPass", "COMPONENTS", "EpisodeReward", "FileCheck", "Hint", "HintUnit", "PassFraction", "RewardSpec",
           "StaticScore", "StepShaping", "Submission", "hint_units", "make_hint", "make_reward", "passed_count",
           "static_checks", "total"]
