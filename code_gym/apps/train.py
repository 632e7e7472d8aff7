"""Train the built-in policy (`code_gym.apps.policy`) with any `credit` estimator, on the real
environment and the real tests.

One update: G rollouts of the current policy on every task (each one a real CodeRepo-v0 episode:
tool calls, step diffs, provenance, hidden tests), credit from the estimator on those
trajectories, then one gradient step per task. Each branch point of the policy learns from the
estimator's advantage of the token where the candidates part (see `code_gym.apps.policy`), as each
token of a language model learns from its own advantage.

Grading is deterministic given the final files, so results are cached under a hash of the
changed files (`GradeCache`): a combination of choices is tested once per process, and the
episodes themselves still run through the environment.
"""
from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

import credit
from code_gym.env.environment import CodeRepoEnv
from code_gym.grading.grade import GradeCache
from code_gym.apps.policy import Decision, EditPolicy, build_decisions, token_offsets
from code_gym.env.episode import Scripted, run_episode
from code_gym.tasks.task import Task, TaskError
from code_gym.env.trajectory import RecordTrajectory


def check_estimator_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise ValueError, naming the estimator and what it accepts, when `name` (one of
    `credit.ESTIMATORS`) takes no option of that name or refuses a value (`credit.check_options`):
    checked before training, since the estimator first runs only after an update's rollouts."""
    credit.check_options(name, dict(options))


def estimator(name: str, **options: Any) -> Callable[[list[credit.Trajectory]], credit.Result]:
    """The credit estimator called `name` (one of `credit.ESTIMATORS`) with `options` bound and
    checked (`check_estimator_options`)."""
    check_estimator_options(name, options)
    fn = credit.get(name)
    return lambda trajectories: fn(trajectories, **options)


@dataclass(frozen=True)
class Episode:
    task_id: str
    choices: tuple[int, ...]  # candidate index per decision
    trajectory: credit.Trajectory  # steps carry word-level token offsets
    resolved: bool
    tests_passed: int
    tests_total: int
    # per decision, (step, character offset) of its candidate's text in that step's action: with
    # several regions per step, one response holds several decisions' candidates
    placement: tuple[tuple[int, int], ...] = ()

    @property
    def reward(self) -> float:
        return self.trajectory.reward

    def place(self, decision: int) -> tuple[int, int]:
        return self.placement[decision] if self.placement else (decision, 0)


SEPARATOR = "\n\n"  # between the candidates packed into one response


def pack(decisions: Sequence[Decision], choices: Sequence[int],
         regions_per_step: int = 1) -> tuple[list[str], tuple[tuple[int, int], ...]]:
    """The responses of an episode that plays `choices`, `regions_per_step` decisions in each
    (0: all of them in one), and each decision's (step, offset) in them."""
    if regions_per_step < 0:
        raise ValueError(f"regions_per_step must be >= 0 (0: every region in one step), got {regions_per_step}")
    size = regions_per_step or max(len(decisions), 1)
    actions, placement = [], []
    for first in range(0, len(decisions), size):
        parts, offset = [], 0
        for d in range(first, min(first + size, len(decisions))):
            placement.append((len(actions), offset))
            text = decisions[d].candidates[choices[d]].action
            parts.append(text)
            offset += len(text) + len(SEPARATOR)
        actions.append(SEPARATOR.join(parts))
    return actions, tuple(placement)


