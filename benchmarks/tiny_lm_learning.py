"""Does credit assignment make a language model that writes its own tokens learn faster?

The tiny LM (`code_gym.apps.tiny_lm`: a GPT-2-style transformer, every token of its responses
sampled, played in the real environment and graded by the real tests) trains on the builder's
multi-region tasks, whose regions add up, and on one bundled task whose regions interact (the hard
case), under GRPO, GiGPO, DiDPO with the paper's rules and DiDPO's best preset on the branch
policy, with the same rollout budget (G episodes per update, at most U updates) and S seeds; the
methods of one (task, seed) share its tokenizer, its warm start and so the rollouts of their first
update. Measured: the updates until the model's probability of sampling the reference response
(P(resolve), from its token probabilities) reaches 0.9, and where the credit lands at the decision
tokens (the token that writes the first character where a region's candidate texts part).

Run: python benchmarks/tiny_lm_learning.py --task-dir DIR [--tasks ID ...] [--seeds 5] [--workers 2]
  [--device cuda --n-embd 256 --n-layer 6 --seeds 20 --workers 8] on a GPU machine.
Results go to --out (JSON after every run; a rerun with the same settings resumes: finished runs
are kept), the section "learning efficiency: tiny LM" of docs/benchmarks.md and
docs/img/tiny_lm_learning.png (not with --quick or --no-docs; --from-json re-renders them).
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
from learning_efficiency import markdown_table, verified_candidates  # noqa: E402

SECTION = "learning efficiency: tiny LM"
METHODS = {  # label -> (estimator in credit.ESTIMATORS, options)
    "GRPO": ("grpo", {}),
    "GiGPO": ("gigpo", {}),
    "DiDPO (paper)": ("didpo", {}),  # the reference implementation's rules: lines cover, reference baseline
    "DiDPO (split, cover=call)": ("didpo", {"baseline": "split", "cover": "call"}),  # the branch policy's best
}
HARD_TASK = "report-avg-aggregation"  # bundled: 3 regions that interact
# the RL settings every method shares (TinyLMConfig fields); see docs/benchmarks.md for why each
SETTINGS = {"group_size": 32, "regions_per_step": 0}
DIAGNOSED_UPDATES = 3  # decision-token credit is recorded at the first updates (update 1: the same rollouts)
_CACHE = None


def load_tasks(task_dir: str | None, ids: list[str] | None, max_tasks: int, hard: str | None):
    """The built multi-region tasks (all of `task_dir`'s, or those named, at most `max_tasks`) and
    the bundled hard task, with their verified decisions (candidates whose outcome is what their
    kind says)."""
    tasks, decisions = [], {}
    if task_dir:
        chosen, verified, _ = verified_candidates(ids, task_dir, max_tasks if not ids else 10**9)
        if ids and len(chosen) < len(ids):
            missing = sorted(set(ids) - {t.id for t in chosen})
            raise SystemExit(f"not multi-region tasks of {task_dir}: {', '.join(missing)}")
        tasks += chosen[:max_tasks]
        decisions.update(verified)
    if hard:
        chosen, verified, _ = verified_candidates([hard])
        if not chosen:
            raise SystemExit(f"{hard}: not a bundled multi-region task")
        tasks += chosen
        decisions.update(verified)
    if not tasks:
        raise SystemExit("no task: give --task-dir (a folder `code-gym tasks build` wrote) or --hard-task")
    return tasks, decisions


def run_key(task_id: str, method: str, seed: int) -> str:
    return f"{task_id}|{method}|{seed}"


def run_one(job: dict) -> dict:
    """One training run in a worker (the worker's grade cache is shared by its runs)."""
    global _CACHE
    import torch

    from code_gym.apps.tiny_lm import TinyLMConfig, TinyLMTrainer
    from code_gym.grading.grade import GradeCache

    if _CACHE is None:
        _CACHE = GradeCache()
    if job["config"].get("device", "cpu") == "cpu":
        torch.set_num_threads(1)
    settings = dict(job["config"])
    reward = settings.pop("reward", None)
    if job["task"].id != HARD_TASK and reward is not None:  # the bundled task keeps the env's default reward
        settings["reward"] = reward
    config = TinyLMConfig(estimator=job["estimator"], options=job["options"], seed=job["seed"], verify=False,
                          **settings)
    started = time.monotonic()
    trainer = TinyLMTrainer(job["task"], config, grade_cache=_CACHE, decisions=job["decisions"])
    # one warm start per (task, seed, model and warm-start settings), shared by the methods
    key = "-".join(str(x) for x in (job["task"].id, job["seed"], config.regions_per_step, config.sft_steps,
                                    config.sft_lr, config.sft_batch, config.n_layer, config.n_embd, config.vocab_size))
    credit_rows = []
    try:
        if job.get("warm_cache"):
            import fcntl

            Path(job["warm_cache"]).mkdir(parents=True, exist_ok=True)
            with open(Path(job["warm_cache"]) / f"{key}.lock", "w") as lock:  # one worker makes it, the others load it
                fcntl.flock(lock, fcntl.LOCK_EX)
                trainer.warm_start(Path(job["warm_cache"]) / f"{key}.pt")
        else:
            trainer.warm_start()

        def record(stats):
            if stats.update <= DIAGNOSED_UPDATES:
                credit_rows.extend(decision_credit(trainer, stats.update))

        history = trainer.run(until=job["threshold"], on_update=record)
    finally:
        trainer.close()
    p_reference = [s.p_reference for s in history]
    reached = first_reach({"p_reference": p_reference}, ("p", job["threshold"]))
    return {"task": job["task"].id, "method": job["method"], "seed": job["seed"], "reached": reached,
            "episodes": trainer.episodes, "seconds": time.monotonic() - started, "parameters": trainer.parameters,
            "sft_loss": [trainer.sft_losses[0], trainer.sft_losses[-1]],
            "p_reference": p_reference, "success": [s.success_rate for s in history[1:]],
            "parsed": [s.parsed for s in history[1:]], "credit": credit_rows}


def decision_credit(trainer, update: int) -> list[list]:
    """[update, region, toward (0/1), advantage at the decision token, mean |advantage| at the row's
    other response tokens] for each decision of the last batch (advantages as the loss used them)."""
    rows, row = [], 0
    adv = trainer.last_advantages
    for episode in trainer.last_batch:
        decisions = {(s, k): (region, toward) for s, k, region, toward in trainer.decision_tokens(episode)}
        for s, response in enumerate(episode.responses):
            start = len(trainer.prompt_ids[s])
            values = adv[row, start:start + len(response)]
            for (step, k), (region, toward) in decisions.items():
                if step == s and k < len(values):
                    others = np.delete(values, k)
                    rows.append([update, region, int(toward), round(float(values[k]), 5),
                                 round(float(np.abs(others).mean()) if others.size else 0.0, 5)])
            row += 1
    return rows


def measure(tasks, decisions, methods: dict, seeds: int, updates: int, threshold: float, workers: int,
            config: dict, json_path: Path, warm_cache: Path, command: str = "") -> dict:
    """Every (task, seed, method) run, seeds outermost (a stopped run leaves whole seeds), in a pool
    of `workers` processes; the JSON at `json_path` is rewritten after each run, and its finished
    runs are kept when the settings match."""
    settings = {"tasks": [t.id for t in tasks], "seeds": seeds, "updates": updates, "threshold": threshold,
                "methods": list(methods), "config": config,
                "regions": {t.id: [list(d.labels) for d in decisions[t.id]] for t in tasks}}
    data = {**settings, "runs": [], "seconds": 0.0, "workers": workers, "command": command}
    if json_path.exists():
        saved = json.loads(json_path.read_text())
        if all(saved.get(k) == v for k, v in settings.items() if k not in ("methods", "seeds")):
            data["runs"] = [r for r in saved["runs"] if r["method"] in methods and r["seed"] < seeds]
            data["seconds"] = saved.get("seconds", 0.0)
            print(f"resuming: {len(data['runs'])} runs kept from {json_path}", file=sys.stderr)
    done = {run_key(r["task"], r["method"], r["seed"]) for r in data["runs"]}
    jobs = [{"task": task, "decisions": decisions[task.id], "method": label, "estimator": name, "options": options,
             "seed": seed, "threshold": threshold, "config": {**config, "updates": updates},
             "warm_cache": str(warm_cache)}
            for seed in range(seeds) for task in tasks for label, (name, options) in methods.items()]
    jobs = [j for j in jobs if run_key(j["task"].id, j["method"], j["seed"]) not in done]
    started = time.monotonic() - data["seconds"]
    json_path.parent.mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for n, out in enumerate(pool.imap(run_one, jobs), 1):
            print(f"[{n}/{len(jobs)}] {out['task']} {out['method']} seed {out['seed']}: reached 0.9 at "
                  f"{out['reached']} ({out['episodes']} episodes, {out['seconds']:.0f}s)", file=sys.stderr, flush=True)
            data["runs"].append(out)
            data["seconds"] = time.monotonic() - started
            partial = json_path.with_suffix(".part")
            partial.write_text(json.dumps(data))
            partial.replace(json_path)
    return data


def updates_to(run: dict, level: tuple[str, float], budget: int) -> int:
    """The first update at which the run met `level` (see `first_reach`), censored at budget + 1."""
    found = first_reach(run, level)
    return found if found is not None else budget + 1


def ratio_ci(data: dict, method: str, task: str, level: tuple[str, float], draws: int = 2000, seed: int = 0):
    """Mean updates to `level` of `method` over GRPO's on `task` (censored runs count budget + 1),
    and its 95% bootstrap interval over seeds (paired: a seed's methods share its warm start and
    first rollouts). None where no seed has both runs."""
    budget = data["updates"]
    table = {(r["method"], r["seed"]): updates_to(r, level, budget) for r in data["runs"]
             if r["task"] == task and r["method"] in (method, "GRPO")}
    seeds = sorted(s for (m, s) in table if m == method and ("GRPO", s) in table)
    if not seeds:
        return None
    mine = np.array([table[(method, s)] for s in seeds], float)
    grpo = np.array([table[("GRPO", s)] for s in seeds], float)
    picks = np.random.default_rng(seed).integers(0, len(seeds), (draws, len(seeds)))
    ratios = mine[picks].mean(axis=1) / grpo[picks].mean(axis=1)
    return float(mine.mean() / grpo.mean()), float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


def auc(toward: np.ndarray, away: np.ndarray) -> float:
    """P(a decision toward the reference gets a higher advantage than one away from it), ties half."""
    if not toward.size or not away.size:
        return float("nan")
    diff = toward[:, None] - away[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def credit_table(data: dict, update: int | None = 1) -> list[list[str]]:
    """Per method, at the decision tokens of the diagnosed updates (`update`: only that one; the
    first update's rollouts are the same for every method): AUC (pairs within one task, seed, update
    and region), mean advantage toward and away, and |A| at decisions over |A| at the other tokens."""
    rows = []
    for method in data["methods"]:
        wins = pairs = 0.0
        toward_all, away_all, ratio = [], [], []
        for r in data["runs"]:
            if r["method"] != method:
                continue
            credit = np.array(r["credit"], float).reshape(-1, 5)
            if update is not None:
                credit = credit[credit[:, 0] == update]
            for u in np.unique(credit[:, 0]):
                for region in np.unique(credit[:, 1]):
                    part = credit[(credit[:, 0] == u) & (credit[:, 1] == region)]
                    t, a = part[part[:, 2] == 1, 3], part[part[:, 2] == 0, 3]
                    if t.size and a.size:
                        wins += auc(t, a) * t.size * a.size
                        pairs += t.size * a.size
            toward_all += credit[credit[:, 2] == 1, 3].tolist()
            away_all += credit[credit[:, 2] == 0, 3].tolist()
            ratio += (np.abs(credit[:, 3]) / np.maximum(credit[:, 4], 1e-9)).tolist()
        rows.append([method, f"{wins / pairs:.3f}" if pairs else "-", f"{np.mean(toward_all):+.3f}" if toward_all else "-",
                     f"{np.mean(away_all):+.3f}" if away_all else "-",
                     f"{np.median(ratio):.2f}" if ratio else "-", str(len(toward_all) + len(away_all))])
    return rows


def first_reach(run: dict, level: tuple[str, float]) -> int | None:
    """The first update after which the run met `level`: ("p", x) P(reference) >= x; ("success", x)
    the batch success rate averaged over the last 3 updates >= x. None: never."""
    kind, value = level
    if kind == "p":
        return next((u for u, p in enumerate(run["p_reference"]) if u and p >= value), None)
    rates = run["success"]
    return next((u for u in range(3, len(rates) + 1) if np.mean(rates[u - 3:u]) >= value), None)


# the table counts updates to: the goal (P(reference) >= 0.9), the goal in batch success (the model may
# resolve with texts that are not exactly the reference's), and a halfway mark
LEVELS = (("p", 0.9), ("success", 0.9), ("p", 0.5))


def summary_rows(data: dict) -> list[list[str]]:
    """Per task and method: per level, the runs reaching it, the mean updates to it (censored at
    budget + 1) and that mean over GRPO's with its bootstrap CI; P(reference) and the batch success
    rate at the end (mean over seeds)."""
    budget, rows = data["updates"], []
    for task in data["tasks"]:
        for method in data["methods"]:
            runs = [r for r in data["runs"] if r["task"] == task and r["method"] == method]
            if not runs:
                continue
            row = [task if task == HARD_TASK else "built: " + task.split("-init-")[-1], method]
            grpo = [r for r in data["runs"] if r["task"] == task and r["method"] == "GRPO"]
            for level in LEVELS:
                reached = any(first_reach(r, level) is not None for r in runs + grpo)
                found = ratio_ci(data, method, task, level) if method != "GRPO" and reached else None
                row += [f"{sum(first_reach(r, level) is not None for r in runs)}/{len(runs)}",
                        f"{np.mean([updates_to(r, level, budget) for r in runs]):.1f}",
                        ("1.00" if reached else "-") if method == "GRPO" else "-" if found is None else
                        f"{found[0]:.2f} [{found[1]:.2f}-{found[2]:.2f}]"]
            row.append(f"{np.mean([r['p_reference'][-1] for r in runs]):.2f}, "
                       f"{np.mean([np.mean(r['success'][-5:]) for r in runs]):.2f}")
            rows.append(row)
    return rows


def complete_seeds(data: dict) -> dict:
    """`data` with only the runs of seeds that have every (task, method) run: a stopped measurement
    reports whole seeds."""
    want = {(t, m) for t in data["tasks"] for m in data["methods"]}
    have: dict[int, set] = {}
    for r in data["runs"]:
        have.setdefault(r["seed"], set()).add((r["task"], r["method"]))
    keep = {s for s, pairs in have.items() if pairs >= want}
    return {**data, "runs": [r for r in data["runs"] if r["seed"] in keep]}


SUMMARY_HEADER = ["task", "method", "P(ref) >= 0.9: runs", "updates", "/ GRPO (95% CI)", "success >= 0.9: runs",
                  "updates", "/ GRPO (95% CI)", "P(ref) >= 0.5: runs", "updates", "/ GRPO (95% CI)",
                  "at the end: P(ref), success"]
CREDIT_HEADER = ["method", "AUC at decisions", "mean A toward", "mean A away", "abs(A) at decisions / elsewhere (median)",
                 "decisions"]


def plot(data: dict, path: Path) -> None:
    """P(reference) per update, mean over seeds (band: min-max), one panel per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = data["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for method in data["methods"]:
            curves = [r["p_reference"] for r in data["runs"] if r["task"] == task and r["method"] == method]
            if not curves:
                continue
            width = data["updates"] + 1
            grid = np.array([c + [c[-1]] * (width - len(c)) for c in curves])  # a finished run stays where it got
            x = np.arange(width)
            line = ax.plot(x, grid.mean(0), label=method, lw=1.5)[0]
            ax.fill_between(x, grid.min(0), grid.max(0), color=line.get_color(), alpha=0.12)
        ax.axhline(data["threshold"], color="grey", ls=":", lw=1)
        ax.set(title=task if len(task) < 40 else task[:18] + "..." + task[-18:], xlabel="update", ylim=(0, 1.02))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("P(sample the reference response)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def report(data: dict, prediction: str, analysis: str, command: str) -> str:
    runs = data["runs"]
    config = ", ".join(f"{k} {v}" for k, v in sorted(data["config"].items()))
    params = runs[0]["parameters"] if runs else 0
    parsed = np.mean([p for r in runs for p in r["parsed"]]) if runs else float("nan")
    shapes = "; ".join(f"{t}: {'/'.join(str(len(x)) for x in data['regions'][t])}" for t in data["tasks"])
    seeds = sorted({r["seed"] for r in runs})
    return (f"`{command}`. Measured {time.strftime('%Y-%m-%d')}: {len(runs)} runs (seeds {', '.join(map(str, seeds))}), "
            f"{data['seconds'] / 60:.0f} min with {data['workers']} workers. Tiny LM of {params / 1e6:.2f} M parameters; "
            f"{config}; at most {data['updates']} updates. Candidates per region: {shapes}; "
            f"{parsed:.0%} of the sampled responses were exactly candidate texts. Updates censored at "
            f"{data['updates'] + 1}; / GRPO: mean updates over GRPO's, paired by seed, 95% bootstrap CI over seeds."
            f"\n\n{prediction.strip()}\n\n" + markdown_table(SUMMARY_HEADER, summary_rows(data))
            + f"\n\nCredit at the decision tokens, updates 1-{DIAGNOSED_UPDATES} of every run (AUC: the chance that a "
            "decision toward the reference gets a higher advantage than one away from it, within a region and batch):"
            "\n\n" + markdown_table(CREDIT_HEADER, credit_table(data, None))
            + "\n\n![tiny LM learning curves](img/tiny_lm_learning.png)\n\n" + analysis.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-dir", help="a folder `code-gym tasks build` wrote: its multi-region tasks")
    parser.add_argument("--tasks", nargs="+", help="with --task-dir: these task ids (default: the first --max-tasks)")
    parser.add_argument("--max-tasks", type=int, default=2)
    parser.add_argument("--hard-task", default=HARD_TASK, help=f"a bundled task ('' for none; default {HARD_TASK})")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=60, help="rollout budget: updates per run")
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=SETTINGS["group_size"])
    parser.add_argument("--regions-per-step", type=int, default=SETTINGS["regions_per_step"])
    parser.add_argument("--device", default="cpu", help="torch device: cpu, or cuda on a GPU machine")
    for name, kind in (("n-embd", int), ("n-layer", int), ("n-head", int), ("sft-steps", int), ("lr", float),
                       ("kl", float), ("epochs", int), ("forking", float), ("grad-clip", float)):
        parser.add_argument(f"--{name}", type=kind, help="TinyLMConfig's field (default: its default)")
    parser.add_argument("--optimizer", choices=["adam", "sgd"])
    parser.add_argument("--reward", help="the built tasks' reward spec (e.g. binary: resolved or not; default: the "
                        "env's); the bundled task keeps the env's default")
    parser.add_argument("--loss", choices=["token-mean", "token-sum", "sequence-mean"])
    parser.add_argument("--out", default=str(ROOT / "out" / "benchmarks"))
    parser.add_argument("--from-json", help="re-render the docs from saved results")
    parser.add_argument("--prediction", help="a file with the prediction written before the run")
    parser.add_argument("--analysis", help="a file with the analysis written after it")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the hard task only, 2 methods, 1 seed, 2 updates, "
                        "G = 4, a 10-step warm start; never writes the docs")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.quick:
        args.task_dir, args.seeds, args.updates, args.group_size, args.sft_steps = None, 1, 2, 4, 150
        args.methods, args.no_docs = ["GRPO", "DiDPO (split, cover=call)"], True
    json_path = out / ("tiny_lm_learning_quick.json" if args.quick else "tiny_lm_learning.json")
    command = "python benchmarks/tiny_lm_learning.py " + " ".join(
        f"'{a}'" if " " in a else a for a in (argv if argv is not None else sys.argv[1:]))
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
    else:
        fields = {"n_embd": args.n_embd, "n_layer": args.n_layer, "n_head": args.n_head, "sft_steps": args.sft_steps,
                  "lr": args.lr, "kl": args.kl, "epochs": args.epochs, "forking": args.forking,
                  "grad_clip": args.grad_clip, "optimizer": args.optimizer, "loss": args.loss, "reward": args.reward}
        config = {"group_size": args.group_size, "regions_per_step": args.regions_per_step, "device": args.device,
                  **{k: v for k, v in fields.items() if v is not None}}
        tasks, decisions = load_tasks(args.task_dir, args.tasks, args.max_tasks, args.hard_task or None)
        data = measure(tasks, decisions, {m: METHODS[m] for m in args.methods}, args.seeds, args.updates,
                       args.threshold, args.workers, config, json_path, out / "tiny_lm_warm", command)
    data = complete_seeds(data)
    print(markdown_table(SUMMARY_HEADER, summary_rows(data)))
    print()
    print(markdown_table(CREDIT_HEADER, credit_table(data, None)))
    plot(data, json_path.with_suffix(".png"))
    if not args.no_docs:
        plot(data, ROOT / "docs" / "img" / "tiny_lm_learning.png")
        prediction = Path(args.prediction).read_text() if args.prediction else ""
        analysis = Path(args.analysis).read_text() if args.analysis else ""
        write_section(SECTION, report(data, prediction, analysis, data.get("command", command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
