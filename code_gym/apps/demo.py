"""The main job (`code-gym demo`): rollouts of the built-in policy on every task, credit from
several estimators on them, a summary table and a self-contained HTML report.

The report shows, per task, the episode outcomes, DiDPO's anchor groups and every step's diff with
each changed line coloured by the advantage its tokens got (added lines: the characters that
wrote them, from the environment's provenance; removed lines: where the action names them).
"""
from __future__ import annotations

import html
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm
from unidiff import PatchSet

import credit
from code_gym.apps.policy import Decision, EditPolicy, build_decisions
from code_gym.tasks.task import Task
from code_gym.apps.train import Episode, choice_advantages, estimator, make_env, play
from code_gym.grading.grade import GradeCache
from credit.project import locate_lines

ESTIMATORS = ("grpo", *credit.STEP_LEVEL)  # the episode-level baseline and every step-level estimator


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


def line_advantages(step: credit.Step, tokens: np.ndarray) -> dict[tuple[str, str, int], float]:
    """Mean token advantage of each changed line of `step`'s diff, keyed by ("+", path, new line
    number) for added lines (their provenance span) and ("-", path, old line number) for removed
    lines (where the action names them). Lines with no span are left out."""
    offsets = step.offsets
    if not step.diff or offsets is None:
        return {}
    spans: dict[tuple[str, str, int], tuple[int, int]] = {
        ("+", p, line): (start, end) for p, line, start, end in step.provenance or ()}
    for pf in PatchSet(step.diff):
        removed = [line for hunk in pf for line in hunk if line.is_removed]
        for line, (start, end) in zip(removed, locate_lines(step.action, [r.value for r in removed]).tolist()):
            if start >= 0:
                spans[("-", pf.path, line.source_line_no)] = (start, end)
    out = {}
    for key, (start, end) in spans.items():
        inside = (offsets[:, 0] < end) & (offsets[:, 1] > start)
        if inside.any():
            out[key] = float(np.asarray(tokens)[inside].mean())
    return out


