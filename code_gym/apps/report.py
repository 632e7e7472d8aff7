"""The HTML report of credit on rollouts: the pieces the demo's report is made of, and `code-gym
report ROLLOUTS.jsonl`, the same view for any rollouts (a served model's, the built-in policy's, a
trainer's dump) with credit from any registered estimator or preset.

Every changed line of a step's diff is coloured by the mean advantage of the tokens that wrote it
(added lines: the characters the environment's provenance names; removed lines: where the action
names them); radio buttons switch the estimator. Steps recorded without token offsets are given
one "token" per run of non-space characters (or of spaces) for the report, so their lines are
coloured too; the index says how many.

The rollouts report is a folder: `index.html` (the whole run in numbers and one row per task) and,
per task, pages of at most `per_page` episodes (the task's anchor groups on its first page). A page
holds its own episodes only, so it stays as fast to open at thousands of episodes as at ten. Pages
are self-contained: inline CSS and a few lines of JavaScript, nothing fetched.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from unidiff import PatchSet

import credit
from code_gym.apps.records import Rollouts
from credit.project import locate_lines

ESTIMATORS = ("grpo", *credit.STEP_LEVEL)  # the default comparison: the episode-level baseline, every step-level one
PER_PAGE = 50  # episodes on one page of a task
SHOWN_ACTION_CHARS = 4000  # of a response, under its step's diff (folded)


# --- the pieces -------------------------------------------------------------------------------------

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


def colour(value: float, scale: float) -> str:
    """White at 0, green for positive, red for negative, saturating at |value| = scale."""
    x = max(-1.0, min(1.0, value / scale))
    strength = int(round(200 * abs(x)))
    return f"rgb({255 - strength},255,{255 - strength})" if x >= 0 else f"rgb(255,{255 - strength},{255 - strength})"


def token_scale(results: Mapping[str, credit.Result]) -> dict[str, float]:
    """Each estimator's largest |token advantage| (the colour scale's saturation point)."""
    return {n: max(1e-9, max((float(np.abs(np.asarray(t)).max()) for ts in r.tokens for t in ts
                              if t is not None and len(t)), default=1e-9)) for n, r in results.items()}


def table_html(header: Sequence[str], rows: Sequence[Sequence], raw_columns: Sequence[int] = ()) -> str:
    """A table; cells are escaped except those in `raw_columns` (HTML the caller made, e.g. links)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c if k in raw_columns else html.escape(str(c))}</td>"
                                    for k, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def controls_html(names: Sequence[str], default: str) -> str:
    """The estimator radio buttons and the colour legend."""
    buttons = "".join(
        f'<label><input type=radio name=est value="{n}"{" checked" if n == default else ""}> {html.escape(n)}</label>'
        for n in names)
    return (f'<div class=controls><b>colour lines by</b> {buttons} <span class=legend>'
            f'<span style="background:{colour(-1, 1)}">negative</span><span style="background:#fff">0</span>'
            f'<span style="background:{colour(1, 1)}">positive</span></span> '
            f'<span class=meta>(scale: the largest |advantage| of the estimator)</span></div>')


def anchors_html(result: credit.Result | None, task_id, name: str | None, members: Mapping[int, str] | None = None) -> str:
    """DiDPO's anchor groups of one task, by groupability score; members as #episode.step:A^D
    (`members` renames episode indices, e.g. to a link label)."""
    if result is None:
        return "<p class=meta>(DiDPO not run)</p>"
    rows = []
    for a in sorted((a for a in result.anchors if a.task_id == task_id), key=lambda a: -a.gs):
        shown = " ".join(f"#{(members or {}).get(t, t)}.{s}:{v:+.2f}" for t, s, v in
                         zip(a.trajectories.tolist(), a.steps.tolist(), np.asarray(a.advantage).tolist()))
        rows.append(f"<tr><td>{a.kind}</td><td>{a.gs:.3f}</td><td>{a.size}</td><td>{a.mean_lines:.1f}</td>"
                    f"<td class=members>{html.escape(shown)}</td><td><pre>{html.escape(a.preview)}</pre></td></tr>")
    if not rows:
        return "<p class=meta>(no anchors: no sub-diff was shared by two steps)</p>"
    return (f"<p class=meta>{html.escape(name)}: members as #episode.step:A^D</p><table><thead><tr><th>kind</th>"
            f"<th>GS</th><th>n</th><th>lines</th><th>members</th><th>preview</th></tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>")