def steps_needed(decisions: Sequence[Decision], regions_per_step: int = 1) -> int:
    """Steps of an episode: the responses `pack` makes, then submit."""
    size = regions_per_step or max(len(decisions), 1)
    return -(-len(decisions) // size) + 1


def make_env(tasks: Sequence[Task], grade_cache: GradeCache | None = None, max_steps: int = 30,
             **options: Any) -> RecordTrajectory:
    """A recording CodeRepo-v0 env over `tasks` whose grades go through `grade_cache`."""
    return RecordTrajectory(CodeRepoEnv(tasks=list(tasks), max_steps=max_steps,
                                        grader=grade_cache if grade_cache is not None else GradeCache(),
                                        **options))


def play(env: RecordTrajectory, task: Task, decisions: Sequence[Decision], choices: Sequence[int],
         regions_per_step: int = 1) -> Episode:
    """One episode: the chosen candidate of each decision, `regions_per_step` of them in each
    response (0: all in one), then submit."""
    needed = steps_needed(decisions, regions_per_step)
    if env.unwrapped.max_steps < needed:
        raise ValueError(f"{task.id} needs {needed} steps; the env allows {env.unwrapped.max_steps}")
    actions, placement = pack(decisions, choices, regions_per_step)
    result = run_episode(env, Scripted(actions), task)
    recorded, info = result.trajectory, result.info
    steps = tuple(replace(s, token_offsets=token_offsets(s.action)) for s in recorded.steps)
    return Episode(task.id, tuple(int(c) for c in choices), credit.Trajectory(recorded.task_id, steps, recorded.reward),
                   result.resolved, int(info.get("tests_passed", 0)), int(info.get("tests_total", 0)), placement)


def verify_decisions(env: RecordTrajectory, task: Task, decisions: Sequence[Decision],
                     regions_per_step: int = 1) -> tuple[list[Decision], list[str]]:
    """Check the candidates through the env: the all-reference episode must resolve, and each wrong
    candidate (played with the reference everywhere else) must not; those that do are dropped.
    Returns the kept decisions and a note per dropped candidate."""
    reference = [0] * len(decisions)
    if not play(env, task, decisions, reference, regions_per_step).resolved:
        raise TaskError(f"{task.id}: the reference candidates together do not resolve the task")
    kept, dropped = [], []
    for d, decision in enumerate(decisions):
        candidates = [decision.candidates[0]]
        for c, candidate in enumerate(decision.candidates[1:], 1):
            if play(env, task, decisions, reference[:d] + [c] + reference[d + 1:], regions_per_step).resolved:
                dropped.append(f"{task.id}: {decision.path}:{decision.lines[0]} {candidate.kind} passes the tests")
            else:
                candidates.append(candidate)
        kept.append(replace(decision, candidates=tuple(candidates)))
    return kept, dropped


def branch_advantages(result: credit.Result, episodes: Sequence[Episode],
                      decisions: Mapping[str, Sequence[Decision]]) -> list[list[np.ndarray]]:
    """Per episode and decision, (n_branches,): the estimator's advantage of the token at each branch
    point on the path of the chosen candidate (`code_gym.apps.policy`), NaN off the path."""
    out = []
    for i, episode in enumerate(episodes):
        rows = []
        for d, c in enumerate(episode.choices):
            branch_list = decisions[episode.task_id][d].branches
            values = np.full(len(branch_list), np.nan)
            step, start = episode.place(d)
            offsets = episode.trajectory.steps[step].offsets
            tokens = np.asarray(result.tokens[i][step], np.float64)
            for n, branch in enumerate(branch_list):
                if branch.way(c) is not None:
                    values[n] = tokens[_token_at(offsets, start + branch.position)]
            rows.append(values)
        out.append(rows)
    return out


def choice_advantages(result: credit.Result, episodes: Sequence[Episode],
                      decisions: Mapping[str, Sequence[Decision]]) -> np.ndarray:
    """(N, D) advantage of each episode's choice at each decision: the mean over the branch tokens
    on its path (rows of tasks with fewer decisions are padded with NaN)."""
    per_branch = branch_advantages(result, episodes, decisions)
    out = np.full((len(episodes), max(len(e.choices) for e in episodes)), np.nan)
    for i, rows in enumerate(per_branch):
        for d, values in enumerate(rows):
            out[i, d] = np.nanmean(values) if np.isfinite(values).any() else np.nan
    return out


def _token_at(offsets: np.ndarray, position: int) -> int:
    """The token covering character `position` (the last token when it lies past the end)."""
    covering = np.flatnonzero((offsets[:, 0] <= position) & (offsets[:, 1] > position))
    return int(covering[0]) if covering.size else int(offsets.shape[0] - 1)


def whiten(advantages: Sequence[np.ndarray], eps: float = 1e-8) -> list[np.ndarray]:
    """Arrays divided by the std of all their finite entries together (unchanged when those are all equal)."""
    finite = np.concatenate([a[np.isfinite(a)] for a in advantages]) if advantages else np.zeros(0)
    std = finite.std() if finite.size else 0.0
    return [a / (std + eps) for a in advantages] if std > eps else list(advantages)


@dataclass(frozen=True)
class TrainConfig:
    estimator: str = "didpo"  # one of credit.ESTIMATORS
    options: Mapping[str, Any] = field(default_factory=dict)  # estimator keyword options
    updates: int = 20
    group_size: int = 8  # rollouts per task per update (G)
    lr: float = 2.0  # step size on the logits
    whiten: bool = True  # divide each task's choice advantages by their std (same step size for every estimator)
    variants: int = 2  # wrong variants per decision, besides "untouched"
    seed: int = 0
    verify: bool = True  # drop wrong variants that pass the tests (verify_decisions; given decisions are trusted)
    regions_per_step: int = 1  # decisions packed into one response (0: every region of the task in one step)


@dataclass(frozen=True)
class UpdateStats:
    update: int  # 0: the initial policy
    episodes: int  # rollouts so far
    success_probability: float  # mean over tasks of P(reference at every decision)
    success_rate: float  # fraction of this update's rollouts that resolved (NaN at update 0)
    mean_reward: float  # mean outcome reward of this update's rollouts (NaN at update 0)
    seconds: float  # wall time so far
    per_task: Mapping[str, float]  # each task's success probability


class Trainer:
    """Policy-gradient training of an `EditPolicy` on `tasks` (see the module docstring)."""

    def __init__(self, tasks: Sequence[Task], config: TrainConfig = TrainConfig(),
                 grade_cache: GradeCache | None = None, isolation: str = "auto",
                 decisions: Mapping[str, Sequence[Decision]] | None = None, progress: bool = False):
        if config.updates < 0 or config.group_size < 2:
            raise ValueError("updates must be >= 0 and group_size >= 2 (group-relative credit needs a group)")
        if config.regions_per_step < 0:
            raise ValueError(f"regions_per_step must be >= 0 (0: every region in one step), got {config.regions_per_step}")
        self.tasks = list(tasks)
        self.config = config
        self.credit = estimator(config.estimator, **config.options)
        self.grade_cache = grade_cache if grade_cache is not None else GradeCache()
        given = dict(decisions or {})
        self.decisions = {t.id: list(given[t.id]) if t.id in given else build_decisions(t, config.variants, config.seed)
                          for t in self.tasks}
        longest = max(len(d) for d in self.decisions.values())
        self.env = make_env(self.tasks, self.grade_cache, max_steps=max(30, longest + 1), isolation=isolation)
        self.dropped: list[str] = []
        built = [t for t in self.tasks if t.id not in given] if config.verify else []
        for task in tqdm(built, desc="verify candidates", unit="task", disable=not progress):
            self.decisions[task.id], dropped = verify_decisions(self.env, task, self.decisions[task.id])
            self.dropped += dropped
        self.policy = EditPolicy(self.decisions, lr=config.lr)
        self.rng = np.random.default_rng(config.seed)
        self.episodes = 0
        self.started = time.monotonic()

    def rollouts(self, tasks: Sequence[Task] | None = None) -> list[Episode]:
        """G episodes of the current policy on each task (default: every task)."""
        return [play(self.env, task, self.decisions[task.id], self.policy.sample(task.id, self.rng),
                     self.config.regions_per_step)
                for task in (self.tasks if tasks is None else tasks) for _ in range(self.config.group_size)]

    def stats(self, update: int, batch: Sequence[Episode] = ()) -> UpdateStats:
        per_task = {t.id: self.policy.success_probability(t.id) for t in self.tasks}
        return UpdateStats(update, self.episodes, float(np.mean(list(per_task.values()))),
                           float(np.mean([e.resolved for e in batch])) if batch else float("nan"),
                           float(np.mean([e.reward for e in batch])) if batch else float("nan"),
                           time.monotonic() - self.started, per_task)

    def update(self, number: int, tasks: Sequence[Task] | None = None) -> UpdateStats:
        """Rollouts on `tasks` (default: all), credit, one gradient step per task."""
        tasks = self.tasks if tasks is None else tasks
        batch = self.rollouts(tasks)
        self.episodes += len(batch)
        per_branch = branch_advantages(self.credit([e.trajectory for e in batch]), batch, self.decisions)
        for task in tasks:
            rows = [i for i, e in enumerate(batch) if e.task_id == task.id]
            advantages = [np.stack([per_branch[i][d] for i in rows]) for d in range(len(self.decisions[task.id]))]
            if self.config.whiten:
                advantages = whiten(advantages)
            self.policy.update(task.id, np.asarray([batch[i].choices for i in rows]),
                               [np.nan_to_num(a) for a in advantages])
        return self.stats(number, batch)

    def run(self, progress: bool = False, until: float | None = None) -> list[UpdateStats]:
        """Up to `config.updates` updates; the history starts with the initial policy. With `until`,
        a task whose success probability reaches it is no longer trained (its policy is frozen),
        and the run ends when every task has."""
        history = [self.stats(0)]
        bar = tqdm(range(1, self.config.updates + 1), desc=f"train {self.config.estimator}", unit="update",
                   disable=not progress)
        for number in bar:
            active = [t for t in self.tasks if until is None or history[-1].per_task[t.id] < until]
            if not active:
                break
            history.append(self.update(number, active))
            bar.set_postfix(success=f"{history[-1].success_probability:.2f}")
        return history

    def close(self) -> None:
        self.env.close()


def updates_to_reach(history: Sequence[UpdateStats], threshold: float) -> int | None:
    """The first update whose success probability is at least `threshold` (None: never)."""
    return next((s.update for s in history if s.success_probability >= threshold), None)


def write_curves(runs: Mapping[str, Sequence[UpdateStats]], csv_path: Path, png_path: Path | None = None,
                 title: str = "built-in policy on CodeRepo-v0") -> None:
    """Learning curves of labelled runs: one CSV row per (run, update), and a PNG plot of the mean
    success probability and the batch reward per update."""
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    task_ids = sorted({t for history in runs.values() for s in history for t in s.per_task})
    with csv_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", "update", "episodes", "success_probability", "success_rate", "mean_reward",
                         "seconds"] + [f"p:{t}" for t in task_ids])
        for label, history in runs.items():
            for s in history:
                writer.writerow([label, s.update, s.episodes, f"{s.success_probability:.6f}", f"{s.success_rate:.4f}",
                                 f"{s.mean_reward:.4f}", f"{s.seconds:.2f}"]
                                + [f"{s.per_task.get(t, float('nan')):.6f}" for t in task_ids])
    if png_path is not None:
        plot_curves(runs, Path(png_path), title)


