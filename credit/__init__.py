"""credit: critic-free advantage estimators for multi-turn coding agents (numpy, optional torch).

    import credit
    result = credit.didpo(trajectories)      # or credit.get("grpo")(trajectories)
    result = credit.didpo(trajectories, config="didpo-split")   # a preset (credit.PRESETS)
    result.episode, result.steps, result.tokens, result.anchors, result.stats

Estimators: didpo (Diff-in-Diff Policy Optimization), grpo, dr_grpo, rloo, gigpo. DiDPO's options
are one frozen `DiDPOConfig`; its named presets (`PRESETS`) are estimator names too. Their parts are
usable alone: episode_advantage, step_returns, split_diff, group_texts / cluster_units,
groupability_score, select_anchors, locate_lines / project_tokens. Trainers use
`token_advantages` (flat per-step arrays in, a [batch, seq] tensor out).

Import parts as `from credit.split import split_diff`: `credit.didpo` and `credit.gigpo` name the
estimator functions, not their modules.
"""

from credit.anchors import Selection, select_anchors
from credit.arrays import token_advantages
from credit.baselines import dr_grpo, grpo, rloo
from credit.config import DiDPOConfig
from credit.didpo import didpo
from credit.episode import episode_advantage, step_returns
from credit.gigpo import gigpo
from credit.groupability import groupability_score, phi, psi
from credit.grouping import cluster_units, group_texts
from credit.project import locate_lines, merge_spans, project_tokens
from credit.registry import ESTIMATORS, PRESETS, STEP_LEVEL, check_options, get
from credit.split import LEVELS, SubDiffs, split_diff
from credit.text import normalize_line, similarity
from credit.types import Anchor, Result, Step, StepCredit, Trajectory, dump_jsonl, load_jsonl

__all__ = [
    "ESTIMATORS", "PRESETS", "STEP_LEVEL", "LEVELS", "Anchor", "DiDPOConfig", "Result", "Selection", "Step",
    "StepCredit", "SubDiffs", "Trajectory",
    "check_options", "cluster_units", "didpo", "dr_grpo", "dump_jsonl", "episode_advantage", "get", "gigpo", "group_texts",
    "groupability_score", "grpo", "load_jsonl", "locate_lines", "merge_spans", "normalize_line", "phi",
    "project_tokens", "psi", "rloo", "select_anchors", "similarity", "split_diff", "step_returns",
    "token_advantages",
]
