"""Sandbox backends side by side: reset, edit step and grading latency for local (bubblewrap) and
Docker (a fresh container per episode, as most gyms do, vs the warm pool), each with the cold and
the warm test runner; then episodes per minute with 8 concurrent envs. Writes the "sandboxes"
section of docs/benchmarks.md.

    python benchmarks/sandbox_bench.py [--runs 10] [--episodes 48]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

from code_gym.env import CodeRepoEnv  # noqa: E402
from code_gym.replay import hermes, patch_to_calls  # noqa: E402
from code_gym.sandbox import backend  # noqa: E402
from code_gym.sandbox.docker import docker_unavailable  # noqa: E402
from code_gym.table import format_table, markdown_table  # noqa: E402
from code_gym.task import bundled_tasks  # noqa: E402

PREDICTION = ("Prediction (written before measuring): reset ~3 ms local, ~60 ms from the Docker pool (a clean-up "
              "`docker exec` and two mounts), ~500 ms with a fresh container; an edit step ~5 ms everywhere (editor "
              "tools run on the host folder); grading ~650 ms local cold, ~200 ms local warm, ~1 s Docker fresh "
              "(start + cold pytest), ~450 ms Docker pool cold, ~120 ms Docker pool warm; with 8 envs on 2 cores "
              "~100 episodes/min local and ~120 from the Docker pool.")
CONFIGS = [("local (bwrap)", "bwrap"), ("docker, fresh container", "docker-fresh"), ("docker, warm pool", "docker")]


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f}"


def tests_own_time(output: str) -> float:
    """pytest's own "N passed in X s" (the time inside the session: collection and tests)."""
    found = re.findall(r" in ([0-9.]+)s", output)
    return float(found[-1]) if found else 0.0


def episode(env: CodeRepoEnv, task) -> tuple[float, float, float, float]:
    t0 = time.perf_counter()
    env.reset(options={"task": task})
    t1 = time.perf_counter()
    env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
    t2 = time.perf_counter()
    _, _, _, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
    assert info["resolved"], info.get("tests")
    from code_gym.grading import grade

    own = tests_own_time(grade(task, env.ws.changed_files(), isolation=env.isolation).output)
    return t1 - t0, t2 - t1, info["grading_time"], own


def use_runner(isolation: str, warm: bool) -> None:
    os.environ["CODE_GYM_WARM_RUNNER"] = "1" if warm else "0"  # read by each new local sandbox
    shared = backend(isolation)
    if shared is not None:
        shared.warm = warm  # the process-wide Docker backends read it once


def latency(isolation: str, warm: bool, tasks, runs: int) -> list[str]:
    use_runner(isolation, warm)
    env = CodeRepoEnv(isolation=isolation)
    episode(env, tasks[0])  # containers, runners and caches up
    resets, edits, grades, own = [], [], [], []
    for k in range(runs):
        r, e, g, o = episode(env, tasks[k % len(tasks)])
        resets.append(r)
        edits.append(e)
        grades.append(g)
        own.append(o)
    env.close()
    overhead = [g - o for g, o in zip(grades, own)]
    return [ms(resets), ms(edits), ms(grades), ms(own), ms(overhead)]


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=48)
    args = parser.parse_args()
    tasks = bundled_tasks()
    warmup = CodeRepoEnv()  # per-process caches (prompt, base git layer) are built before threads start
    for task in tasks:
        warmup.reset(options={"task": task})
    warmup.close()
    configs = [c for c in CONFIGS if c[1] == "bwrap" or docker_unavailable() is None]
    rows = []
    for label, isolation in configs:
        for warm in (False, True):
            rows.append([label, "warm" if warm else "cold"] + latency(isolation, warm, tasks, args.runs))
            print(rows[-1], flush=True)
    rates = [[label, f"{throughput(isolation, tasks, args.episodes):.0f}"] for label, isolation in configs
             if isolation != "docker-fresh"] + [["docker, fresh container",
                                                 f"{throughput('docker-fresh', tasks, args.episodes):.0f}"]]
    headers = ["backend", "runner", "reset ms", "edit step ms", "grading ms", "tests' own ms", "grading overhead ms"]
    print(format_table(headers, rows))
    print(format_table(["backend (warm runner)", "episodes/min, 8 envs"], rates))
    body = (f"`python benchmarks/sandbox_bench.py --runs {args.runs} --episodes {args.episodes}`: medians over "
            f"{args.runs} episodes cycling through the bundled tasks (reset, one reference edit, submit). "
            "\"tests' own\" is pytest's reported session time; overhead = grading - that.\n\n"
            f"{PREDICTION}\n\n{markdown_table(headers, rows)}\n\n"
            f"Episodes per minute (reset + edit + graded submit), 8 envs in threads, {args.episodes} episodes:\n\n"
            f"{markdown_table(['backend (warm runner)', 'episodes/min'], rates)}\n")
    write_section("sandboxes", body)


if __name__ == "__main__":
    main()