def plot_curves(runs: Mapping[str, Sequence[UpdateStats]], png_path: Path, title: str):
    """Write the success-probability and batch-reward curves of `runs` to `png_path`; returns the
    (closed) figure. The reward axis spans [0, 1] and whatever the rewards reach beyond it: a reward
    spec with penalties makes negative means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, history in runs.items():
        updates = [s.update for s in history]
        left.plot(updates, [s.success_probability for s in history], label=label, lw=1.6)
        right.plot(updates[1:], [s.mean_reward for s in history[1:]], label=label, lw=1.2)
    left.axhline(0.9, color="grey", ls=":", lw=1)
    left.set(xlabel="update", ylabel="P(resolve) = prod_d pi_d(reference)", ylim=(0, 1.02), title="success probability")
    rewards = [s.mean_reward for history in runs.values() for s in history[1:]]
    right.set(xlabel="update", ylabel="mean outcome reward of the batch", ylim=reward_limits(rewards),
              title="batch reward")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return fig


def reward_limits(rewards: Sequence[float]) -> tuple[float, float]:
    """The reward axis: [0, 1] widened to every finite value, with a margin of 2% of the span."""
    finite = [r for r in rewards if math.isfinite(r)]
    low, high = min([0.0, *finite]), max([1.0, *finite])
    margin = 0.02 * (high - low)
    return (low - margin if low < 0 else low, high + margin)
