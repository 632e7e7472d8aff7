"""Learning efficiency of the built-in policy under each credit estimator.

GRPO, GiGPO and DiDPO (its reference baseline, our contrast, within-anchor and nested baselines,
and its cover modes: `METHODS`) train the built-in policy
(`code_gym.apps.policy`, `code_gym.apps.train`) on the multi-region tasks of the bundled suite (three or more
regions to get right in one episode), 5 seeds each, with the same rollout budget (G episodes per
task per update, at most U updates). Measured: the updates a task needs until the policy resolves
it with probability >= 0.9 (the product over its regions of the probability of the reference
edit); a task that reaches it is frozen and costs no more rollouts.

Everything runs through the real environment and the real tests; grades are cached by a hash of
the final files (deterministic given them), shared by the runs of one worker process.

Run: python benchmarks/learning_efficiency.py [--workers 2] [--no-docs]
Writes the "## learning efficiency" section of docs/benchmarks.md and docs/img/learning_efficiency.png;
`--from-json FILE` re-renders them from a saved run. `--task-dir DIR --section TITLE` trains on the
builder's multi-region tasks instead (`--rewards TASK --task-dir DIR` shows how their regions add up),
and `--perfect-credit N` adds the sign-perfect credit at the same step size as a reference point.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section  # noqa: E402

from code_gym.tasks.task import bundled_tasks  # noqa: E402
from code_gym.apps.train import TrainConfig, Trainer  # noqa: E402
from code_gym.grading.grade import GradeCache  # noqa: E402

METHODS = {  # label -> (estimator name in credit.ESTIMATORS, options)
    "GRPO": ("grpo", {}),
    "GiGPO": ("gigpo", {}),
    "DiDPO (reference)": ("didpo", {}),  # cover="lines", the default
    "DiDPO (contrast)": ("didpo-contrast", {}),
    "DiDPO (within)": ("didpo", {"baseline": "within"}),
    "DiDPO (cover=edit)": ("didpo", {"cover": "edit"}),
    "DiDPO (cover=call)": ("didpo", {"cover": "call"}),
    "DiDPO (within, cover=call)": ("didpo", {"baseline": "within", "cover": "call"}),
    "DiDPO (nested, cover=call)": ("didpo", {"baseline": "nested", "cover": "call"}),
    "DiDPO (split, cover=call)": ("didpo", {"baseline": "split", "cover": "call"}),
}
# an estimator whose advantages depend only on the outcome gives every K the same run (same seeds,
# same choices): it runs once, at the first K, and its result stands for the others
OUTCOME_ONLY = ("grpo", "dr_grpo", "rloo")
EXTRA_METHODS = {  # for --methods
    "DiDPO (contrast, cover=call)": ("didpo-contrast", {"cover": "call"}),
    "DiDPO (contrast, exact groups)": ("didpo-contrast", {"similarity": 1.0}),
    "DiDPO (reference, std-normalised)": ("didpo", {"mode": "mean_std_norm"}),
}
PREDICTION = """Prediction for the nested-baseline run (written at 20:22 UTC on 2026-12-01, before it started; the
diagnosis of 6 batches per K of the untrained policy had been seen: at the tool name AUC 0.631
(K = 2) / 0.635 (K = all) for DiDPO (nested, cover=call) against 0.573 for GRPO, inside edits
0.696 / 0.687 against 0.650):

1. GRPO's runs are as in the earlier run (median ~20 updates per task; its credit is outcome-only,
   so it runs once for every K). GiGPO stays within 0.9-1.1x GRPO at K = 2 and equals it at K = all.
2. DiDPO (nested, cover=call) is the fastest method at K = 2 and at K = all: 0.75-0.9x GRPO's
   median updates per task. It is the only estimator whose credit at the tool-name token (the
   choice to edit a region at all, the bottleneck in the earlier diagnosis) is better than the
   outcome's, and it keeps the within-anchor contrast on the edits' lines.