def diff_html(diff: str, per_line: Mapping[str, Mapping[tuple, float]], default: str,
              scale: Mapping[str, float]) -> str:
    """A step's diff, each changed line carrying every estimator's value (data-*) and coloured by
    `default`'s."""
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
    style = f' style="background:{colour(values[default], scale[default])}"' if default in values else ""
    shown = f"{values[default]:+.2f}" if default in values else ""
    return f'<span class="l chg"{attrs}{style}><i>{shown}</i>{text}</span>'


def page(title: str, body: str, scale: Mapping[str, float]) -> str:
    """A whole self-contained page around `body`."""
    return (_PAGE.replace("__TITLE__", html.escape(title)).replace("__BODY__", body)
            .replace("__SCALE__", json.dumps(dict(scale))))


# --- the rollouts report ----------------------------------------------------------------------------

_WORDS = re.compile(r"\S+|\s+")


def word_offsets(text: str) -> list[tuple[int, int]]:
    """One span per run of non-space characters or of spaces: the report's tokens for a step
    recorded without token offsets."""
    return [m.span() for m in _WORDS.finditer(text)]


def with_display_tokens(trajectories: Sequence[credit.Trajectory]) -> tuple[list[credit.Trajectory], int]:
    """The trajectories with word offsets (`word_offsets`) on the steps that have no token offsets,
    and how many steps got them."""
    out, given = [], 0
    for trajectory in trajectories:
        if all(step.token_offsets is not None for step in trajectory.steps):
            out.append(trajectory)
            continue
        steps = []
        for step in trajectory.steps:
            if step.token_offsets is None:
                step = credit.Step.from_dict(step.to_dict(), token_offsets=word_offsets(step.action), token_ids=None,
                                             logprobs=None)
                given += 1
            steps.append(step)
        out.append(credit.Trajectory(trajectory.task_id, steps, trajectory.reward))
    return out, given


@dataclass(frozen=True)
class RolloutsReport:
    rollouts: Rollouts
    trajectories: list[credit.Trajectory]  # with the report's tokens where the rollouts had none
    results: dict[str, credit.Result]  # estimator name -> credit on `trajectories`
    display_tokens: int  # steps given word offsets for the report

    @property
    def tasks(self) -> dict:
        """task id -> the indices of its episodes, in the order the tasks first appear."""
        out: dict = {}
        for i, trajectory in enumerate(self.trajectories):
            out.setdefault(trajectory.task_id, []).append(i)
        return out


def credit_report(rollouts: Rollouts, estimators: Sequence[str], options: Mapping | None = None) -> RolloutsReport:
    """Credit from each estimator (`credit.get(name)`, with `options`) on the rollouts."""
    trajectories, given = with_display_tokens(rollouts.trajectories)
    results = {name: credit.get(name)(trajectories, **dict(options or {})) for name in estimators}
    return RolloutsReport(rollouts, trajectories, results, given)


def _didpo(report: RolloutsReport) -> str | None:
    return next((n for n in report.results if n in credit.PRESETS), None)


def _page_name(task_number: int, page_number: int) -> str:
    return f"task-{task_number:05d}-{page_number + 1}.html"


