"""Learning efficiency of the built-in policy under each credit estimator.

DiDPO (reference baseline), DiDPO (contrast baseline), GRPO and GiGPO train the built-in policy
(`code_gym.apps.policy`, `code_gym.apps.train`) on the multi-region tasks of the bundled suite (three or more
regions to get right in one episode), 5 seeds each, with the same rollout budget (G episodes per
task per update, at most U updates). Measured: the updates a task needs until the policy resolves
it with probability >= 0.9 (the product over its regions of the probability of the reference
edit); a task that reaches it is frozen and costs no more rollouts.

Everything runs through the real environment and the real tests; grades are cached by a hash of
the final files (deterministic given them), shared by the runs of one worker process.

Run: python benchmarks/learning_efficiency.py [--workers 2] [--no-docs]
Writes the "## learning efficiency" section of docs/benchmarks.md and docs/img/learning_efficiency.png;
`--from-json FILE` re-renders them from a saved run.
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

from code_gym.task import bundled_tasks  # noqa: E402
from code_gym.apps.train import TrainConfig, Trainer  # noqa: E402
from code_gym.grading import GradeCache  # noqa: E402

METHODS = {  # label -> (estimator name in credit.ESTIMATORS, options)
    "DiDPO (reference)": ("didpo", {}),
    "DiDPO (contrast)": ("didpo-contrast", {}),
    "GRPO": ("grpo", {}),
    "GiGPO": ("gigpo", {}),
}
EXTRA_METHODS = {  # for --methods
    "DiDPO (contrast, exact groups)": ("didpo-contrast", {"similarity": 1.0}),
    "DiDPO (reference, std-normalised)": ("didpo", {"mode": "mean_std_norm"}),
}
PREDICTION = """Prediction, written before measuring: no estimator clearly ahead. In this policy the
choice to edit a region at all is made at the tool-name token (`str_replace` vs `view`), which no
diff covers, so every estimator gives it the episode advantage A^E (GiGPO adds its step term).
DiDPO's A^D reaches only the branch tokens between different edits of one region; with the default
similarity 0.8 a right edit and its one-token mutation fall into one anchor, so the contrast
baseline adds the same value to both (no signal, some noise) and the reference baseline adds the
return centred over the makers of that edit (a little signal). Expected: DiDPO (reference) and
GiGPO within 15% of GRPO's median updates, DiDPO (contrast) equal or slightly slower; seed spread
larger than any gap."""
ANALYSIS = """**Result (written after measuring): DiDPO did not learn faster on this testbed; GRPO and GiGPO
did at least as well.** Median updates per task: GiGPO 15, GRPO 16, DiDPO (reference) 19, DiDPO
(contrast) 21, contrast with exact groups 21. The interquartile ranges overlap, and the spread over
seeds (the update at which the last of the six tasks got there goes from 16 to more than 40 within
one method) is larger than any gap. The contrast variants also left more tasks unsolved within the
budget (7-8 of 30 against 4), mostly mdtable-column-alignment, the task with the most wrong
variants. The prediction was right about GiGPO and the contrast baseline, and too kind to DiDPO's
reference baseline (19% slower than GRPO, not within 15%).

Why, from the diagnosis table:

1. Most of the learning is the choice to edit a region at all, made at the tool-name token. No diff
   covers that token, so DiDPO gives it A^E alone, like GRPO: the ranking there is the same for
   every estimator (AUC 0.57).
2. Inside edits, DiDPO's diff credit ranks right above wrong no better than the episode advantage
   (AUC 0.631 with the reference baseline, 0.615 with the contrast, 0.632 for GRPO). With the
   default similarity 0.8 a right edit and its one-token mutation fall into one anchor, so the
   contrast baseline adds the same value to both (noise), and the reference baseline adds the
   return centred over that anchor's makers, which mostly repeats A^E. With exact groups
   (similarity 1.0) a mutation made by a single rollout forms no group and gets no anchor, so the
   contrast gets no better.