3. DiDPO (reference), (contrast) and (within) stay within 0.85-1.2x GRPO, as before.
4. The goal (90% success in <= 0.6x GRPO's updates at K >= 2) is not met: with G = 8 the tool-name
   AUC rises only from 0.57 to 0.63, and whitening per task shrinks the tool-name step (mean |A|
   0.64-0.67 against GRPO's 0.81) while it sharpens the in-edit steps."""
SCALE = """Advantage scale, one rule for every method: each estimator computes its advantages with its
own defaults (GRPO (r - mean) / std; GiGPO its episode and step terms; DiDPO A^E (r - mean) plus
lambda A^D on covered tokens), and then, per task and update, the advantages at the branch tokens are
divided by their std (`code_gym.apps.train.whiten`, no centring). So every method takes steps of the same overall size and
differs only in where it puts credit and with which sign. Why: DiDPO's A^D adds magnitude, and the
earlier sensitivity run (below) showed that the sign of the DiDPO-GRPO gap flips with the scale; in
LLM training Adam's step normalisation plays this part."""
ANALYSIS = """What was run (written after measuring): the configuration above in full, all 57 jobs (the
diagnosis at K = 2 and all, then 55 training runs: six methods, K = 2 and all, 5 seeds, GRPO once
per seed), 28 min with two workers, under `nice` beside the task-supply benchmark. K = 1 and the
cover modes without a nested baseline were not trained in this run; the previous run's K = 1
diagnosis and its reduced K = 1 training are in git history (same picture: every method within
the seed spread of GRPO).

**Result: no DiDPO variant is faster than GRPO at K = 2 or K = all, and the goal (90% success in
<= 0.6x GRPO's updates at K >= 2) is not met.** Median updates per task: GRPO 18 [14-24]; GiGPO 18
at both K (0.97x, 1.00x); DiDPO (within) 18 (0.97x) and 20 (1.05x); DiDPO (reference) 20 (1.11x at
both); DiDPO (contrast) 21 and 20 (1.14x, 1.11x); DiDPO (nested, cover=call) 20 (1.11x at both).
Every gap is inside the spread across seeds and tasks (IQRs of 10-25 updates).

Against the prediction: right that GRPO is as before (18 against 20 there), that GiGPO stays
within 0.9-1.1x, that the reference, contrast and within baselines stay within 0.85-1.2x and that
the goal is not met; **wrong about the nested baseline**: it was predicted the fastest method
(0.75-0.9x) and is among the slowest (1.11x), with the most task-seeds that never reach 0.9 (7/30
at K = 2 and 9/30 at K = all, against GRPO's 5/30).

Why, from the runs themselves (written after looking at them): nested is the fastest method on
the task-seeds where it gets there (units-temperature in 9-12 updates in 4 of its 10 runs, where
GRPO's best are 10, 13, 13; report-avg-aggregation 9, 9, 11 at both K against GRPO's 10, 10, 13),
and it gets stuck more often. A rerun of
its K = 2 seed 0 run shows where it stuck: at update 40 the policy puts 0.99 on *not* editing the
first region of units-temperature and 0.93 on a `partial` edit of the second; on
mdtable-column-alignment 0.80-0.97 on a wrong variant of each region (GRPO gets stuck on
mdtable-column-alignment in 3 of its 5 seeds too). The rewards of all 16 choices of
units-temperature (the env's own test-fraction reward, from -1 to 1) say why: the regions interact.
(`--rewards units-temperature` prints them.) Fixing region 3 without region 2 takes the passing tests from 4/8 to 0/8 (reward 0 -> -1); fixing
region 1 changes nothing unless regions 2 and 3 are both right (0.25 -> 1.0). Under the untrained
policy, where the other regions are mostly wrong, the marginal effect of the right edit of region
3 is negative and that of region 1 zero, so the per-region contrasts (Delta, W) that nested puts
on those choices push them away from the reference: they are lower-variance estimates of the
factorised policy's true gradient, and that gradient leads into the local optimum. GRPO's noisier
estimate of the same gradient walks out of it more often. The diagnosis, measured at the untrained
policy and averaged over the ways, did not show this: nested ranks right above wrong best at the
tool name (AUC 0.62 against 0.57) and inside edits (0.68 against 0.64).

So the premise of the benchmark holds only in part: several regions per step do pose DiDPO's
problem (step-level credit cannot tell which change mattered), but in these six tasks the changes
do not matter one by one; what a region's edit is worth depends on the others. What would let
credit per region help: tasks whose regions each fix their own failing tests (additive rewards,
as in the task builder's multi-region tasks, combined from single-region changes that each fail
tests of their own), credit that compares rollouts sharing the other regions' choices (a contrast conditioned on
the rest, which needs G >= 32 to have members), or exploration that outlasts an early wrong
push (a smaller step or an entropy bonus than lr 2.0 on the logits with whitened advantages)."""
_CACHE: GradeCache | None = None


def multi_region_tasks(minimum: int = 3):
    from code_gym.apps.policy import build_decisions

    return [t for t in bundled_tasks() if len(build_decisions(t)) >= minimum]


def run_one(job: dict) -> dict:
    """One job in a worker: a (method, K, seed) training run, or a diagnosis at one K. The worker's
    grade cache lives as long as it does."""
    global _CACHE
    if _CACHE is None:
        _CACHE = GradeCache()
    if job.get("kind") == "diagnose":
        started = time.monotonic()
        rows = diagnose(job["tasks"], job["decisions"], job["estimators"], group_size=job["group_size"],
                        regions_per_step=job["regions_per_step"], batches=job["batches"])
        return {"kind": "diagnose", "regions_per_step": job["regions_per_step"], "rows": rows,
                "seconds": time.monotonic() - started}
    estimator_name, options = job["estimator"], job["options"]
    config = TrainConfig(estimator=estimator_name, options=options, updates=job["updates"],
                         group_size=job["group_size"], lr=job["lr"], whiten=job["whiten"], seed=job["seed"],
                         verify=False, regions_per_step=job["regions_per_step"])
    started = time.monotonic()
    trainer = Trainer(job["tasks"], config, grade_cache=_CACHE, decisions=job["decisions"])
    try:
        history = trainer.run(until=job["threshold"])
    finally:
        trainer.close()
    reach = {t.id: next((s.update for s in history if s.per_task[t.id] >= job["threshold"]), None)
             for t in job["tasks"]}
    return {"kind": "train", "method": job["method"], "regions_per_step": job["regions_per_step"],
            "seed": job["seed"], "reach": reach, "episodes": trainer.episodes,
            "seconds": time.monotonic() - started,
            "curve": [[s.update, s.success_probability] for s in history]}


def choice_rewards(task_id: str, regions_per_step: int = 2, task_dir: str | None = None) -> str:
    """Every combination of one task's candidates played once through the env: its reward, tests
    passed and resolution (how the regions interact: what an edit is worth given the others).
    With `task_dir`, the task is one of the builder's multi-region tasks in that folder."""
    import itertools

    from code_gym.apps.train import make_env, play

    if task_dir:
        # any built multi-region task of the folder, not only the first --max-tasks
        tasks = [t for t in built_multi_region_tasks(task_dir, 10**9) if t.id == task_id]
        if not tasks:
            raise SystemExit(f"{task_id}: no multi-region task of that id in {task_dir}")
        task_id = tasks[0].id
    elif task_id not in {t.id for t in multi_region_tasks()}:
        raise SystemExit(f"{task_id}: not a bundled multi-region task (built tasks: add --task-dir DIR)")
    tasks, decisions, _ = verified_candidates([task_id], task_dir, 10**9)
    (task,) = tasks
    env = make_env(tasks, _CACHE, max_steps=30)
    rows = []
    try:
        for combo in itertools.product(*[range(len(d.labels)) for d in decisions[task_id]]):
            e = play(env, task, decisions[task_id], combo, regions_per_step)
            rows.append([" / ".join(d.labels[c] for d, c in zip(decisions[task_id], combo)), f"{e.reward:+.2f}",
                         f"{e.tests_passed}/{e.tests_total}", "yes" if e.resolved else "no"])
    finally:
        env.close()
    return markdown_table(["choice per region", "reward", "tests passed", "resolved"], rows)


def built_multi_region_tasks(folder: str | Path, limit: int) -> list:
    """Up to `limit` multi-region tasks of a folder the builder made (`code-gym tasks build`), one
    project after another (round robin over `[source] project`), each with two or more decisions.
    Their regions come from single-region changes that each fail tests of their own."""
    from code_gym.apps.policy import build_decisions
    from code_gym.tasks.task import TaskError, load_task_dir

    import tomllib

    by_project: dict[str, list] = {}
    for task in load_task_dir(folder):
        source = tomllib.loads((task.root / "task.toml").read_text()).get("source", {})
        if int(source.get("regions", 1)) >= 2:
            by_project.setdefault(str(source.get("project", "")), []).append(task)
    chosen = []
    while len(chosen) < limit and any(by_project.values()):
        for project in sorted(by_project):
            if by_project[project] and len(chosen) < limit:
                task = by_project[project].pop(0)
                try:
                    if len(build_decisions(task)) >= 2:
                        chosen.append(task)
                except TaskError:
                    pass
    return chosen


def verified_candidates(task_ids: list[str] | None = None, task_dir: str | None = None, max_tasks: int = 8):
    """The multi-region tasks (or those named; with `task_dir`, built tasks from that folder) and
    their verified decisions (warming this process's grade cache)."""
    global _CACHE
    _CACHE = GradeCache()
    tasks = built_multi_region_tasks(task_dir, max_tasks) if task_dir else multi_region_tasks()
    if task_ids:
        tasks = [t for t in tasks if t.id in task_ids]
    print(f"tasks: {', '.join(t.id for t in tasks)}; verifying candidates ...", file=sys.stderr, flush=True)
    verifier = Trainer(tasks, TrainConfig(updates=0), grade_cache=_CACHE, progress=True)
    verifier.close()
    return tasks, verifier.decisions, verifier.dropped


def k_label(regions_per_step: int) -> str:
    return "all" if regions_per_step == 0 else str(regions_per_step)


def measure(methods: dict, seeds: int, updates: int, group_size: int, lr: float, threshold: float,
            workers: int, whiten: bool = True, regions_per_step: list[int] = (1,), task_ids: list[str] | None = None,
            diagnosis_batches: int = 12, json_path: Path | None = None, task_dir: str | None = None,
            max_tasks: int = 8) -> dict:
    """Every (method, K, seed) run and a diagnosis per K, in a pool of `workers` processes. With
    `json_path`, the results so far are saved after each job (a cut-short run can be rendered)."""
    tasks, decisions, dropped = verified_candidates(task_ids, task_dir, max_tasks)
    every_k = list(regions_per_step)
    estimators = [(label, name, options) for label, (name, options) in methods.items()]
    jobs = [{"kind": "diagnose", "tasks": tasks, "decisions": decisions, "estimators": estimators,
             "group_size": group_size, "regions_per_step": k, "batches": diagnosis_batches}
            for k in every_k] if diagnosis_batches else []
    jobs += [{"kind": "train", "method": label, "estimator": name, "options": options, "seed": seed, "tasks": tasks,
              "decisions": decisions, "updates": updates, "group_size": group_size, "lr": lr, "threshold": threshold,
              "whiten": whiten, "regions_per_step": k}
             for seed in range(seeds) for k in every_k for label, (name, options) in methods.items()
             if not (name in OUTCOME_ONLY and k != every_k[0])]
    started = time.monotonic()
    data = {"diagnosis": {}, "tasks": [t.id for t in tasks],
            "regions": {t: [d.labels for d in decisions[t]] for t in decisions},
            "dropped": dropped, "seeds": seeds, "updates": updates, "group_size": group_size, "lr": lr,
            "threshold": threshold, "whiten": whiten, "workers": workers, "seconds": 0.0,
            "methods": list(methods), "outcome_only": [m for m, (n, _) in methods.items() if n in OUTCOME_ONLY],
            "regions_per_step": every_k, "runs": [], "jobs": len(jobs), "diagnosis_batches": diagnosis_batches,
            "task_dir": str(task_dir) if task_dir else None}
    # fork: the workers inherit the warm grade cache of the verification episodes
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for n, out in enumerate(pool.imap_unordered(run_one, jobs), 1):
            if out["kind"] == "diagnose":
                data["diagnosis"][k_label(out["regions_per_step"])] = out["rows"]
                print(f"[{n}/{len(jobs)}] diagnosis at K={k_label(out['regions_per_step'])} ({out['seconds']:.0f}s)",
                      file=sys.stderr, flush=True)
            else:
                reached = sum(v is not None for v in out["reach"].values())
                print(f"[{n}/{len(jobs)}] {out['method']} K={k_label(out['regions_per_step'])} seed {out['seed']}: "
                      f"{reached}/{len(tasks)} tasks reached {threshold} ({out['episodes']} episodes, "
                      f"{out['seconds']:.0f}s)", file=sys.stderr, flush=True)
                data["runs"].append(out)
            _save(data, started, json_path)
    return data


def _save(data: dict, started: float, json_path: Path | None) -> None:
    """The results so far (a long run keeps what it finished)."""
    data["seconds"] = time.monotonic() - started
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(data))


def runs_of(data: dict, method: str, k: int) -> list[dict]:
    """The runs of `method` at K = k (an outcome-only method's runs at the first K stand for every K)."""
    if method in data.get("outcome_only", ()):
        k = data["regions_per_step"][0]
    return sorted((r for r in data["runs"] if r["method"] == method and r.get("regions_per_step", k) == k),
                  key=lambda r: r["seed"])


def diagnose(tasks, decisions: dict, estimators: list, batches: int = 12, group_size: int = 8,
             seed: int = 123, regions_per_step: int = 1) -> list[dict]:
    """Where each estimator's credit lands, on batches of the untrained policy played at K =
    `regions_per_step`: for the branch points at the tool name (edit the region or only view it)
    and those inside edits (which edit), the whitened advantage of the way taken, split by whether
    that way leads to the reference. `estimators`: (label, name, options) each."""
    from code_gym.apps.policy import EditPolicy
    from code_gym.apps.train import branch_advantages, estimator, make_env, play, whiten

    policy, rng = EditPolicy(decisions), np.random.default_rng(seed)
    longest = max(len(d) for d in decisions.values())
    env = make_env(tasks, _CACHE, max_steps=max(30, longest + 1))
    try:
        plans = [[play(env, t, decisions[t.id], policy.sample(t.id, rng), regions_per_step)
                  for t in tasks for _ in range(group_size)] for _ in range(batches)]
    finally:
        env.close()
    rows = []
    for label, name, options in estimators:
        taken: dict[str, list[tuple[float, bool]]] = {"tool name": [], "inside the edit": []}
        for batch in plans:
            per_branch = branch_advantages(estimator(name, **options)([e.trajectory for e in batch]), batch, decisions)
            for task in tasks:
                idx = [i for i, e in enumerate(batch) if e.task_id == task.id]
                advantages = whiten([np.stack([per_branch[i][d] for i in idx]) for d in range(len(decisions[task.id]))])
                for d, decision in enumerate(decisions[task.id]):
                    for k, i in enumerate(idx):
                        for n, branch in enumerate(decision.branches):
                            way = branch.way(batch[i].choices[d])
                            if way is not None:
                                kind = "tool name" if n == 0 else "inside the edit"
                                taken[kind].append((float(advantages[d][k, n]), 0 in branch.ways[way]))
        for kind, values in taken.items():
            if values:  # tasks whose regions have no wrong edit (edit or not) have no branch inside edits
                rows.append({"estimator": label, "branch": kind, **separation(values)})
    return rows


def perfect_credit(tasks, decisions: dict, seeds: int, updates: int, group_size: int, lr: float,
                   threshold: float) -> dict:
    """A reference point for credit at this step size: the same policy, sampling, whitening and step
    as training, with sign-perfect credit (+1 on the branch token of every way that leads to
    the reference, -1 on every way that leads away), and no environment (the credit needs no reward).
    Returns {"seeds", "reach": {task id: [update reaching `threshold` per seed, None: never]}}."""
    from code_gym.apps.policy import EditPolicy
    from code_gym.apps.train import whiten

    reach = {t.id: [] for t in tasks}
    for seed in range(seeds):
        policy, rng = EditPolicy(decisions, lr=lr), np.random.default_rng(seed)
        got: dict[str, int | None] = {t.id: None for t in tasks}
        for number in range(1, updates + 1):
            active = [t.id for t in tasks if policy.success_probability(t.id) < threshold]
            if not active:
                break
            for task_id in active:
                choices = np.array([policy.sample(task_id, rng) for _ in range(group_size)])
                advantages = []
                for d, decision in enumerate(decisions[task_id]):
                    a = np.full((group_size, len(decision.branches)), np.nan)
                    for b in range(group_size):
                        for n, branch in enumerate(decision.branches):
                            way = branch.way(int(choices[b, d]))
                            if way is not None:
                                a[b, n] = 1.0 if 0 in branch.ways[way] else -1.0
                    advantages.append(a)
                policy.update(task_id, choices, [np.nan_to_num(a) for a in whiten(advantages)])
                if policy.success_probability(task_id) >= threshold:
                    got[task_id] = number
        for task_id, value in got.items():
            reach[task_id].append(value)
    return {"seeds": seeds, "reach": reach}


def perfect_line(data: dict) -> str:
    """One sentence: the sign-perfect credit's updates per task against GRPO's, at the run's step size."""
    perfect = data.get("perfect")
    if not perfect:
        return ""
    budget = data["updates"] + 1
    values = [v if v is not None else budget for per_seed in perfect["reach"].values() for v in per_seed]
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    grpo = [v if v is not None else budget for r in runs_of(data, "GRPO", data["regions_per_step"][0])
            for v in r["reach"].values()] if "GRPO" in data["methods"] else []
    against = (f" (GRPO: median {np.median(grpo):.0f}, mean {np.mean(grpo):.2f}; ratio of the means "
               f"{np.mean(values) / np.mean(grpo):.2f})" if grpo else "")
    return (f"Sign-perfect credit at the same step size (`--perfect-credit {perfect['seeds']}`: the same policy, "
            f"sampling, whitening and lr {data['lr']}, with +1 on every way that leads to the reference and -1 on "
            f"every way that leads away, no environment; {perfect['seeds']} seeds): updates per task median "
            f"{med:.0f} [{q1:.0f}-{q3:.0f}], mean {np.mean(values):.2f}{against}: what credit that never gets a "
            f"sign wrong gains at this step size.\n\n")


def separation(values: list[tuple[float, bool]]) -> dict:
    """n, AUC (chance a right way's advantage beats a wrong one's, ties half), mean |A|, mean gap."""
    a = np.array([v for v, _ in values], np.float64)
    right = np.array([r for _, r in values], bool)
    if not right.any() or right.all():
        return {"n": int(a.size), "auc": float("nan"), "mean_abs": float(np.abs(a).mean()) if a.size else 0.0,
                "gap": float("nan")}
    diff = a[right][:, None] - a[~right][None, :]
    return {"n": int(a.size), "auc": float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size),
            "mean_abs": float(np.abs(a).mean()), "gap": float(a[right].mean() - a[~right].mean())}


