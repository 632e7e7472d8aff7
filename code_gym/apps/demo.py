"""The main job (`code-gym demo`): rollouts of the built-in policy on every task, credit from
several estimators on them, a summary table and a self-contained HTML report.

The report shows, per task, the episode outcomes, DiDPO's anchor groups and every step's diff with
each changed line coloured by the advantage its tokens got (added lines: the characters that
wrote them, from the environment's provenance; removed lines: where the action names them). Its
pieces are `code_gym.apps.report`'s, which makes the same view for any rollouts.
"""
from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

import credit
from code_gym.apps.policy import Decision, EditPolicy, build_decisions
from code_gym.apps.report import (ESTIMATORS, anchors_html, controls_html, diff_html, line_advantages, page,
                                  table_html, token_scale)
from code_gym.tasks.task import Task
from code_gym.apps.train import Episode, choice_advantages, estimator, make_env, play
from code_gym.grading.grade import GradeCache



@dataclass
class Demo:
    tasks: list[Task]
    decisions: dict[str, list[Decision]]
    episodes: list[Episode]
    results: dict[str, credit.Result]  # estimator name -> credit on `episodes`
    seconds: float
    grades_run: int
    grades_cached: int

    def of_task(self, task_id: str) -> list[int]:
        return [i for i, e in enumerate(self.episodes) if e.task_id == task_id]


def run_demo(tasks: Sequence[Task], group_size: int = 8, variants: int = 2, seed: int = 0,
             estimators: Sequence[str] = ESTIMATORS, isolation: str = "auto", progress: bool = False) -> Demo:
    """`group_size` episodes of the untrained built-in policy on each task, and each estimator's credit."""
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 (group-relative credit needs a group), got {group_size}")
    started = time.monotonic()
    tasks = list(tasks)
    decisions = {t.id: build_decisions(t, variants, seed) for t in tqdm(tasks, desc="candidates", disable=not progress)}
    policy = EditPolicy(decisions)
    rng = np.random.default_rng(seed)
    cache = GradeCache()
    env = make_env(tasks, cache, max_steps=max(30, max(len(d) for d in decisions.values()) + 1), isolation=isolation)
    try:
        plan = [(t, policy.sample(t.id, rng)) for t in tasks for _ in range(group_size)]
        episodes = [play(env, task, decisions[task.id], choices)
                    for task, choices in tqdm(plan, desc="rollouts", unit="episode", disable=not progress)]
    finally:
        env.close()
    trajectories = [e.trajectory for e in episodes]
    results = {name: estimator(name)(trajectories) for name in tqdm(estimators, desc="credit", disable=not progress)}
    return Demo(tasks, decisions, episodes, results, time.monotonic() - started, cache.misses, cache.hits)


def separation(values: np.ndarray, episodes: Sequence[Episode], decisions: Mapping[str, Sequence[Decision]]) -> float:
    """How well choice advantages rank right edits above wrong ones: over every pair (a reference
    choice, a wrong choice) at the same decision of the same task, the fraction where the reference
    choice has the higher advantage (ties count half). 0.5: no separation; NaN: no pairs."""
    wins = pairs = 0.0
    for task_id in dict.fromkeys(e.task_id for e in episodes):
        rows = [i for i, e in enumerate(episodes) if e.task_id == task_id]
        for d in range(len(decisions[task_id])):
            right = np.array([values[i, d] for i in rows if episodes[i].choices[d] == 0])
            wrong = np.array([values[i, d] for i in rows if episodes[i].choices[d] != 0])
            if right.size and wrong.size:
                diff = right[:, None] - wrong[None, :]
                wins += (diff > 0).sum() + 0.5 * (diff == 0).sum()
                pairs += diff.size
    return wins / pairs if pairs else float("nan")


def summary(demo: Demo) -> tuple[list[str], list[list]]:
    """The summary table: header and one row per task, then the whole suite."""
    names = list(demo.results)
    values = {n: choice_advantages(r, demo.episodes, demo.decisions) for n, r in demo.results.items()}
    header = ["task", "regions", "resolved", "reward"] + [f"sep {n}" for n in names] + ["anchors"]
    rows, didpo = [], _didpo_name(demo)
    didpo_anchors = demo.results[didpo].anchors if didpo else ()
    for task in demo.tasks:
        idx = demo.of_task(task.id)
        episodes = [demo.episodes[i] for i in idx]
        anchors = sum(a.task_id == task.id for a in didpo_anchors)
        rows.append([task.id, len(demo.decisions[task.id]), f"{sum(e.resolved for e in episodes)}/{len(episodes)}",
                     f"{np.mean([e.reward for e in episodes]):.2f}"]
                    + [_fmt(separation(values[n][idx], episodes, demo.decisions)) for n in names] + [anchors])
    rows.append(["all", sum(len(d) for d in demo.decisions.values()),
                 f"{sum(e.resolved for e in demo.episodes)}/{len(demo.episodes)}",
                 f"{np.mean([e.reward for e in demo.episodes]):.2f}"]
                + [_fmt(separation(values[n], demo.episodes, demo.decisions)) for n in names]
                + [len(didpo_anchors)])
    return header, rows