3. DiDPO's extra credit raises the scale of a batch's advantages (mean |A| inside edits 1.00 against
   0.83). After normalisation (here per-task whitening; in LLM training Adam's step normalisation
   plays that part) the tool-name tokens, where this testbed's bottleneck is, get smaller steps
   (mean |A| 0.61 against 0.81, right-minus-wrong gap +0.21 against +0.28).

Sensitivity (`--no-whiten --methods GRPO "DiDPO (reference, std-normalised)" "DiDPO (reference)"`,
same seeds and budget, 4.5 min): without whitening, DiDPO with `mode="mean_std_norm"` (the same A^E
scale as GRPO) needed 16 updates per task (median, IQR 12-23) against GRPO's 19 (14-24), but left
6 of 30 tasks unsolved against GRPO's 2; DiDPO at its default `mean_norm` scale took steps so small
that only 4 of 30 tasks got there. So the sign of the gap depends on how advantages are scaled, and
no setting gave DiDPO a robust advantage here.

What this says: DiDPO's premise, that credit placed on the changed lines tells which edit mattered,
needs rollouts that make different, dissimilar edits to the same region, as samples of a language
model do. In this policy the decisive choices are whether to edit (tokens no diff covers) and
between near-duplicate edits (which DiDPO groups together), so its extra credit mostly adds scale
and noise. The demo's report (`make demo`) shows the same thing line by line."""
_CACHE: GradeCache | None = None


def multi_region_tasks(minimum: int = 3):
    from code_gym.apps.policy import build_decisions

    return [t for t in bundled_tasks() if len(build_decisions(t)) >= minimum]


def run_one(job: dict) -> dict:
    """One (method, seed) training run in a worker; its grade cache lives as long as the worker."""
    global _CACHE
    if _CACHE is None:
        _CACHE = GradeCache()
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
    return {"method": job["method"], "seed": job["seed"], "reach": reach, "episodes": trainer.episodes,
            "seconds": time.monotonic() - started,
            "curve": [[s.update, s.success_probability] for s in history]}


def verified_candidates():
    """The multi-region tasks and their verified decisions (warming this process's grade cache)."""
    global _CACHE
    _CACHE = GradeCache()
    tasks = multi_region_tasks()
    print(f"tasks: {', '.join(t.id for t in tasks)}; verifying candidates ...", file=sys.stderr, flush=True)
    verifier = Trainer(tasks, TrainConfig(updates=0), grade_cache=_CACHE, progress=True)
    verifier.close()
    return tasks, verifier.decisions, verifier.dropped


def _label(method: str, regions_per_step: int, every_k: list[int]) -> str:
    """A method's label, with K (regions per step; 0: all) when the run compares several or K != 1."""
    if every_k == [1]:
        return method
    return f"{method}, K={'all' if regions_per_step == 0 else regions_per_step}"


def measure(methods: dict, seeds: int, updates: int, group_size: int, lr: float, threshold: float,
            workers: int, whiten: bool = True, regions_per_step: list[int] = (1,)) -> dict:
    tasks, decisions, dropped = verified_candidates()
    every_k = list(regions_per_step)
    jobs = [{"method": _label(label, k, every_k), "estimator": name, "options": options, "seed": seed, "tasks": tasks,
             "decisions": decisions, "updates": updates, "group_size": group_size, "lr": lr, "threshold": threshold,
             "whiten": whiten, "regions_per_step": k}
            for seed in range(seeds) for k in every_k for label, (name, options) in methods.items()]
    started = time.monotonic()
    runs = []
    # fork: the workers inherit the warm grade cache of the verification episodes
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for k, run in enumerate(pool.imap_unordered(run_one, jobs), 1):
            reached = sum(v is not None for v in run["reach"].values())
            print(f"[{k}/{len(jobs)}] {run['method']} seed {run['seed']}: {reached}/{len(tasks)} tasks reached "
                  f"{threshold} ({run['episodes']} episodes, {run['seconds']:.0f}s)", file=sys.stderr, flush=True)
            runs.append(run)
    print("diagnosis: where the credit lands ...", file=sys.stderr, flush=True)
    diagnosis = diagnose(tasks, decisions, [name for name, options in methods.values() if not options],
                         group_size=group_size)
    return {"diagnosis": diagnosis, "tasks": [t.id for t in tasks], "regions": {t: [d.labels for d in decisions[t]] for t in decisions},
            "dropped": dropped, "seeds": seeds, "updates": updates, "group_size": group_size, "lr": lr,
            "threshold": threshold, "whiten": whiten, "workers": workers, "seconds": time.monotonic() - started,
            "methods": [_label(m, k, every_k) for k in every_k for m in methods], "regions_per_step": every_k,
            "runs": runs}