def diagnosis_table(rows: list[dict]) -> str:
    header = ["estimator", "branch point", "ways taken", "AUC right > wrong", "mean abs(A)", "mean A right - wrong"]
    return markdown_table(header, [[r["estimator"], r["branch"], str(r["n"]), f"{r['auc']:.3f}",
                                    f"{r['mean_abs']:.2f}", f"{r['gap']:+.2f}"] for r in rows])


def summarise(data: dict) -> tuple[list[str], list[list[str]]]:
    """One row per (method, K): per-task updates to the threshold (median, quartiles, censored at the
    budget), its ratio to GRPO's at that K, tasks reaching it, and per seed the update at which every
    task had."""
    budget = data["updates"]
    header = ["method", "K", "tasks reaching 0.9", "updates per task: median [IQR]", "median / GRPO's",
              "all tasks: per seed", "episodes per run (mean)"]
    rows = []
    for k in data["regions_per_step"]:
        medians = {}
        for method in data["methods"]:
            runs = runs_of(data, method, k)
            if not runs:
                continue
            per_task = [v if v is not None else budget + 1 for r in runs for v in r["reach"].values()]
            medians[method] = float(np.median(per_task))
        for method in data["methods"]:
            runs = runs_of(data, method, k)
            if not runs:
                continue
            per_task = [v if v is not None else budget + 1 for r in runs for v in r["reach"].values()]
            reached = sum(v is not None for r in runs for v in r["reach"].values())
            suite = [max(v if v is not None else budget + 1 for v in r["reach"].values()) for r in runs]
            q1, med, q3 = np.percentile(per_task, [25, 50, 75])
            ratio = f"{med / medians['GRPO']:.2f}" if "GRPO" in medians else "-"
            first = data["regions_per_step"][0]
            shared = f" (K={k_label(first)} run)" if method in data.get("outcome_only", ()) and k != first else ""
            rows.append([method + shared, k_label(k), f"{reached}/{len(per_task)}", f"{med:.0f} [{q1:.0f}-{q3:.0f}]",
                         ratio, " ".join(str(x) if x <= budget else f">{budget}" for x in suite),
                         f"{np.mean([r['episodes'] for r in runs]):.0f}"])
    return header, rows