def write_rollouts_report(report: RolloutsReport, folder: Path, per_page: int = PER_PAGE) -> Path:
    """`index.html` and the task pages in `folder`; the index's path."""
    if per_page < 1:
        raise ValueError(f"per_page must be >= 1, got {per_page}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(report.results)
    default = _didpo(report) or names[0]
    scale = token_scale(report.results)
    pages = 0
    for number, (task_id, episodes) in enumerate(report.tasks.items()):
        chunks = [episodes[k:k + per_page] for k in range(0, len(episodes), per_page)]
        for p, chunk in enumerate(chunks):
            body = _task_page(report, number, task_id, chunk, p, len(chunks), names, default, scale)
            (folder / _page_name(number, p)).write_text(page(f"{task_id}: rollouts report", body, scale))
            pages += 1
    index = folder / "index.html"
    index.write_text(page("code-gym rollouts report", _index(report, pages, per_page), scale))
    return index


def _resolved(report: RolloutsReport, indices: Sequence[int]) -> str:
    records = report.rollouts.records
    return "-" if records is None else f"{sum(records[i].resolved for i in indices)}/{len(indices)}"


def _index(report: RolloutsReport, pages: int, per_page: int) -> str:
    trajectories, records = report.trajectories, report.rollouts.records
    didpo = _didpo(report)
    rows = []
    for number, (task_id, episodes) in enumerate(report.tasks.items()):
        link = f'<a href="{_page_name(number, 0)}">{html.escape(str(task_id))}</a>'
        anchors = sum(a.task_id == task_id for a in report.results[didpo].anchors) if didpo else "-"
        context = "-" if records is None else sum(bool(records[i].context) for i in episodes)
        rows.append([link, len(episodes), _resolved(report, episodes),
                     f"{np.mean([trajectories[i].reward for i in episodes]):.2f}",
                     f"{np.mean([len(trajectories[i].steps) for i in episodes]):.1f}", anchors, context,
                     -(-len(episodes) // per_page)])
    everything = range(len(trajectories))
    steps = sum(len(t.steps) for t in trajectories)
    meta = (f"{len(trajectories)} episodes of {len(rows)} tasks from {html.escape(str(report.rollouts.path))}; "
            f"resolved {_resolved(report, everything)}; mean reward "
            f"{np.mean([t.reward for t in trajectories]):.3f}; credit: {html.escape(', '.join(report.results))}; "
            f"{pages} task pages of at most {per_page} episodes.")
    notes = [] if report.display_tokens == 0 else [
        f"{report.display_tokens} of {steps} steps were recorded without token offsets: the report gives them one "
        "token per run of non-space characters, so their lines are coloured over words, not the model's tokens."]
    if records is None:
        notes.append("No episode records beside the trajectories (code-gym eval writes them): resolved and context "
                     "columns are blank.")
    return (f"<h1>code-gym rollouts report</h1><p class=meta>{meta}</p>"
            + "".join(f"<p class=note>{html.escape(n)}</p>" for n in notes)
            + table_html(["task", "episodes", "resolved", "mean reward", "mean steps", "anchors", "context managed",
                          "pages"], rows, raw_columns=(0,)))


def _nav(number: int, page_number: int, pages: int) -> str:
    links = ['<a href="index.html">index</a>']
    if page_number > 0:
        links.append(f'<a href="{_page_name(number, page_number - 1)}">previous page</a>')
    if page_number + 1 < pages:
        links.append(f'<a href="{_page_name(number, page_number + 1)}">next page</a>')
    return f"<p class=nav>{' | '.join(links)} <span class=meta>(page {page_number + 1} of {pages})</span></p>"


def _task_page(report: RolloutsReport, number: int, task_id, episodes: Sequence[int], page_number: int, pages: int,
               names: Sequence[str], default: str, scale: Mapping[str, float]) -> str:
    trajectories, records = report.trajectories, report.rollouts.records
    rows = []
    for i in episodes:
        record = records[i] if records is not None else None
        rows.append([f"#{i}", "-" if record is None else record.sample, f"{trajectories[i].reward:.2f}",
                     "-" if record is None else ("yes" if record.resolved else "no"), len(trajectories[i].steps),
                     "-" if record is None else len(record.context)]
                    + [f"{report.results[n].episode[i]:+.2f}" for n in names])
    rewards = [trajectories[i].reward for i in episodes]
    shown = {episodes[int(np.argmax(rewards))], episodes[int(np.argmin(rewards))]}  # best and worst open
    anchors = ("<h3>DiDPO anchor groups</h3>" + anchors_html(report.results.get(_didpo(report)), task_id, _didpo(report))
               if page_number == 0 else "")
    return (_nav(number, page_number, pages) + controls_html(names, default)
            + f"<h1>{html.escape(str(task_id))}</h1><h3>Episode outcomes</h3>"
            + table_html(["episode", "sample", "reward", "resolved", "steps", "context events"]
                         + [f"A^E {n}" for n in names], rows)
            + anchors + "<h3>Trajectories</h3>"
            + "".join(_episode(report, i, names, default, scale, i in shown) for i in episodes))


def _episode(report: RolloutsReport, i: int, names: Sequence[str], default: str, scale: Mapping[str, float],
             open_: bool) -> str:
    trajectory = report.trajectories[i]
    steps = []
    for t, step in enumerate(trajectory.steps):
        per_line = {n: line_advantages(step, report.results[n].tokens[i][t]) for n in names}
        action = step.action if len(step.action) <= SHOWN_ACTION_CHARS else (
            step.action[:SHOWN_ACTION_CHARS] + f"\n[... {len(step.action) - SHOWN_ACTION_CHARS:,} more characters]")
        steps.append(f"<div class=step><div class=steph>step {t}</div>{diff_html(step.diff, per_line, default, scale)}"
                     f"<details class=action><summary>response ({len(step.action):,} characters)</summary>"
                     f"<pre>{html.escape(action)}</pre></details></div>")
    return (f"<details class=episode{' open' if open_ else ''}><summary>episode #{i}: reward {trajectory.reward:.2f}, "
            f"{len(trajectory.steps)} steps</summary>{''.join(steps)}</details>")


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>__TITLE__</title>
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
details.action pre{font-size:11.5px;max-height:300px;overflow:auto;background:#fafafa;border:1px solid #eee}
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
