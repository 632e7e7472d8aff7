"""DiDPO's options as one frozen record (`DiDPOConfig`), and its named presets (`PRESETS`).

    credit.didpo(trajectories)                                   # PRESETS["didpo"]: the paper's rules
    credit.didpo(trajectories, config="didpo-split")             # the rule measured best here
    credit.didpo(trajectories, config="didpo-split", lambda_=0.5)  # a preset, one option changed

The presets are the DiDPO estimators of `credit.registry` (`credit.get("didpo-split")`); this
module holds them beside the options they set, so `credit.didpo` resolves a name without
importing the registry. docs/credit.md says which to pick for what.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

import numpy as np

from credit._util import option
from credit.anchors import COUNTS
from credit.episode import SINGLETON_RULES, check_mode
from credit.groupability import check_options as check_score_options
from credit.split import LEVELS
from credit.split import check_options as check_split_options

BASELINES = ("reference", "contrast", "within", "nested", "split")
COVERS = ("lines", "edit", "call")


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


@dataclass(frozen=True)
class DiDPOConfig:
    """Every option of `credit.didpo`, checked when made; the defaults are the reference's rules.

    Attributes:
      mode: "mean_norm" (reference) or "mean_std_norm", for A^E and A^D alike.
      eps: added to stds.
      gamma: discount of the step returns.
      lambda_: weight of A^D on covered tokens.
      baseline: "reference" (A^D = G - mean G over the anchor), "contrast" (the effect Delta of
        making the edit) or "within" (each exact variant against the anchor's other members; Delta
        for one variant) or "nested" (Delta on the covered tokens outside the changed lines, W on
        the lines; with cover="call" Delta reaches the tool name that chose to edit) or "split"
        (each anchor's effect, the others held fixed, split between its occurrences and the
        trajectories that leave it out). Formulas in `credit.didpo`'s module docstring.
      count: how an anchor's group size n in psi counts members: "steps" (reference: step rows) or
        "trajectories" (distinct trajectories). A^E always counts each trajectory once.
      singleton: rule for a task with a single sample, "reward" (A^E = r, reference) or "zero".
      levels: sub-diff levels, a non-empty tuple of "file", "hunk", "syntax", "block".
      syntax: "tree-sitter" or "indent" (see `credit.split.split_diff`).
      similarity: Dice similarity for near-duplicate sub-diffs (1.0: exact groups only).
      s0, g0, phi_form, psi_form: groupability score parameters (`credit.groupability`).
      max_anchors: at most this many anchors per task (the reference's K = 64); None: no cap
        (docs/benchmarks.md: the cap bound every task of a paper-shape batch and dropped a sixth
        of the changed lines, while uncapped selection costs the same time).
      contrast_std: divide Delta (or the within-anchor contrast) by the task's outcome std.
      contrast_shrink: k in the shrinkage n / (n + k) of Delta (0: none).
      cover: which characters an occurrence credits: "lines" (its changed lines' text), "edit"
        (the whole edit argument holding each line, `Step.edits`: the reference's snippet credit)
        or "call" (the whole tool call, tool name included, `Step.calls`). Each line's own text is
        credited first; the argument or call only fills the tokens no own text covers. With
        "lines", a line whose text is not in the action (a sed edit) takes the edit argument of
        its call (`Step.line_calls`). Without those Step fields every cover is "lines".
    """

    mode: str = "mean_norm"
    eps: float = 1e-6
    gamma: float = 0.95
    lambda_: float = 1.0
    baseline: str = "reference"
    count: str = "steps"
    singleton: str = "reward"
    levels: tuple[str, ...] = LEVELS
    syntax: str = "tree-sitter"
    similarity: float = 0.8
    s0: float = 8.0
    g0: float = 8.0
    phi_form: str = "saturating"
    psi_form: str = "saturating"
    max_anchors: Optional[int] = None
    contrast_std: bool = False
    contrast_shrink: float = 0.0
    cover: str = "lines"

    def __post_init__(self) -> None:
        check_mode(self.mode)
        _one_of("baseline", self.baseline, BASELINES)
        _one_of("count", self.count, COUNTS)
        _one_of("singleton", self.singleton, SINGLETON_RULES)
        _one_of("cover", self.cover, COVERS)
        check_split_options(self.levels, self.syntax)
        checked = {
            "eps": option("eps", self.eps, 0.0),
            "gamma": option("gamma", self.gamma, 0.0, 1.0),
            "lambda_": option("lambda_", self.lambda_),
            "similarity": option("similarity (in (0, 1]; 1.0: exact groups only)", self.similarity, 0.0, 1.0,
                                 above=True),
            "s0": option("s0", self.s0, 0.0, above=True),
            "g0": option("g0", self.g0, 0.0, above=True),
            "contrast_shrink": option("contrast_shrink", self.contrast_shrink, 0.0),
        }
        if self.max_anchors is not None:
            checked["max_anchors"] = option("max_anchors (or None: no cap)", self.max_anchors, 1, integer=True)
        check_score_options(checked["s0"], checked["g0"], self.phi_form, self.psi_form)
        if not isinstance(self.contrast_std, (bool, np.bool_)):
            raise TypeError(f"contrast_std must be True or False, got {self.contrast_std!r}")
        # stored as plain floats, ints, bools and a tuple: equal options give equal, hashable configs
        for name, value in {**checked, "levels": tuple(self.levels), "contrast_std": bool(self.contrast_std)}.items():
            object.__setattr__(self, name, value)


OPTIONS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(DiDPOConfig))

PRESETS: Mapping[str, DiDPOConfig] = MappingProxyType({
    # the paper's rules (its reference implementation's defaults, max_anchors aside: see above)
    "didpo": DiDPOConfig(),
    # the effect of making an edit instead of the spread among those who made it
    "didpo-contrast": DiDPOConfig(baseline="contrast"),
    # the rule measured best here (docs/benchmarks.md, "learning efficiency: built multi-region
    # tasks"): each anchor's effect split between making the edit and leaving it out, credited on
    # the whole tool call (the tool name is the choice to edit at all)
    "didpo-split": DiDPOConfig(baseline="split", cover="call"),
})


def preset(name: str) -> DiDPOConfig:
    """The config of preset `name` (one of `PRESETS`)."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown DiDPO preset {name!r}; known presets: {', '.join(PRESETS)}") from None


def resolve(config: DiDPOConfig | str, overrides: Mapping[str, Any]) -> DiDPOConfig:
    """`config` (a DiDPOConfig or a preset name) with `overrides` (option name -> value) applied."""
    if isinstance(config, str):
        config = preset(config)
    elif not isinstance(config, DiDPOConfig):
        raise TypeError(f"config must be a credit.DiDPOConfig or a preset name ({', '.join(PRESETS)}), "
                        f"got {config!r}")
    unknown = [name for name in overrides if name not in OPTIONS]
    if unknown:
        raise TypeError(f"didpo has no option {', '.join(map(repr, unknown))}; its options: {', '.join(OPTIONS)}")
    return dataclasses.replace(config, **overrides) if overrides else config