def _censored(value: float, budget: int) -> str:
    return f">{budget}" if value > budget else f"{value:.0f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def plot(data: dict, path: Path, title: str = "built-in policy") -> None:
    """One panel per K: per method the mean over seeds of the curve (mean P(resolve) over the tasks),
    band min-max over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every_k = data["regions_per_step"]
    fig, axes = plt.subplots(1, len(every_k), figsize=(5.2 * len(every_k), 4.4), sharey=True, squeeze=False)
    for ax, k in zip(axes[0], every_k):
        for method in data["methods"]:
            curves = [r["curve"] for r in runs_of(data, method, k)]
            if not curves:
                continue
            length = data["updates"] + 1
            # a run that stopped early (every task frozen) keeps its last value
            values = np.array([[c[min(u, len(c) - 1)][1] for u in range(length)] for c in curves], np.float64)
            line, = ax.plot(range(length), np.nanmean(values, axis=0), label=method, lw=1.5)
            ax.fill_between(range(length), np.nanmin(values, axis=0), np.nanmax(values, axis=0),
                            color=line.get_color(), alpha=0.08)
        ax.axhline(data["threshold"], color="grey", ls=":", lw=1)
        ax.set(xlabel="update", title=f"K = {k_label(k)} regions per step", ylim=(0, 1.02))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(data.get("curve_label", "mean P(resolve) over the tasks"))
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{title}: {len(data['tasks'])} task(s), G={data['group_size']}, {data['seeds']} seeds "
                 f"(line: mean, band: min-max)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(data: dict, analysis: str, image: str = "img/learning_efficiency.png") -> str:
    header, rows = summarise(data)
    regions = "; ".join(f"{t} ({len(r)} regions, {'/'.join(str(len(x)) for x in r)} candidates)"
                        for t, r in data["regions"].items())
    dropped = ("Candidates dropped by verification (they pass the tests): " + "; ".join(data["dropped"]) + "."
               if data["dropped"] else "No candidate was dropped by verification.")
    trained = sum(1 for _ in data["runs"])
    diagnosis = "".join(f"K = {k}:\n\n{diagnosis_table(rows_)}\n\n" for k, rows_ in data.get("diagnosis", {}).items())
    return (f"Built-in policy: {data['seeds']} seeds per method, K = {', '.join(k_label(k) for k in data['regions_per_step'])} "
            f"regions per step, G = {data['group_size']} episodes per task per update, at most {data['updates']} updates, "
            f"lr {data['lr']}, threshold {data['threshold']}, {data['workers']} worker processes; {trained} training runs "
            f"of {data.get('jobs', trained)} jobs, {data['seconds'] / 60:.1f} min on the shared 2-core machine (under `nice`).\n\n"
            + (f"Tasks (built by `code-gym tasks build` into {data['task_dir']}, `--max-tasks {len(data['tasks'])}`): "
               if data.get("task_dir") else "Tasks: ")
            + f"{regions}. {dropped}\n\n{markdown_table(header, rows)}\n\n"
            f"Columns: a task's updates are those until P(resolve) >= {data['threshold']} (censored at "
            f"{data['updates'] + 1} when never reached, which also counts in the median); \"all tasks\" is, "
            f"per seed, the update at which the last task got there. GRPO's credit depends on the outcome only, so "
            f"its K = {k_label(data['regions_per_step'][0])} runs stand for every K (same seeds, same samples). The curves are the mean over the tasks of "
            f"P(resolve); a task stops training once it gets there, so they level off below 1.\n\n"
            f"![learning curves]({image})\n\n"
            + perfect_line(data)
            + (f"Where the credit lands ({len(data.get('diagnosis_tasks', data['tasks']))} tasks: "
               f"{', '.join(data.get('diagnosis_tasks', data['tasks']))}; {data.get('diagnosis_batches', 12)} batches of the untrained policy played at each K, "
               f"G = {data['group_size']}, "
               f"advantages whitened per task as in training; AUC: the chance that a way leading to the reference "
               f"gets a higher advantage than one leading away):\n\n{diagnosis}" if diagnosis else "")
            + analysis)


QUICK_TASK = "units-temperature"  # --quick: one small multi-region task (3 regions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"one task ({QUICK_TASK}), two seeds, K = 1 and all, small budgets; never writes the docs")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=40, help="rollout budget: updates per run")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=[*METHODS, *EXTRA_METHODS],
                        metavar="LABEL", help=f"methods to run (default: {list(METHODS)})")
    parser.add_argument("--no-whiten", action="store_true", help="use each estimator's advantages at their own scale")
    parser.add_argument("--regions-per-step", type=int, nargs="+", default=[1, 2, 0], metavar="K",
                        help="decisions packed into one response, one run per K (0: every region in one step)")
    parser.add_argument("--diagnosis-batches", type=int, default=12, help="batches per K for the diagnosis (0: none)")
    parser.add_argument("--tasks", nargs="+", help="task ids (default: every multi-region task)")
    parser.add_argument("--task-dir", help="train on multi-region tasks the builder made in this folder "
                        "(`code-gym tasks build`) instead of the bundled ones")
    parser.add_argument("--max-tasks", type=int, default=8, help="with --task-dir: at most this many, one "
                        "project after another (default 8)")
    parser.add_argument("--section", default="learning efficiency",
                        help="docs/benchmarks.md section to write (its plot: img/<section, dashed>.png)")
    parser.add_argument("--prediction", help="a file with the prediction for the docs (default: PREDICTION)")
    parser.add_argument("--out", default=str(ROOT / "out" / "benchmarks"), help="folder for the raw results and plots")
    parser.add_argument("--from-json", help="re-render the docs from saved results instead of measuring")
    parser.add_argument("--analysis", help="a file with the analysis paragraph for the docs")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--perfect-credit", type=int, default=0, metavar="SEEDS",
                        help="also train with sign-perfect credit (no env) for this many seeds: a reference point at this "
                        "step size (0: not)")
    parser.add_argument("--rewards", metavar="TASK", help="print the reward of every combination of TASK's "
                        "candidates (how its regions interact) and stop; with --task-dir, a built task of that folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.rewards:
        print(choice_rewards(args.rewards, task_dir=args.task_dir))
        return 0
    if args.quick:
        args.seeds, args.updates, args.diagnosis_batches, args.tasks = 2, 10, 2, [QUICK_TASK]
        args.regions_per_step = [1, 0]
        args.no_docs = True
    json_path = out / ("learning_efficiency_quick.json" if args.quick else "learning_efficiency.json")
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
    else:
        every = {**METHODS, **EXTRA_METHODS}
        data = measure({m: every[m] for m in args.methods}, args.seeds, args.updates, args.group_size, args.lr,
                       args.threshold, args.workers, whiten=not args.no_whiten,
                       regions_per_step=args.regions_per_step, task_ids=args.tasks,
                       diagnosis_batches=args.diagnosis_batches, json_path=json_path,
                       task_dir=args.task_dir, max_tasks=args.max_tasks)
    if args.perfect_credit and data.get("perfect", {}).get("seeds") != args.perfect_credit:
        tasks, decisions, _ = verified_candidates(data["tasks"], data.get("task_dir"), 10**9)
        data["perfect"] = perfect_credit(tasks, decisions, args.perfect_credit, data["updates"],
                                         data["group_size"], data["lr"], data["threshold"])
        if not args.from_json:
            _save(data, time.monotonic() - data["seconds"], json_path)
    header, rows = summarise(data)
    print(markdown_table(header, rows))
    line = perfect_line(data)
    if line:
        print(line.strip())
    plot(data, json_path.with_suffix(".png"))
    if not args.no_docs:
        image = "img/" + args.section.replace(" ", "_").replace(":", "").replace("-", "_") + ".png"
        plot(data, ROOT / "docs" / image)
        analysis = Path(args.analysis).read_text() if args.analysis else ANALYSIS
        prediction = Path(args.prediction).read_text().strip() if args.prediction else PREDICTION
        write_section(args.section, prediction + "\n\n" + SCALE + "\n\n" + report(data, analysis, image))
    return 0


if __name__ == "__main__":
    sys.exit(main())