def _didpo_name(demo: Demo) -> str | None:
    """The first DiDPO preset among the demo's estimators (None: DiDPO not run)."""
    return next((n for n in demo.results if n in credit.PRESETS), None)


def _fmt(x: float) -> str:
    return "-" if np.isnan(x) else f"{x:.2f}"


def write_report(demo: Demo, path: Path) -> Path:
    """The self-contained HTML report (inline CSS and a few lines of JavaScript, no network)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(demo))
    return path


def render_report(demo: Demo) -> str:
    names = list(demo.results)
    default = _didpo_name(demo) or names[0]
    scale = token_scale(demo.results)
    header, rows = summary(demo)
    resolved = sum(e.resolved for e in demo.episodes)
    parts = [
        f"<h1>code-gym demo: credit on {len(demo.episodes)} episodes of the built-in policy</h1>",
        f"<p class=meta>{len(demo.tasks)} tasks, {len(demo.episodes) // max(len(demo.tasks), 1)} episodes each, "
        f"{resolved} resolved; {demo.seconds:.0f} s; grading: {demo.grades_run} runs of the tests, "
        f"{demo.grades_cached} cached (same final files, same verdict).</p>",
        controls_html(names, default),
        "<h2>Summary</h2>",
        "<p class=note><b>sep</b>: over every (right edit, wrong edit) pair made at the same region of a task, "
        "the fraction where the right edit's tokens got the higher advantage (0.5 = no separation). "
        "<b>anchors</b>: DiDPO's groups of similar sub-diffs.</p>",
        table_html(header, rows),
    ]
    for k, task in enumerate(demo.tasks):
        parts.append(_task_section(demo, task, names, default, scale, open_=k == 0))
    return page("code-gym demo report", "\n".join(parts), scale)


def _task_section(demo: Demo, task: Task, names: list[str], default: str, scale: Mapping[str, float],
                  open_: bool) -> str:
    idx = demo.of_task(task.id)
    decisions = demo.decisions[task.id]
    regions = "".join(f"<li><code>{html.escape(d.path)}</code> lines {d.lines[0]}-{d.lines[1]}: "
                      f"{', '.join(d.labels)}</li>" for d in decisions)
    outcome_rows = []
    for i in idx:
        e = demo.episodes[i]
        labels = [decisions[d].candidates[c].kind for d, c in enumerate(e.choices)]
        outcome_rows.append([f"#{i}", " / ".join(labels), f"{e.reward:.2f}", f"{e.tests_passed}/{e.tests_total}",
                             "yes" if e.resolved else "no"]
                            + [f"{demo.results[n].episode[i]:+.2f}" for n in names])
    outcomes = table_html(["episode", "choices (one per region)", "reward", "tests", "resolved"]
                          + [f"A^E {n}" for n in names], outcome_rows)
    didpo = _didpo_name(demo)
    anchors = anchors_html(demo.results.get(didpo), task.id, didpo)
    rewards = [demo.episodes[i].reward for i in idx]
    shown = {idx[int(np.argmax(rewards))], idx[int(np.argmin(rewards))]} if open_ else set()  # best and worst
    episodes = "".join(_episode(demo, i, names, default, scale, open_=i in shown) for i in idx)
    statement = html.escape(task.statement.strip().splitlines()[0])
    return (f"<details class=task{' open' if open_ else ''}><summary><h2>{html.escape(task.id)}</h2></summary>"
            f"<p>{statement}</p><h3>Regions and candidates</h3><ul>{regions}</ul>"
            f"<h3>Episode outcomes</h3>{outcomes}<h3>DiDPO anchor groups</h3>{anchors}"
            f"<h3>Trajectories</h3>{episodes}</details>")


def _episode(demo: Demo, i: int, names: list[str], default: str, scale: Mapping[str, float], open_: bool) -> str:
    e = demo.episodes[i]
    decisions = demo.decisions[e.task_id]
    steps = []
    for t, step in enumerate(e.trajectory.steps):
        label = decisions[t].candidates[e.choices[t]].kind if t < len(e.choices) else "submit"
        per_line = {n: line_advantages(step, demo.results[n].tokens[i][t]) for n in names}
        steps.append(f"<div class=step><div class=steph>step {t}: <b>{html.escape(label)}</b></div>"
                     f"{diff_html(step.diff, per_line, default, scale)}</div>")
    verdict = "resolved" if e.resolved else "not resolved"
    return (f"<details class=episode{' open' if open_ else ''}><summary>episode #{i}: reward {e.reward:.2f}, "
            f"{e.tests_passed}/{e.tests_total} tests, {verdict}</summary>{''.join(steps)}</details>")
