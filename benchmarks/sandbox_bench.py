"""Sandbox backends side by side: reset, command, edit step and grading latency for local
(bubblewrap) and Docker (a fresh container per episode, as most gyms do, vs the warm pool), each
with the cold and the warm test runner; then episodes per minute with 8 concurrent envs. Writes the
"sandboxes" section of docs/benchmarks.md.

    python benchmarks/sandbox_bench.py [--runs 10] [--episodes 48] [--before DIR]

`--before DIR` measures the code-gym source tree in DIR too (e.g. `git archive COMMIT | tar -x -C DIR`),
each configuration of both in turn in one run (the machine is shared: compare within a run). Every
measurement runs in a process of its own with PYTHONPATH set to the tree it measures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

from code_gym.env.environment import CodeRepoEnv  # noqa: E402
from code_gym.actions.replay import hermes, patch_to_calls  # noqa: E402
from code_gym.sandbox import backend  # noqa: E402
from code_gym.sandbox.docker import docker_unavailable  # noqa: E402
from code_gym.util.table import format_table, markdown_table  # noqa: E402
from code_gym.tasks.task import bundled_tasks  # noqa: E402

PREDICTION = ("Prediction (written before measuring): reset ~3 ms local, ~60 ms from the Docker pool (a clean-up "
              "`docker exec` and two mounts), ~500 ms with a fresh container; an edit step ~5 ms everywhere (editor "
              "tools run on the host folder); grading ~650 ms local cold, ~200 ms local warm, ~1 s Docker fresh "
              "(start + cold pytest), ~450 ms Docker pool cold, ~120 ms Docker pool warm; with 8 envs on 2 cores "
              "~100 episodes/min local and ~120 from the Docker pool. Issue 13 (written before measuring it): "
              "the user namespace and dropped capabilities add 1-3 ms to a bubblewrap command; the quota tmpfs adds "
              "under 1 ms to a reset; emptying /tmp after each Docker command adds ~5 ms to it; grading unchanged "
              "within noise.")
BEFORE_COMMIT = "018d97a"
CONFIGS = [("local (bwrap)", "bwrap"), ("docker, fresh container", "docker-fresh"), ("docker, warm pool", "docker")]


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f}"


def tests_own_time(output: str) -> float:
    """pytest's own "N passed in X s" (the time inside the session: collection and tests)."""
    found = re.findall(r" in ([0-9.]+)s", output)
    return float(found[-1]) if found else 0.0


def episode(env: CodeRepoEnv, task) -> tuple[float, float, float, float, float]:
    t0 = time.perf_counter()
    env.reset(options={"task": task})
    t1 = time.perf_counter()
    commands = []
    for _ in range(3):
        c0 = time.perf_counter()
        env.step(hermes([{"name": "bash", "arguments": {"command": "true"}}]))
        commands.append(time.perf_counter() - c0)
    t2 = time.perf_counter()
    env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
    t3 = time.perf_counter()
    _, _, _, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
    assert info["resolved"], info.get("tests")
    from code_gym.grading.grade import grade

    own = tests_own_time(grade(task, env.ws.changed_files(), isolation=env.isolation).output)
    return t1 - t0, statistics.median(commands), t3 - t2, info["grading_time"], own


def use_runner(isolation: str, warm: bool) -> None:
    os.environ["CODE_GYM_WARM_RUNNER"] = "1" if warm else "0"  # read by each new local sandbox
    shared = backend(isolation)
    if shared is not None:
        shared.warm = warm  # the process-wide Docker backends read it once


def latency(isolation: str, warm: bool, tasks, runs: int) -> list[str]:
    use_runner(isolation, warm)
    env = CodeRepoEnv(isolation=isolation)
    episode(env, tasks[0])  # containers, runners and caches up
    resets, commands, edits, grades, own = [], [], [], [], []
    for k in range(runs):
        r, c, e, g, o = episode(env, tasks[k % len(tasks)])
        resets.append(r)
        commands.append(c)
        edits.append(e)
        grades.append(g)
        own.append(o)
    env.close()
    overhead = [g - o for g, o in zip(grades, own)]
    return [ms(resets), ms(commands), ms(edits), ms(grades), ms(own), ms(overhead)]


def throughput(isolation: str, tasks, episodes: int, envs: int = 8) -> float:
    use_runner(isolation, True)

    def work(index: int) -> None:
        env = CodeRepoEnv(isolation=isolation)
        for k in range(index, episodes, envs):
            task = tasks[k % len(tasks)]
            env.reset(options={"task": task})
            env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
            env.step(hermes([{"name": "submit", "arguments": {}}]))
        env.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(envs) as pool:
        list(pool.map(work, range(envs)))
    return episodes / (time.perf_counter() - started) * 60