def diagnose(tasks, decisions: dict, estimators: list[str], batches: int = 12, group_size: int = 8,
             seed: int = 123) -> list[dict]:
    """Where each estimator's credit lands, on batches of the untrained policy: for the branch points
    at the tool name (edit the region or only view it) and those inside edits (which edit), the
    whitened advantage of the way taken, split by whether that way leads to the reference."""
    from code_gym.apps.policy import EditPolicy
    from code_gym.apps.train import branch_advantages, estimator, make_env, play, whiten

    policy, rng = EditPolicy(decisions), np.random.default_rng(seed)
    env = make_env(tasks, _CACHE)
    try:
        plans = [[play(env, t, decisions[t.id], policy.sample(t.id, rng)) for t in tasks for _ in range(group_size)]
                 for _ in range(batches)]
    finally:
        env.close()
    rows = []
    for name in estimators:
        taken: dict[str, list[tuple[float, bool]]] = {"tool name": [], "inside the edit": []}
        for batch in plans:
            per_branch = branch_advantages(estimator(name)([e.trajectory for e in batch]), batch, decisions)
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
            a = np.array([v for v, _ in values])
            right = np.array([r for _, r in values])
            diff = a[right][:, None] - a[~right][None, :]
            rows.append({"estimator": name, "branch": kind, "n": int(a.size),
                         "auc": float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size),
                         "mean_abs": float(np.abs(a).mean()), "gap": float(a[right].mean() - a[~right].mean())})
    return rows


def diagnosis_table(rows: list[dict]) -> str:
    header = ["estimator", "branch point", "ways taken", "AUC right > wrong", "mean abs(A)", "mean A right - wrong"]
    return markdown_table(header, [[r["estimator"], r["branch"], str(r["n"]), f"{r['auc']:.3f}",
                                    f"{r['mean_abs']:.2f}", f"{r['gap']:+.2f}"] for r in rows])


def summarise(data: dict) -> tuple[list[str], list[list[str]]]:
    """One row per method: per-task updates to the threshold (median, quartiles, censored at the
    budget), tasks reaching it, and per seed the update at which every task had."""
    budget = data["updates"]
    header = ["method", "tasks reaching 0.9", "updates per task: median [IQR]", "all tasks: per seed",
              "all tasks: median", "episodes per run (mean)"]
    rows = []
    for method in data["methods"]:
        runs = sorted((r for r in data["runs"] if r["method"] == method), key=lambda r: r["seed"])
        per_task = [v if v is not None else budget + 1 for r in runs for v in r["reach"].values()]
        reached = sum(v is not None for r in runs for v in r["reach"].values())
        suite = [max(v if v is not None else budget + 1 for v in r["reach"].values()) for r in runs]
        q1, med, q3 = np.percentile(per_task, [25, 50, 75])
        rows.append([method, f"{reached}/{len(per_task)}", f"{med:.0f} [{q1:.0f}-{q3:.0f}]",
                     " ".join(str(s) if s <= budget else f">{budget}" for s in suite),
                     _censored(float(np.median(suite)), budget),
                     f"{np.mean([r['episodes'] for r in runs]):.0f}"])
    return header, rows


