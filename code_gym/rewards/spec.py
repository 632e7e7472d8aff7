"""Reward specs: which outcome rewards, with which weights, plus optional step shaping and the
integrity policy. `make_reward` turns what users pass to `gym.make(..., reward=...)` into one.

    None (the default)                          {"f2p": 0.75, "probes": 0.25}
    "f2p"                                       FAIL_TO_PASS fixed, PASS_TO_PASS kept; weight 1
    "fraction"                                  the fraction of graded tests that pass
    {"tests": 1.0, "static": 0.1}               a weighted sum
    {"fraction": {"weight": 1.0, "hidden": 2.0}, "shaping": {"progress": 0.15, "invalid": 0.01}}
    {"f2p": 1.0, "judge": {"weight": 0.2, "base_url": "http://127.0.0.1:8000/v1", "model": "m"}}
    {"f2p": 1.0, "certainty": 0.1}              label-free: only next to a verifiable component
    {"obligations": 0.75, "probes": 0.25}       verifier-graded tasks (Dafny): proof obligations by weight

A final patch that fails the integrity audit gets `integrity_penalty` (default 0) instead of the
weighted sum when the policy is "enforce"; "report" only lists the findings; "off" skips the audit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from code_gym.actions.parse import ToolCall
from code_gym.grading.grade import GradeResult
from code_gym.rewards.base import Response, Score, Submission
from code_gym.rewards.judge import Judge
from code_gym.rewards.labelfree import SelfCertainty
from code_gym.rewards.obligations import ObligationScore
from code_gym.rewards.probes import ProbeScore
from code_gym.rewards.shaping import ShapingState, StepShaping
from code_gym.rewards.static import StaticScore
from code_gym.rewards.tests import AllPass, FailToPass, PassFraction
from code_gym.tasks.task import Task
from code_gym.actions.tools import ToolResult


class Component(Protocol):
    def __call__(self, sub: Submission) -> float | Score: ...


COMPONENTS: dict[str, type] = {"f2p": FailToPass, "binary": AllPass, "fraction": PassFraction, "tests": PassFraction,
                               "static": StaticScore, "judge": Judge, "certainty": SelfCertainty, "probes": ProbeScore,
                               "obligations": ObligationScore}
VERIFIABLE = (FailToPass, AllPass, PassFraction, ProbeScore, ObligationScore)  # components that check the patch against the task's tests
INTEGRITY_MODES = ("enforce", "report", "off")
Entries = dict[str, dict]  # breakdown entries: name -> {"value", "weight", "reward", ...}


@dataclass(frozen=True)
class RewardSpec:
    components: tuple[tuple[str, float, Component], ...] = (("f2p", 0.75, FailToPass()), ("probes", 0.25, ProbeScore()))
    shaping: StepShaping | None = None
    integrity: str = "enforce"
    integrity_penalty: float = 0.0

    def __post_init__(self):
        if self.integrity not in INTEGRITY_MODES:
            raise ValueError(f"integrity must be one of {INTEGRITY_MODES}, got {self.integrity!r}")
        guarded = [name for name, _, c in self.components if getattr(c, "mixed_only", False)]
        if guarded and not any(isinstance(c, VERIFIABLE) and w > 0 for _, w, c in self.components):
            raise ValueError(
                f"reward component(s) {guarded} are label-free: trained on alone, certainty rewards rise, then "
                "collapse (shorter outputs, lost reasoning; docs/rewards.md). Mix them with a verifiable "
                "component of positive weight, e.g. {'f2p': 1.0, 'certainty': 0.1}, or pass the option "
                "{'mixed_only': False} to train on them alone")

    @property
    def audits(self) -> bool:
        return self.integrity != "off"

    def outcome(self, sub: Submission) -> tuple[float, Entries]:
        """The graded reward of a final patch and its breakdown entries. Under "enforce", a patch
        with integrity findings gets the penalty; the components keep their values for diagnosis
        but contribute 0."""
        enforced = self.integrity == "enforce" and sub.result.violation
        entries: Entries = {}
        for name, weight, component in self.components:
            if enforced and getattr(component, "skip_when_enforced", False):
                entries[name] = {"value": 0.0, "weight": weight, "reward": 0.0,
                                 "skipped": "the patch failed the integrity audit"}
                continue
            scored = component(sub)
            value, details = (scored.value, scored.details) if isinstance(scored, Score) else (scored, {})
            value = float(value)
            entries[name] = {"value": value, "weight": weight, "reward": 0.0 if enforced else weight * value, **details}
        findings = len(sub.result.integrity or [])
        entries["integrity"] = {"value": float(findings), "weight": self.integrity_penalty,
                                "reward": self.integrity_penalty if enforced else 0.0, "mode": self.integrity}
        return sum(e["reward"] for e in entries.values()), entries

    def episode(self, task: Task, changes: Callable[[], dict[str, bytes | None]],
                untouched: Callable[[], int | None] | None = None) -> "EpisodeReward":
        """`untouched`: the visible tests the untouched repository passes, step shaping's baseline
        (`shaping.untouched_passed`); None: the episode's first `run_tests` sets it."""
        return EpisodeReward(self, task, changes, untouched)


