"""Rewards for CodeRepo-v0: outcome components (binary, fraction, static, judge, certainty), optional
step shaping, the integrity policy that outranks them, and the group reward `execution_vote`
(hint-conditioned prompts: code_gym.env.hints). See docs/rewards.md."""
from code_gym.rewards.base import Response, Score, Submission
from code_gym.rewards.judge import Judge, parse_score
from code_gym.rewards.labelfree import SelfCertainty, TokenLogprobs, sampled_response
from code_gym.rewards.probes import ProbeScore
from code_gym.rewards.shaping import StepShaping, passed_count
from code_gym.rewards.spec import COMPONENTS, EpisodeReward, RewardSpec, make_reward, total
from code_gym.rewards.static import FileCheck, StaticScore, static_checks
from code_gym.rewards.tests import AllPass, FailToPass, PassFraction
from code_gym.rewards.vote import VoteResult, changes_from_patch, execution_vote

__all__ = ["AllPass", "COMPONENTS", "EpisodeReward", "FileCheck", "FailToPass", "Judge", "PassFraction", "ProbeScore", "Response",
           "RewardSpec", "Score", "SelfCertainty", "StaticScore", "StepShaping", "Submission", "TokenLogprobs",
           "VoteResult", "changes_from_patch", "execution_vote", "make_reward", "parse_score", "passed_count",
           "sampled_response", "static_checks", "total"]
