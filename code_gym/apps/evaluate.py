"""`code-gym eval`: a served model on a task set, n samples per task, scored.

The episodes are the model client's (`code_gym.apps.client.rollout`, concurrent, each graded by the
environment); the folder gets `rollouts.jsonl` (every trajectory, `credit.load_jsonl` reads it),
`rollouts.episodes.jsonl` (their `records.EpisodeRecord`: sample, resolved, time, tokens, context
events) and `summary.json`. A run in a folder that holds results plays only the (task, sample)
pairs missing there, so an interrupted evaluation resumes and a larger `samples` adds samples.

Scores (`score`): per task, c of n samples resolved gives pass@k by the unbiased estimator of Chen
et al. 2021 (`pass_at_k`); the suite's pass@k is its mean over the tasks with at least k samples.
The resolve rate is over episodes; rewards, steps, the server's token counts and wall times are
summed or averaged as their names say.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from code_gym.apps.records import EpisodeRecord, load_rollouts

TRAJECTORIES = "rollouts.jsonl"
SUMMARY = "summary.json"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that at least one of k samples drawn without replacement from n, c of them
    correct, is correct: 1 - C(n-c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large Language
    Models Trained on Code", eq. 1), in exact integers before the one division."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True)
class TaskScore:
    task_id: str
    samples: int  # finished samples counted
    resolved: int
    pass_at: dict[int, float | None]  # k -> pass@k (None: fewer than k samples)
    mean_reward: float
    mean_steps: float
    prompt_tokens: int | None  # summed; None when a record lacks the server's count
    completion_tokens: int | None
    seconds: float  # the episodes' wall times, summed
    context_events: int  # episodes whose context the client managed


@dataclass(frozen=True)
class EvalSummary:
    model: str
    samples: int  # asked per task
    ks: tuple[int, ...]
    tasks: tuple[TaskScore, ...]
    pass_at: dict[int, float | None]  # k -> the mean pass@k over the tasks with >= k samples
    pass_at_tasks: dict[int, int]  # k -> how many tasks that mean is over
    episodes: int
    resolved: int
    mean_reward: float
    prompt_tokens: int | None
    completion_tokens: int | None
    episode_seconds: float

    @property
    def resolve_rate(self) -> float:
        return self.resolved / self.episodes if self.episodes else 0.0

    @property
    def incomplete(self) -> list[str]:
        """Tasks with fewer finished samples than asked (failed or not yet played)."""
        return [t.task_id for t in self.tasks if t.samples < self.samples]

    def to_dict(self) -> dict:
        return {**asdict(self), "resolve_rate": self.resolve_rate, "incomplete": self.incomplete}


def _total(values: Sequence[int | None]) -> int | None:
    return sum(values) if all(v is not None for v in values) else None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def score_task(task_id: str, records: Sequence[EpisodeRecord], ks: Sequence[int]) -> TaskScore:
    """One task's scores from its finished samples' records."""
    n, c = len(records), sum(r.resolved for r in records)
    return TaskScore(task_id, n, c, {k: pass_at_k(n, c, k) if n >= k else None for k in ks},
                     _mean([r.reward for r in records]), _mean([r.steps for r in records]),
                     _total([r.prompt_tokens for r in records]), _total([r.completion_tokens for r in records]),
                     sum(r.seconds for r in records), sum(bool(r.context) for r in records))


def score(records: Sequence[EpisodeRecord], task_ids: Sequence[str], samples: int, ks: Sequence[int],
          model: str = "") -> EvalSummary:
    """The scores of `task_ids` (in that order) from the records of their samples 0 .. samples-1."""
    wanted = set(task_ids)
    counted = [r for r in records if r.task_id in wanted and r.sample < samples]
    tasks = tuple(score_task(t, [r for r in counted if r.task_id == t], ks) for t in task_ids)
    pass_at, pass_at_tasks = {}, {}
    for k in ks:
        values = [t.pass_at[k] for t in tasks if t.pass_at[k] is not None]
        pass_at[k], pass_at_tasks[k] = (_mean(values) if values else None), len(values)
    return EvalSummary(model, samples, tuple(ks), tasks, pass_at, pass_at_tasks, len(counted),
                       sum(r.resolved for r in counted), _mean([r.reward for r in counted]),
                       _total([r.prompt_tokens for r in counted]), _total([r.completion_tokens for r in counted]),
                       sum(r.seconds for r in counted))


def read_records(folder: Path) -> list[EpisodeRecord]:
    """The episode records an evaluation folder holds (none for a new folder)."""
    path = Path(folder) / TRAJECTORIES
    return list(load_rollouts(path).records or []) if path.is_file() else []


def write_summary(summary: EvalSummary, folder: Path) -> Path:
    path = Path(folder) / SUMMARY
    path.write_text(json.dumps(summary.to_dict(), indent=1) + "\n")
    return path


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _tokens(prompt: int | None, completion: int | None) -> str:
    return "-" if prompt is None or completion is None else f"{prompt:,} + {completion:,}"


def table(summary: EvalSummary) -> tuple[list[str], list[list]]:
    """The per-task table: header and rows."""
    header = (["task", "samples", "resolved"] + [f"pass@{k}" for k in summary.ks]
              + ["mean reward", "mean steps", "tokens (prompt + completion)", "time", "context managed"])
    rows = [[t.task_id, t.samples, t.resolved] + [_fmt(t.pass_at[k]) for k in summary.ks]
            + [f"{t.mean_reward:.2f}", f"{t.mean_steps:.1f}", _tokens(t.prompt_tokens, t.completion_tokens),
               f"{t.seconds:.1f}s", t.context_events] for t in summary.tasks]
    return header, rows


def headline(summary: EvalSummary) -> str:
    """The suite's scores in a few lines."""
    counts = set(summary.pass_at_tasks.values())
    passes = ", ".join(f"pass@{k} {_fmt(summary.pass_at[k])}" + ("" if len(counts) == 1 else
                                                                 f" (over {summary.pass_at_tasks[k]} tasks)")
                       for k in summary.ks) + (f" (means over {counts.pop()} tasks)" if len(counts) == 1 else "")
    lines = [f"{summary.model}: {passes}",
             f"resolve rate {summary.resolved}/{summary.episodes} = {_fmt(summary.resolve_rate)}; mean reward "
             f"{summary.mean_reward:.3f}; tokens {_tokens(summary.prompt_tokens, summary.completion_tokens)}; "
             f"episode time {summary.episode_seconds:.1f}s"]
    if summary.incomplete:
        lines.append(f"{len(summary.incomplete)} tasks have fewer than {summary.samples} finished samples (run the "
                     f"same command again to play the missing ones): {', '.join(summary.incomplete[:5])}"
                     + (" ..." if len(summary.incomplete) > 5 else ""))
    return "\n".join(lines)