def _censored(value: float, budget: int) -> str:
    return f">{budget}" if value > budget else f"{value:.0f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2))
    for method in data["methods"]:
        curves = [r["curve"] for r in data["runs"] if r["method"] == method]
        length = data["updates"] + 1
        # a run that stopped early (every task frozen) keeps its last value
        values = np.array([[c[min(u, len(c) - 1)][1] for u in range(length)] for c in curves])
        line, = ax.plot(range(length), values.mean(axis=0), label=method, lw=1.8)
        ax.fill_between(range(length), values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.12)
    ax.axhline(data["threshold"], color="grey", ls=":", lw=1)
    ax.set(xlabel="update", ylabel="mean P(resolve) over the tasks", ylim=(0, 1.02),
           title=f"built-in policy, {len(data['tasks'])} multi-region tasks, G={data['group_size']}, "
                 f"{data['seeds']} seeds (band: min-max)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(data: dict, analysis: str) -> str:
    header, rows = summarise(data)
    regions = "; ".join(f"{t} ({len(r)} regions, {'/'.join(str(len(x)) for x in r)} candidates)"
                        for t, r in data["regions"].items())
    dropped = ("Candidates dropped by verification (they pass the tests): " + "; ".join(data["dropped"]) + "."
               if data["dropped"] else "No candidate was dropped by verification.")
    return (f"`python benchmarks/learning_efficiency.py`: {data['seeds']} seeds per method, G = {data['group_size']} "
            f"episodes per task per update, at most {data['updates']} updates, lr {data['lr']}, threshold "
            f"{data['threshold']}, {data['workers']} worker processes; the training runs took {data['seconds'] / 60:.1f} min "
            f"on the shared 2-core machine"
            + "".join(f"; {m} added with `--methods`" for m in data["methods"] if m in EXTRA_METHODS) + ".\n\n"
            f"Tasks: {regions}. {dropped}\n\n{PREDICTION}\n\n{markdown_table(header, rows)}\n\n"
            f"Columns: a task's updates are those until P(resolve) >= {data['threshold']} (censored at "
            f"{data['updates'] + 1} when never reached, which also counts in the median); \"all tasks\" is, "
            f"per seed, the update at which the last task got there. The curves are the mean over the tasks of "
            f"P(resolve); a task stops training once it gets there, so they level off below 1.\n\n"
            f"![learning curves](img/learning_efficiency.png)\n\n"
            + (f"Where the credit lands (12 batches of the untrained policy, G = {data['group_size']}, advantages "
               f"whitened per task as in training; AUC: the chance that a way leading to the reference gets a "
               f"higher advantage than one leading away):\n\n{diagnosis_table(data['diagnosis'])}\n\n"
               if data.get("diagnosis") else "")
            + analysis)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=40, help="rollout budget: updates per run")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=[*METHODS, *EXTRA_METHODS],
                        metavar="LABEL", help=f"methods to run (default: the first four of {[*METHODS, *EXTRA_METHODS]})")
    parser.add_argument("--no-whiten", action="store_true", help="use each estimator's advantages at their own scale")
    parser.add_argument("--regions-per-step", type=int, nargs="+", default=[1], metavar="K",
                        help="decisions packed into one response, one run per K (0: every region in one step)")
    parser.add_argument("--json", default=str(ROOT / "out" / "benchmarks" / "learning_efficiency.json"),
                        help="where the raw results go")
    parser.add_argument("--from-json", help="re-render the docs from saved results instead of measuring")
    parser.add_argument("--analysis", help="a file with the analysis paragraph for the docs")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        if "diagnosis" not in data:
            tasks, decisions, _ = verified_candidates()
            data["diagnosis"] = diagnose(tasks, decisions, ["didpo", "didpo-contrast", "grpo", "gigpo"],
                                         group_size=data["group_size"])
            Path(args.from_json).write_text(json.dumps(data))
    else:
        every = {**METHODS, **EXTRA_METHODS}
        data = measure({m: every[m] for m in args.methods}, args.seeds, args.updates, args.group_size, args.lr,
                       args.threshold, args.workers, whiten=not args.no_whiten,
                       regions_per_step=args.regions_per_step)
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(data))
    header, rows = summarise(data)
    print(markdown_table(header, rows))
    if not args.no_docs:
        plot(data, ROOT / "docs" / "img" / "learning_efficiency.png")
        analysis = Path(args.analysis).read_text() if args.analysis else ANALYSIS
        write_section("learning efficiency", report(data, analysis))
    return 0


if __name__ == "__main__":
    sys.exit(main())