class EpisodeReward:
    """One episode's rewards: shaping entries at each step, the outcome at the end."""

    def __init__(self, spec: RewardSpec, task: Task, changes: Callable[[], dict[str, bytes | None]],
                 untouched: Callable[[], int | None] | None = None):
        self.spec = spec
        self.task = task
        self.shaping: ShapingState | None = (spec.shaping.episode(task, changes, spec.audits, untouched)
                                             if spec.shaping else None)
        self.responses: list[Response] = []

    def step(self, pairs: list[tuple[ToolCall | None, ToolResult]], invalid: bool,
             response: Response | None = None) -> Entries:
        """The step's shaping entries; `response` (the step's text and sampling log-probs) is kept
        for the outcome components that read it (`certainty`)."""
        if response is not None:
            self.responses.append(response)
        return self.shaping.step(pairs, invalid) if self.shaping else {}

    def finish(self, result: GradeResult, changes: dict[str, bytes | None]) -> tuple[float, Entries]:
        """(the outcome reward, its entries plus any shaping clawback)."""
        outcome, entries = self.spec.outcome(Submission(self.task, changes, result, tuple(self.responses)))
        if self.shaping and self.spec.integrity == "enforce" and result.violation:
            entries.update(self.shaping.clawback())
        return outcome, entries


def total(entries: Entries) -> float:
    return float(sum(e["reward"] for e in entries.values()))


def make_reward(spec: Any = None, integrity: str = "enforce", integrity_penalty: float = 0.0) -> RewardSpec:
    """A RewardSpec from a name, a {name: weight or {"weight": w, **options}} dict, or a RewardSpec
    (returned as is). None means the default: f2p 0.75 + probes 0.25 (each 0 for the untouched
    repository and 1 for the reference; probes take the f2p value where a task has none). The key "shaping" takes True (reference coefficients)
    or {"progress": p, "invalid": i}."""
    if isinstance(spec, RewardSpec):
        return spec
    if spec is None:
        spec = {"f2p": 0.75, "probes": 0.25}
    if isinstance(spec, str):
        spec = {spec: 1.0}
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"reward must be a name ({', '.join(COMPONENTS)}), a non-empty dict of name -> weight, "
                         f"or a RewardSpec; got {spec!r}")
    components = []
    shaping = None
    for name, value in spec.items():
        if name == "shaping":
            shaping = _shaping(value)
            continue
        if name not in COMPONENTS:
            raise ValueError(f"unknown reward component {name!r}; choose from: {', '.join(COMPONENTS)}, shaping")
        components.append((name, *_component(name, value)))
    if not components:
        raise ValueError("reward needs at least one outcome component besides 'shaping', e.g. {'fraction': 1.0}")
    return RewardSpec(tuple(components), shaping, integrity, float(integrity_penalty))


def _component(name: str, value: Any) -> tuple[float, Component]:
    if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
        raise ValueError(f"reward component {name!r} takes a weight (number) or a dict of options, got {value!r}")
    if isinstance(value, dict):
        options = dict(value)
        weight = options.pop("weight", 1.0)
        try:
            return float(weight), COMPONENTS[name](**options)
        except TypeError:
            raise ValueError(f"reward component {name!r} does not take options {sorted(options)}") from None
    return float(value), COMPONENTS[name]()


def _shaping(value: Any) -> StepShaping | None:
    if value is True:
        return StepShaping()
    if value is False or value is None:
        return None
    if isinstance(value, dict):
        try:
            return StepShaping(**value)
        except TypeError:
            raise ValueError(f"shaping takes 'progress' and 'invalid', got {sorted(value)}") from None
    raise ValueError(f"shaping must be True, False or {{'progress': p, 'invalid': i}}, got {value!r}")