def privilege_cost(reps: int) -> list[list[str]]:
    """One bubblewrap `true` with the flags before issue 13 (root's capabilities, no user namespace)
    and with today's, interleaved in one process: the cost of the privilege drop alone."""
    import subprocess as sp
    import tempfile

    from code_gym.sandbox import local

    with tempfile.TemporaryDirectory() as folder:
        box = local.LocalSandbox(folder, "bwrap", warm=False)
        now = box._argv("true", {}, box._env())
        before = [local._BWRAP, "--die-with-parent", "--new-session", "--unshare-all"] + now[1 + len(local._BWRAP_PRIVILEGES):]
        times: dict[str, list[float]] = {"root's capabilities (before)": [], "uid 1000, no capabilities (after)": []}
        for _ in range(reps):
            for label, argv in zip(times, (before, now)):
                started = time.perf_counter()
                sp.run(argv, cwd=folder, env=box._env(), check=True)
                times[label].append(time.perf_counter() - started)
    return [[label, ms(t), f"{min(t) * 1000:.0f}"] for label, t in times.items()]


def measure(args) -> None:
    """One measurement in this process (`--measure`): prints its result as JSON."""
    tasks = bundled_tasks()
    warmup = CodeRepoEnv()  # per-process caches (prompt, base git layer) are built before threads start
    for task in tasks:
        warmup.reset(options={"task": task})
    warmup.close()
    kind, isolation, warm = args.measure.split(":")
    if kind == "latency":
        print(json.dumps(latency(isolation, warm == "warm", tasks, args.runs)))
    else:
        print(json.dumps(f"{throughput(isolation, tasks, args.episodes):.0f}"))


def run_in(tree: Path, spec: str, args) -> list | str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--measure", spec, "--runs", str(args.runs),
                          "--episodes", str(args.episodes)], env=env, capture_output=True, text=True)
    if out.returncode != 0:  # a row that cannot be measured says why (e.g. the code before fails there)
        print(f"{spec} on {tree} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
        return ["failed"] * 6 if spec.startswith("latency") else "failed"
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=48)
    parser.add_argument("--before", type=Path, help="a code-gym source tree to measure as 'before'")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args)
    trees = ([("before", args.before.resolve())] if args.before else []) + [("after", Path(__file__).resolve().parent.parent)]
    configs = [c for c in CONFIGS if c[1] == "bwrap" or docker_unavailable() is None]
    rows, rates = [], []
    for label, isolation in configs:
        for warm in ("cold", "warm"):
            for code, tree in trees:
                rows.append([label, warm, code] + run_in(tree, f"latency:{isolation}:{warm}", args))
                print(rows[-1], flush=True)
    for label, isolation in configs:
        for code, tree in trees:
            rates.append([label, code, run_in(tree, f"throughput:{isolation}:warm", args)])
            print(rates[-1], flush=True)
    drop = privilege_cost(50)
    print(format_table(["bubblewrap flags", "median ms", "min ms"], drop))
    headers = ["backend", "runner", "code", "reset ms", "command ms", "edit step ms", "grading ms", "tests' own ms",
               "grading overhead ms"]
    print(format_table(headers, rows))
    print(format_table(["backend (warm runner)", "code", "episodes/min, 8 envs"], rates))
    compared = (f" with `--before` the code before issue 13 (commit {BEFORE_COMMIT}: no user namespace, "
                "root's capabilities, no disk quota)" if args.before else "")
    body = (f"`python benchmarks/sandbox_bench.py --runs {args.runs} --episodes {args.episodes}"
            f"{' --before DIR' if args.before else ''}`{compared}: medians over "
            f"{args.runs} episodes cycling through the bundled tasks (reset, three `true` commands, one reference "
            "edit, submit). \"command\" is one bash tool step running `true`; \"tests' own\" is pytest's reported "
            "session time; overhead = grading - that. Each row ran in a process of its own, before and after "
            "in turn, in one run.\n\n"
            f"{PREDICTION}\n\n{markdown_table(headers, rows)}\n\n"
            f"Episodes per minute (reset + edit + graded submit), 8 envs in threads, {args.episodes} episodes:\n\n"
            f"{markdown_table(['backend (warm runner)', 'code', 'episodes/min'], rates)}\n\n"
            "The privilege drop alone: one bubblewrap `true` with the flags of before and of after, "
            "interleaved, 50 each, in one process:\n\n"
            f"{markdown_table(['bubblewrap flags', 'median ms', 'min ms'], drop)}\n")
    write_section("sandboxes", body)


if __name__ == "__main__":
    main()
