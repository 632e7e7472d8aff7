r"""DiDPO: Diff-in-Diff Policy Optimization advantages for multi-turn coding agents.

Critic-free credit assignment that looks inside code edits (reference implementation: verl-code,
built on verl-agent/GiGPO). For trajectory i of task q, step t, response token k:

  A^E_i        = r_i - mean_{j in q} r_j              (or / (std + eps); `credit.episode`)
  G_{i,t}      = r_{i,t} + gamma G_{i,t+1}            (outcome counted at the last step)
  A^D(o)       = G_{row(o)} - mean_{o' in a} G_{row(o')}     (or / (std + eps)), occurrence o of anchor a
  A_{i,t,k}    = A^E_i + lambda A^D(o*),  o* = the highest-GS anchor occurrence covering token k

Anchors are groups of similar sub-diffs across the trajectories of one task (`credit.split`,
`credit.grouping`), scored by GS = phi(L) psi(n) (`credit.groupability`) and chosen greedily
(`credit.anchors`); the projection onto tokens is `credit.project`. Tokens no anchor covers, and
every token of a step whose diff is empty, get A^E alone.

`baseline="contrast"` (ours, not in the reference) replaces A^D by the effect of making the edit:

  Delta(a) = mean_{j in q, j makes a} r_j - mean_{j in q, j does not} r_j    (0 if a side is empty)

optionally divided by the task's outcome std and shrunk by n / (n + k), n = trajectories making a.
The reference baseline measures the spread among those who made an edit; the contrast measures
what the edit changed.

`baseline="within"` (ours) contrasts each exact variant against the other members of its anchor
(`credit.baselines.within_anchor_contrast`), so near-duplicates merged into one anchor (a right
edit and its one-token mutation) get different values; an anchor of one variant gets Delta.

`baseline="nested"` (ours) gives each choice its own contrast, as a policy gradient does each
token: the tokens of the call that made an occurrence, outside its changed lines (the tool name,
the command, the path: the choice to edit the region at all), get the anchor's Delta; its changed
lines (the choice among the ways to edit it) get the within-anchor W. Only cover="call" or
"edit" reach tokens outside the lines; with cover="lines" it is "within".

`baseline="split"` (ours) regresses the task's outcomes on which anchors each trajectory makes and
splits each anchor's effect, in units of its standard error (`credit.baselines.anchor_effect_split`),
between the choice to make the edit (its occurrences get u_a (1 - xbar_a)) and the choice to leave
it out (the other tokens of a trajectory that does not make it get -u_a xbar_a, summed over the
anchors it leaves out): A = rest + lambda (share - rest), which replaces A^E in tasks with anchors.
For a policy that decides per region, the step of each region's choice is then its own effect,
not the episode's outcome with every other region's choice in it (docs/benchmarks.md, "learning
efficiency: built multi-region tasks"). With cover="lines" the call's tool name is not covered:
use cover="call" for the choice to edit at all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from credit._common import StepTable, episode, result, row_returns, step_table, tokens
from credit._util import csr_pointers, gc_paused, pieces, ranges, segment_starts
from credit.anchors import select_anchors
from credit.baselines import anchor_effect_split, within_anchor_contrast
from credit.config import PRESETS, DiDPOConfig, resolve
from credit.offsets import OffsetsError, flat_token_windows
from credit.grouping import cluster_units
from credit.text import Contents, line_table, marker_code
from credit.project import (joined_texts, line_calls, locate_blocks, occurrence_spans, project_flat,
                            provenance_spans, widen_spans)
from credit.split import ADDED, DiffBatch, DiffError, split_diffs
from credit.types import Anchor, Result


def didpo(trajectories: Iterable[Any], *, config: DiDPOConfig | str = PRESETS["didpo"], **overrides: Any) -> Result:
    """DiDPO advantages for a batch of trajectories (see the module docstring for the formulas).

    Args:
      trajectories: credit.Trajectory objects or dicts with the same keys; trajectories with the
        same task_id form a group.
      config: a `credit.DiDPOConfig`, or the name of one of `credit.PRESETS` ("didpo": the
        paper's rules, the default; "didpo-split": the rule measured best here).
      **overrides: options of `credit.DiDPOConfig` that replace the config's (`lambda_=0.5`).

    Returns:
      credit.Result; result.steps.diff_* list every anchor occurrence with its A^D.
    """
    config = resolve(config, overrides)
    with gc_paused():
        return _didpo(trajectories, config)


def _didpo(trajectories, config: DiDPOConfig) -> Result:
    clock = _Clock()
    table = step_table(trajectories)
    clock.lap("input_conversion")
    episode_adv = episode(table, config.mode, config.eps, "trajectories", config.singleton)
    returns = row_returns(table, config.gamma)
    clock.lap("episode")

    units = _units(table, config.levels, config.syntax)
    clock.lap("split")
    clusters = cluster_units(units.bucket, units.compared_ptr, units.content, units.indent, units.contents,
                             threshold=config.similarity)
    clock.lap("group")
    traj_of_unit = table.traj[units.row]
    selection = select_anchors(
        clusters.labels, units.row, traj_of_unit, table.task[traj_of_unit], np.diff(units.compared_ptr),
        units.line_ptr, units.lines, count=config.count, max_anchors=config.max_anchors,
        s0=config.s0, g0=config.g0, phi_form=config.phi_form, psi_form=config.psi_form)
    clock.lap("anchors")

    advantages, base, outside = _advantages(config, table, units, clusters, selection, episode_adv, returns)
    flat_advantage = np.concatenate(advantages) if len(advantages) else np.zeros(0)
    anchors = _anchors(selection, advantages, units, table)
    clock.lap("advantage")

    extra, coverage, n_covered = _project(table, units, selection, flat_advantage, config.lambda_, config.cover,
                                          outside)
    token_values = tokens(table, base[table.traj], extra)
    n_tokens = _token_count(token_values)
    coverage = {"tokens": n_covered / n_tokens if n_tokens else 0.0, **coverage}
    clock.lap("project")

    diff = _occurrence_table(selection, flat_advantage, units)
    stats = _stats(clock, units, clusters, selection, diff[0], coverage)
    return result("didpo", table, episode_adv, returns, np.zeros(len(table.steps)), token_values, stats,
                  tuple(anchors), diff)


def _advantages(config: DiDPOConfig, table: StepTable, units, clusters, selection, episode_adv: np.ndarray,
                returns: np.ndarray):
    """The baseline's values: per anchor, its occurrences' values on the changed lines; per
    trajectory, the value of the tokens no occurrence covers (A^E but for "split"); per anchor, the
    values for the covered tokens outside the lines (None: the lines' values)."""
    baseline, eps = config.baseline, config.eps
    if baseline == "reference":
        return _reference_advantage(selection, units.row, returns, config.mode, eps), episode_adv, None
    if baseline == "split":
        unit_traj = table.traj[units.row]
        shares, rest = anchor_effect_split(selection.members, unit_traj, table.outcome, table.task, episode_adv, eps)
        return [s - rest[unit_traj[m]] for s, m in zip(shares, selection.members)], rest, None
    contrast = _contrast_advantage(selection.members, units.row, table, eps, config.contrast_std,
                                   config.contrast_shrink) if baseline in ("contrast", "nested") else None
    if baseline == "contrast":
        return contrast, episode_adv, None
    within = within_anchor_contrast(selection.members, table.traj[units.row], clusters.exact, table.outcome,
                                    table.task, eps, config.contrast_std)
    return within, episode_adv, contrast  # "nested": Delta around the lines; "within": W everywhere (None)


def _occurrence_table(selection, advantage: np.ndarray, units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, anchor, A^D) of every anchor occurrence (`advantage`: theirs, one after another)."""
    return units.row[selection.flat], selection.anchor_of.astype(np.int64), advantage


def _stats(clock, units, clusters, selection, occurrence_rows, coverage) -> dict[str, Any]:
    sizes = selection.size
    return {
        "time_ms": clock.laps,
        "cpu_ms": clock.cpu,
        "n_steps_with_diff": units.n_rows_with_diff,
        "n_changed_lines": units.n_lines,
        "n_units": int(units.row.shape[0]),
        "n_exact_groups": int(clusters.exact.max(initial=-1) + 1),
        "n_clusters": int(clusters.labels.max(initial=-1) + 1),
        "n_candidate_pairs": clusters.n_candidate_pairs,
        "n_candidate_anchors": selection.n_candidates,
        "n_anchors": len(selection.gs),
        "coverage": {
            "lines": _line_coverage(units, selection),
            "steps": float(np.unique(occurrence_rows).shape[0] / max(units.n_rows_with_diff, 1)),
            **coverage,
        },
        "group_size": {
            "mean": float(sizes.mean()) if sizes.size else 0.0,
            "median": float(np.median(sizes)) if sizes.size else 0.0,
            "max": int(sizes.max(initial=0)),
        },
    }


@dataclass(frozen=True, eq=False)
class _Units:
    """All units of a batch. Lines get global ids: line_base[row] + the line's index in its diff."""

    row: np.ndarray
    kind: np.ndarray
    local: np.ndarray
    bucket: np.ndarray
    line_ptr: np.ndarray
    lines: np.ndarray
    compared_ptr: np.ndarray
    content: np.ndarray
    indent: np.ndarray
    contents: Contents
    batch: DiffBatch
    diff_of_row: np.ndarray
    line_base: np.ndarray
    n_lines: int
    n_rows_with_diff: int


def _units(table: StepTable, levels: Sequence[str], syntax: str) -> _Units:
    """Split every distinct diff of the batch once (`split_diffs`), compare its lines once
    (`line_table`), and give each step row its diff's units."""
    numbers: dict[str, int] = {}
    diff_of = np.full(len(table.steps), -1, np.int64)
    for r, step in enumerate(table.steps):
        if step.diff:
            diff_of[r] = numbers.setdefault(step.diff, len(numbers))
    distinct = list(numbers)
    try:
        batch = split_diffs(distinct, levels=levels, syntax=syntax)
    except DiffError as err:
        r = int(np.flatnonzero(diff_of == err.index)[0])
        i = int(table.traj[r])
        raise ValueError(f"trajectory {i} (task {table.trajectories[i].task_id!r}), "
                         f"step {int(table.index[r])}: {err}") from None
    marker = np.fromiter((marker_code(p) for p in batch.path_names), np.int64, len(batch.path_names))
    compared = line_table(batch.marked_texts(), marker[batch.path_ids], skip=1)
    # per distinct unit: its compared lines (content, indent) as a CSR
    unit_of = np.repeat(np.arange(batch.unit_levels.shape[0]), np.diff(batch.unit_ptr))
    member_content = compared.content[batch.unit_lines]
    keep = member_content >= 0
    n_compared = np.bincount(unit_of[keep], minlength=batch.unit_levels.shape[0])
    compared_ptr = csr_pointers(n_compared)
    content, indent = member_content[keep], compared.indent[batch.unit_lines][keep]

    n_diff_lines = np.diff(batch.line_ptr)
    rows = np.flatnonzero(diff_of >= 0)
    rows = rows[n_diff_lines[diff_of[rows]] > 0]
    d = diff_of[rows]
    u_lo, u_hi = batch.diff_units[d], batch.diff_units[d + 1]
    unit = ranges(u_lo, u_hi)  # the distinct unit behind each row unit
    row = np.repeat(rows, u_hi - u_lo)
    n_lines = n_diff_lines[d]
    base = segment_starts(n_lines)
    line_base = np.zeros(len(table.steps), np.int64)
    line_base[rows] = base
    shift = np.repeat(base - batch.line_ptr[d], u_hi - u_lo)  # diff line id -> row line id
    lo, hi = batch.unit_ptr[unit], batch.unit_ptr[unit + 1]
    c_lo, c_hi = compared_ptr[unit], compared_ptr[unit + 1]
    kind = batch.kinds[batch.unit_lines[lo]].astype(np.int64)
    return _Units(
        row=row, kind=kind, local=unit - np.repeat(u_lo, u_hi - u_lo),
        bucket=table.task[table.traj[row]] * 2 + (kind == ADDED),
        line_ptr=csr_pointers(hi - lo), lines=batch.unit_lines[ranges(lo, hi)] + np.repeat(shift, hi - lo),
        compared_ptr=csr_pointers(c_hi - c_lo), content=content[ranges(c_lo, c_hi)], indent=indent[ranges(c_lo, c_hi)],
        contents=compared.contents, batch=batch, diff_of_row=diff_of,
        line_base=line_base,
        n_lines=int(n_lines.sum()), n_rows_with_diff=int(rows.shape[0]),
    )


def _reference_advantage(selection, unit_row: np.ndarray, returns: np.ndarray,
                         mode: str, eps: float) -> list[np.ndarray]:
    """A^D = G - mean G over the anchor's occurrences (population std for mean_std_norm), for all
    anchors in one pass over their concatenated occurrences; per anchor, views of one array."""
    if not len(selection.gs):
        return []
    size = np.diff(selection.ptr)
    first = selection.ptr[:-1]
    g = returns[unit_row[selection.flat]]
    mean = np.add.reduceat(g, first) / size
    dev = g - np.repeat(mean, size)
    if mode == "mean_std_norm":
        std = np.sqrt(np.add.reduceat(dev * dev, first) / size)
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = np.where(dev == 0.0, 0.0, dev / np.repeat(std + eps, size))
    return pieces(dev, first.tolist() + [dev.shape[0]])


def _contrast_advantage(members: list[np.ndarray], unit_row: np.ndarray, table: StepTable, eps: float,
                        use_std: bool, shrink: float) -> list[np.ndarray]:
    """Delta = mean outcome of the task's trajectories making the edit - of those not making it."""
    out = []
    for m in members:
        trajs = np.unique(table.traj[unit_row[m]])
        in_task = table.task == table.task[trajs[0]]
        makes = np.zeros(in_task.shape[0], bool)
        makes[trajs] = True
        inside, outside = table.outcome[makes], table.outcome[in_task & ~makes]
        delta = inside.mean() - outside.mean() if inside.size and outside.size else 0.0
        if use_std and delta != 0.0:
            delta /= table.outcome[in_task].std() + eps
        n = trajs.shape[0]
        out.append(np.full(m.shape[0], delta * n / (n + shrink)))
    return out


def _anchors(selection, advantages, units: _Units, table: StepTable) -> list[Anchor]:
    """The Anchor records: every occurrence's row, trajectory and step index read in one pass
    (each anchor gets views of those arrays), the preview from the representative unit's lines."""
    if not len(selection.gs):
        return []
    batch = units.batch
    first = selection.flat[selection.ptr[:-1]]
    rows_all = units.row[selection.flat]
    bounds = selection.ptr.tolist()
    rows_of, traj_of, steps_of = (pieces(x, bounds) for x in (rows_all, table.traj[rows_all], table.index[rows_all]))
    u = batch.diff_units[units.diff_of_row[units.row[first]]] + units.local[first]  # the units in the batch
    lo, hi = batch.unit_ptr[u], batch.unit_ptr[u + 1]
    previews = _previews(batch, lo, hi)
    task_ids = [table.trajectories[i].task_id for i in table.traj[units.row[first]].tolist()]
    added = (units.kind[first] == ADDED).tolist()
    gs, mean_lines, size = selection.gs.tolist(), selection.mean_lines.tolist(), selection.size.tolist()
    out = []
    for k in range(len(selection.gs)):
        anchor = object.__new__(Anchor)  # every field given, of its type: the frozen __init__ costs 3x more
        anchor.__dict__.update(
            task_id=task_ids[k], kind="added" if added[k] else "deleted",
            rows=rows_of[k], trajectories=traj_of[k], steps=steps_of[k], advantage=advantages[k],
            gs=gs[k], mean_lines=mean_lines[k], size=int(size[k]), preview=previews[k])
        out.append(anchor)
    return out


def _previews(batch: DiffBatch, lo: np.ndarray, hi: np.ndarray, width: int = 240) -> list[str]:
    """The first `width` characters of each unit's lines batch.unit_lines[lo[k]:hi[k]], joined by
    line breaks (carriage returns at their ends dropped): all units' lines joined once
    (`credit.project.joined_texts`), each preview a slice of that."""
    lines = batch.line_source[batch.unit_lines[ranges(lo, hi)]]
    if batch.carriage_returns:  # the lines one by one
        source, at = batch.source, segment_starts(hi - lo).tolist() + [lines.shape[0]]
        held = lines.tolist()
        return ["\n".join(source[i][1:].rstrip("\r") for i in held[a:b])[:width] for a, b in zip(at[:-1], at[1:])]
    if not lines.shape[0]:
        return [""] * lo.shape[0]
    joined, start, size = joined_texts(batch.source, lines, 1)[:3]
    n = hi - lo
    first = segment_starts(n)
    last = np.maximum(first + n - 1, 0)  # (a unit with no lines: any line, cut to nothing)
    a = start[np.minimum(first, lines.shape[0] - 1)]
    b = np.where(n > 0, np.minimum(start[last] + size[last], a + width), a)
    return [joined[x:y] for x, y in zip(a.tolist(), b.tolist())]


def _project(table: StepTable, units: _Units, selection, advantage: np.ndarray, lambda_: float, cover: str,
             outside=None):
    """Per-row extra token values (lambda * A^D of the best covering occurrence), coverage stats and
    the count of tokens covered.
    `advantage`: the occurrences' A^D, one anchor's after another; `outside`: per anchor, the
    occurrences' values for the tokens the cover adds around their lines (the edit argument or call
    holding them); None: `advantage` there too."""
    members = selection.flat
    anchor = selection.anchor_of
    value = lambda_ * advantage
    value_outside = value if outside is None else lambda_ * (np.concatenate(outside) if outside else np.zeros(0))
    # the rows of the occurrences that have tokens (only the member rows' steps are looked at)
    member_rows = np.flatnonzero(np.bincount(units.row[members], minlength=len(table.steps)))
    # (each step's attributes read in one pass: the steps lie far apart in memory)
    with_tokens = np.zeros(len(table.steps), bool)
    steps, offsets, actions = [], [], []
    for r in member_rows.tolist():
        step = table.steps[r]
        if step.token_offsets is not None:
            steps.append(step)
            offsets.append(step.token_offsets)
            actions.append(step.action)
            with_tokens[r] = True
    occ = np.flatnonzero(with_tokens[units.row[members]])
    occ_units = members[occ]
    rows = np.flatnonzero(with_tokens)
    # the batch's flat arrays, not one SubDiffs per row (building those costs more than the search)
    batch, diff_of_row = units.batch, units.diff_of_row
    line_spans, line_step, line_block, call = _line_spans(steps, batch, diff_of_row[rows], actions)
    lo, hi = units.line_ptr[occ_units], units.line_ptr[occ_units + 1]
    member_step = np.repeat(np.searchsorted(rows, units.row[occ_units]), hi - lo)
    first_line = np.searchsorted(line_step, np.arange(rows.shape[0]))
    member_line = units.lines[ranges(lo, hi)] - units.line_base[rows[member_step]] + first_line[member_step]
    member_occ = np.repeat(np.arange(occ.shape[0]), hi - lo)
    own_span = line_spans[member_line, 0] >= 0  # each occurrence line found as text of its own
    # layers, by occurrence id + level * n: the lines' own spans (level 0), below them the edit
    # argument or call that made a line with no span of its own (1), then the argument or call
    # holding a placed line (2); so every anchor keeps the tokens of its own lines, and a line
    # written nowhere keeps its argument's other tokens
    n_occ = occ.shape[0]
    if cover != "lines":
        wide = _covered_spans(cover, steps, batch, diff_of_row[rows], line_spans, line_step, call)
        level = np.where(line_spans[member_line, 0] >= 0, 2, 1)
        layers = [occurrence_spans(actions, line_spans, line_step, member_line, member_occ, line_block),
                  occurrence_spans(actions, wide, line_step, member_line, member_occ + level * n_occ)]
        spans, owner, span_step = (np.concatenate(parts) for parts in zip(*layers))
    else:
        if call is not None:  # a line with no text span of its own goes to its edit argument, below
            line_spans, fallback = _unplaced_to_edits(steps, batch, diff_of_row[rows], line_spans, line_step, call)
            member_occ = np.where(fallback[member_line], member_occ + n_occ, member_occ)
        spans, owner, span_step = occurrence_spans(actions, line_spans, line_step, member_line, member_occ,
                                                   line_block)
    level, owner = np.divmod(owner, max(n_occ, 1))
    priority = selection.gs[anchor[occ[owner]]].astype(np.float64)
    # below every span of a line's own text: an edit argument or call credits the tokens no line holds
    priority -= level * (priority.max(initial=0.0) + 1.0)
    # the tokens read, the rows' one after another: n_read of each row, each one's number in its
    # row (read_index; None: every row read whole)
    pairs, n_read, read_index = _token_windows(table, rows, offsets, actions, spans, span_step)
    # level 2 is the cover around a placed line (levels 0 and 1 stand for the line's own text)
    span_value = np.where(level == 2, value_outside[occ[owner]], value[occ[owner]])
    token_extra, covered = project_flat(pairs, n_read, spans, span_step, span_value, priority)

    n_covered = int(covered.sum())

    def extra(starts: np.ndarray, flat: np.ndarray) -> None:
        if read_index is None:  # every projected row read whole: a mask of their tokens, in order
            projected = np.zeros(starts.shape[0] - 1, bool)
            projected[rows] = True
            flat[np.repeat(projected, np.diff(starts))] += token_extra
        else:  # each read token's place in the batch (tokens outside the windows are covered by no span)
            flat[np.repeat(starts[rows], n_read) + read_index] += token_extra
    n_located = int(np.count_nonzero(np.bincount(owner, minlength=occ.shape[0])))
    coverage = {
        "occurrences_located": n_located / occ.shape[0] if occ.shape[0] else 0.0,
        "lines_located": float(own_span.mean()) if own_span.shape[0] else 0.0,
    }
    return extra, coverage, n_covered


def _token_count(token_values: list[list[Any]]) -> int:
    """The batch's tokens: the per-step arrays' lengths (not the steps' offsets, which lie far
    apart in memory)."""
    return sum(len(v) for per_step in token_values for v in per_step if v is not None)


def _token_windows(table: StepTable, rows: np.ndarray, offsets: list, actions: list, spans: np.ndarray,
                   span_step: np.ndarray):
    """`flat_token_windows` of the projected rows (`actions` theirs), bad offsets reported with their
    trajectory and step."""
    try:
        return flat_token_windows(offsets, actions, spans, span_step)
    except OffsetsError as err:
        r = int(rows[err.step])
        i = int(table.traj[r])
        raise ValueError(f"trajectory {i} (task {table.trajectories[i].task_id!r}), "
                         f"step {int(table.index[r])}: {err}") from None


def _line_spans(steps, batch: DiffBatch, diffs: np.ndarray, actions: Optional[list] = None):
    """Action spans of the changed lines of `steps` (diff diffs[i] for steps[i], one step's lines after
    another's), each line's step, its block (`locate_blocks`, -1: none) and the call that made it
    (`Step.line_calls`, -1: not given; None when no step gives them): provenance for added lines
    when a step has it, the text search for the rest, by blocks of lines of one kind with
    consecutive line numbers. A deleted line whose call is known is searched only in that call's
    deleted edit arguments (`_deleted_windows`)."""
    lo, hi = batch.line_ptr[diffs], batch.line_ptr[diffs + 1]
    line = ranges(lo, hi)
    line_step = np.repeat(np.arange(diffs.shape[0]), hi - lo)
    kinds, numbers = batch.kinds[line], batch.line_numbers[line]
    new_block = np.ones(line.shape[0], bool)
    new_block[1:] = (kinds[1:] != kinds[:-1]) | (numbers[1:] != numbers[:-1] + 1)
    provenance = [step.provenance for step in steps]
    from_provenance = (kinds == ADDED) & np.asarray([p is not None for p in provenance], bool)[line_step]
    call = None
    if any(step.line_calls for step in steps):
        call = line_calls([s.line_calls for s in steps], line_step, batch.path_ids[line], batch.path_names,
                          kinds.astype(np.int64), numbers)
    window = None if call is None else _deleted_windows(steps, line_step, call, kinds)
    actions = [step.action for step in steps] if actions is None else actions  # (the steps' own, given)
    spans, block = locate_blocks(actions, batch.source, batch.line_source[line], line_step,
                                 new_block, ~from_provenance, skip=1, kind=kinds, window=window)
    asked = np.flatnonzero(from_provenance)
    spans[asked] = provenance_spans(provenance, line_step[asked], batch.path_ids[line[asked]], batch.path_names,
                                    numbers[asked])
    return spans, line_step, block, call


def _deleted_windows(steps, line_step: np.ndarray, call: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """(L, 2) where each line is searched: for a deleted line of a known call, from the first to the
    end of the last of that call's deleted edit arguments (old_str; a bash command), else the
    call's span; otherwise the whole action. A deleted line is in the text that call replaced,
    never in the thought or in another call (the same text may stand there, quoted)."""
    n_action = np.fromiter((len(s.action) for s in steps), np.int64, len(steps))
    window = np.stack([np.zeros(line_step.shape[0], np.int64), n_action[line_step]], axis=1)
    ask = np.flatnonzero((kinds < 0) & (call >= 0))
    if not ask.shape[0]:
        return window
    keys, spans = [], []
    width = int(call.max()) + 1
    for s in np.unique(line_step[ask]).tolist():
        held: dict[int, tuple[int, int]] = {}
        for c, kind, a, b in steps[s].edits or ():
            if kind == "deleted":
                lo, hi = held.get(c, (a, b))
                held[c] = (min(lo, a), max(hi, b))
        for c, span in enumerate(steps[s].calls or ()):
            held.setdefault(c, span)
        keys += [s * width + c for c in held if c < width]
        spans += [span for c, span in held.items() if c < width]
    if not keys:
        return window
    keys_a, spans_a = np.asarray(keys, np.int64), np.asarray(spans, np.int64).reshape(-1, 2)
    order = np.argsort(keys_a)
    query = line_step[ask] * width + call[ask]
    at = np.minimum(np.searchsorted(keys_a[order], query), order.shape[0] - 1)
    hit = keys_a[order][at] == query
    window[ask[hit]] = spans_a[order[at[hit]]]
    return window


def _unplaced_to_edits(steps, batch: DiffBatch, diffs: np.ndarray, line_spans: np.ndarray, line_step: np.ndarray,
                       call: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cover="lines": a non-blank line with no span of its own (its text is not in the action as a
    line: a sed command, a computed line) takes the edit argument of its kind of the call that
    made it, where it would go with cover="edit". Returns (spans, (L,) True where so placed)."""
    placed = np.zeros(line_spans.shape[0], bool)
    missing = np.flatnonzero((line_spans[:, 0] < 0) & (call >= 0))
    if not missing.shape[0]:
        return line_spans, placed
    line = ranges(batch.line_ptr[diffs], batch.line_ptr[diffs + 1])
    sources = batch.line_source[line[missing]].tolist()
    missing = missing[np.fromiter((bool(batch.source[k][1:].strip()) for k in sources), bool, len(sources))]
    containers, container_step, attributed = _attributed_edits(steps, batch.kinds[line].astype(np.int64),
                                                               line_step, call)
    out = line_spans.copy()
    take = missing[attributed[missing] >= 0]
    out[take] = containers[attributed[take]]
    placed[take] = True
    return out, placed


def _covered_spans(cover: str, steps, batch: DiffBatch, diffs: np.ndarray, line_spans: np.ndarray,
                   line_step: np.ndarray, call: Optional[np.ndarray]) -> np.ndarray:
    """The lines' spans widened to the edit argument (cover="edit") or tool call ("call") that
    holds each, or that made it (`Step.line_calls`)."""
    line = ranges(batch.line_ptr[diffs], batch.line_ptr[diffs + 1])
    kinds = batch.kinds[line].astype(np.int64)
    call = np.full(line.shape[0], -1, np.int64) if call is None else call
    if cover == "call":
        n_calls = np.fromiter((len(s.calls or ()) for s in steps), np.int64, len(steps))
        spans = [c for s in steps for c in s.calls or ()]
        containers = np.asarray(spans, np.int64).reshape(-1, 2)
        container_step = np.repeat(np.arange(len(steps)), n_calls)
        attributed = np.where(call >= 0, segment_starts(n_calls)[line_step] + call, -1)
        return widen_spans(line_spans, line_step, containers, container_step, attributed)
    containers, container_step, attributed = _attributed_edits(steps, kinds, line_step, call)
    return widen_spans(line_spans, line_step, containers, container_step, attributed)


def _attributed_edits(steps, kinds: np.ndarray, line_step: np.ndarray, call: np.ndarray):
    """The steps' edit arguments (spans (E, 2), step of each) and, per line, the first edit argument
    of its kind of the call that made it (-1: none)."""
    edits = [e for s in steps for e in s.edits or ()]
    n_edits = np.fromiter((len(s.edits or ()) for s in steps), np.int64, len(steps))
    containers = np.asarray([e[2:] for e in edits], np.int64).reshape(-1, 2)
    container_step = np.repeat(np.arange(len(steps)), n_edits)
    # the first edit argument of each (step, call, kind): where the attributed lines go
    edit_call = np.fromiter((e[0] for e in edits), np.int64, len(edits))
    edit_added = np.fromiter((e[1] == "added" for e in edits), np.int64, len(edits))
    width = int(max(edit_call.max(initial=0), call.max(initial=0))) + 1
    keys = (container_step * width + edit_call) * 2 + edit_added
    uniq, first = np.unique(keys, return_index=True)
    query = (line_step * width + np.maximum(call, 0)) * 2 + (kinds > 0)
    at = np.minimum(np.searchsorted(uniq, query), max(uniq.shape[0] - 1, 0))
    found = (call >= 0) & (uniq.shape[0] > 0) & (uniq[at] == query) if uniq.shape[0] else np.zeros(call.shape, bool)
    attributed = np.where(found, first[at] if uniq.shape[0] else -1, -1)
    return containers, container_step, attributed


def _line_coverage(units: _Units, selection) -> float:
    if units.n_lines == 0 or not len(selection.gs):
        return 0.0
    m = selection.flat
    lo, hi = units.line_ptr[m], units.line_ptr[m + 1]
    covered = np.zeros(units.n_lines, bool)
    covered[units.lines[ranges(lo, hi)]] = True
    return float(covered.sum() / units.n_lines)




class _Clock:
    """Wall and CPU milliseconds per phase (CPU time tells contention apart from work)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._start, self._start_cpu = time.perf_counter(), time.process_time()
        self._last, self._last_cpu = self._start, self._start_cpu

    def lap(self, name: str) -> None:
        now, now_cpu = time.perf_counter(), time.process_time()
        self.laps[name] = (now - self._last) * 1e3
        self.cpu[name] = (now_cpu - self._last_cpu) * 1e3
        self.laps["total"] = (now - self._start) * 1e3
        self.cpu["total"] = (now_cpu - self._start_cpu) * 1e3
        self._last, self._last_cpu = now, now_cpu