def write_report(demo: Demo, path: Path) -> Path:
    """The self-contained HTML report (inline CSS and a few lines of JavaScript, no network)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(demo))
    return path


def render_report(demo: Demo) -> str:
    names = list(demo.results)
    default = _didpo_name(demo) or names[0]
    scale = {n: max(1e-9, max((float(np.abs(np.asarray(t)).max()) for ts in r.tokens for t in ts
                               if t is not None and len(t)), default=1e-9)) for n, r in demo.results.items()}
    header, rows = summary(demo)
    resolved = sum(e.resolved for e in demo.episodes)
    parts = [
        f"<h1>code-gym demo: credit on {len(demo.episodes)} episodes of the built-in policy</h1>",
        f"<p class=meta>{len(demo.tasks)} tasks, {len(demo.episodes) // max(len(demo.tasks), 1)} episodes each, "
        f"{resolved} resolved; {demo.seconds:.0f} s; grading: {demo.grades_run} runs of the tests, "
        f"{demo.grades_cached} cached (same final files, same verdict).</p>",
        _controls(names, default, scale),
        "<h2>Summary</h2>",
        "<p class=note><b>sep</b>: over every (right edit, wrong edit) pair made at the same region of a task, "
        "the fraction where the right edit's tokens got the higher advantage (0.5 = no separation). "
        "<b>anchors</b>: DiDPO's groups of similar sub-diffs.</p>",
        _table(header, rows),
    ]
    for k, task in enumerate(demo.tasks):
        parts.append(_task_section(demo, task, names, default, scale, open_=k == 0))
    body = "\n".join(parts)
    return _PAGE.replace("__BODY__", body).replace("__SCALE__", json.dumps(scale))


def _controls(names: list[str], default: str, scale: Mapping[str, float]) -> str:
    buttons = "".join(
        f'<label><input type=radio name=est value="{n}"{" checked" if n == default else ""}> {html.escape(n)}</label>'
        for n in names)
    return (f'<div class=controls><b>colour lines by</b> {buttons} <span class=legend>'
            f'<span style="background:{_colour(-1, 1)}">negative</span><span style="background:#fff">0</span>'
            f'<span style="background:{_colour(1, 1)}">positive</span></span> '
            f'<span class=meta>(scale: the largest |advantage| of the estimator)</span></div>')


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
    outcomes = _table(["episode", "choices (one per region)", "reward", "tests", "resolved"]
                      + [f"A^E {n}" for n in names], outcome_rows)
    anchors = _anchors(demo, task.id)
    rewards = [demo.episodes[i].reward for i in idx]
    shown = {idx[int(np.argmax(rewards))], idx[int(np.argmin(rewards))]} if open_ else set()  # best and worst
    episodes = "".join(_episode(demo, i, names, default, scale, open_=i in shown) for i in idx)
    statement = html.escape(task.statement.strip().splitlines()[0])
    return (f"<details class=task{' open' if open_ else ''}><summary><h2>{html.escape(task.id)}</h2></summary>"
            f"<p>{statement}</p><h3>Regions and candidates</h3><ul>{regions}</ul>"
            f"<h3>Episode outcomes</h3>{outcomes}<h3>DiDPO anchor groups</h3>{anchors}"
            f"<h3>Trajectories</h3>{episodes}</details>")


def _anchors(demo: Demo, task_id: str) -> str:
    name = _didpo_name(demo)
    if name is None:
        return "<p class=meta>(DiDPO not run)</p>"
    result = demo.results[name]
    rows = []
    for a in sorted((a for a in result.anchors if a.task_id == task_id), key=lambda a: -a.gs):
        members = " ".join(f"#{t}.{s}:{v:+.2f}" for t, s, v in zip(a.trajectories.tolist(), a.steps.tolist(),
                                                                    np.asarray(a.advantage).tolist()))
        rows.append(f"<tr><td>{a.kind}</td><td>{a.gs:.3f}</td><td>{a.size}</td><td>{a.mean_lines:.1f}</td>"
                    f"<td class=members>{html.escape(members)}</td><td><pre>{html.escape(a.preview)}</pre></td></tr>")
    if not rows:
        return "<p class=meta>(no anchors: no sub-diff was shared by two steps)</p>"
    return (f"<p class=meta>{name}: members as #episode.step:A^D</p><table><thead><tr><th>kind</th><th>GS</th>"
            f"<th>n</th><th>lines</th><th>members</th><th>preview</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _episode(demo: Demo, i: int, names: list[str], default: str, scale: Mapping[str, float], open_: bool) -> str:
    e = demo.episodes[i]
    decisions = demo.decisions[e.task_id]
    steps = []
    for t, step in enumerate(e.trajectory.steps):
        label = decisions[t].candidates[e.choices[t]].kind if t < len(e.choices) else "submit"
        per_line = {n: line_advantages(step, demo.results[n].tokens[i][t]) for n in names}
        steps.append(f"<div class=step><div class=steph>step {t}: <b>{html.escape(label)}</b></div>"
                     f"{_diff(step.diff, per_line, default, scale)}</div>")
    verdict = "resolved" if e.resolved else "not resolved"
    return (f"<details class=episode{' open' if open_ else ''}><summary>episode #{i}: reward {e.reward:.2f}, "
            f"{e.tests_passed}/{e.tests_total} tests, {verdict}</summary>{''.join(steps)}</details>")


def _diff(diff: str, per_line: Mapping[str, Mapping[tuple, float]], default: str, scale: Mapping[str, float]) -> str:
    if not diff:
        return "<div class=nodiff>(no change to the repository)</div>"
    out = []
    path = ""
    old_no = new_no = 0
    for raw in diff.splitlines():
        key = None
        if raw.startswith("+++ "):
            path = raw[6:] if raw.startswith("+++ b/") else raw[4:]
        elif raw.startswith("@@"):
            head = raw.split()
            old_no, new_no = int(head[1][1:].split(",")[0]), int(head[2][1:].split(",")[0])
        elif raw.startswith("+"):
            key, new_no = ("+", path, new_no), new_no + 1
        elif raw.startswith("-") and not raw.startswith("--- "):
            key, old_no = ("-", path, old_no), old_no + 1
        elif raw.startswith(" "):
            old_no, new_no = old_no + 1, new_no + 1
        out.append(_line(raw, key, per_line, default, scale))
    return f"<pre class=diff>{''.join(out)}</pre>"


def _line(raw: str, key: tuple | None, per_line: Mapping[str, Mapping[tuple, float]], default: str,
          scale: Mapping[str, float]) -> str:
    text = html.escape(raw) or " "
    if key is None:
        kind = "meta" if raw.startswith(("diff ", "index ", "--- ", "+++ ", "@@")) else "ctx"
        return f'<span class="l {kind}">{text}</span>'
    values = {n: v[key] for n, v in per_line.items() if key in v}
    attrs = "".join(f' data-{n}="{v:.4f}"' for n, v in values.items())
    style = f' style="background:{_colour(values[default], scale[default])}"' if default in values else ""
    shown = f"{values[default]:+.2f}" if default in values else ""
    return f'<span class="l chg"{attrs}{style}><i>{shown}</i>{text}</span>'


def _colour(value: float, scale: float) -> str:
    """White at 0, green for positive, red for negative, saturating at |value| = scale."""
    x = max(-1.0, min(1.0, value / scale))
    strength = int(round(200 * abs(x)))
    return f"rgb({255 - strength},255,{255 - strength})" if x >= 0 else f"rgb(255,{255 - strength},{255 - strength})"


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>code-gym demo report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:18px 28px;color:#222;max-width:1250px}
h1{font-size:21px;margin:0 0 4px} h2{font-size:17px;display:inline;margin:0} h3{font-size:14px;margin:14px 0 6px}
.meta,.note{color:#555;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:12.5px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4}
td pre{margin:0;font-size:11.5px;max-height:110px;overflow:auto}
td.members{font-family:monospace;font-size:11.5px;max-width:330px}
details.task{border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:12px 0}
details.episode{margin:6px 0 6px 8px} details>summary{cursor:pointer}
.controls{position:sticky;top:0;background:#fffe;padding:6px 0;border-bottom:1px solid #ddd;z-index:2}
.controls label{margin-right:10px}
.legend span{padding:1px 8px;border:1px solid #ccc;margin-left:2px;font-size:12px}
.step{margin:6px 0 10px 12px}.steph{font-size:12.5px;margin-bottom:2px}
pre.diff{margin:0;font:12px/1.35 ui-monospace,monospace;border:1px solid #e3e3e3;overflow:auto}
.l{display:block;white-space:pre;padding-left:54px;position:relative}
.l i{position:absolute;left:4px;font-style:normal;color:#444;font-size:11px}
.l.meta{color:#777;background:#fafafa}.l.ctx{color:#555}
.nodiff{font-size:12px;color:#777;font-style:italic}
</style></head><body>
__BODY__
<script>
const SCALE = __SCALE__;
function colour(v, s) {
  const x = Math.max(-1, Math.min(1, v / s)), k = Math.round(200 * Math.abs(x));
  return x >= 0 ? `rgb(${255 - k},255,${255 - k})` : `rgb(255,${255 - k},${255 - k})`;
}
document.querySelectorAll('input[name=est]').forEach(r => r.addEventListener('change', () => {
  const n = r.value;
  document.querySelectorAll('.l.chg').forEach(el => {
    const v = el.dataset[n.replace(/-([a-z])/g, (_, c) => c.toUpperCase())];
    el.style.background = v === undefined ? '' : colour(parseFloat(v), SCALE[n]);
    el.querySelector('i').textContent = v === undefined ? '' : (v >= 0 ? '+' : '') + parseFloat(v).toFixed(2);
  });
}));
</script>
</body></html>
"""
