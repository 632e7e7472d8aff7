"""Soak test: many episodes on concurrent envs with timeouts, killed commands and crashed episodes,
then a count of what was left behind (processes, containers, mounts, cgroups, temp folders).

    python benchmarks/soak.py [--episodes 500] [--envs 8] [--isolation bwrap|docker|docker-fresh]

Every episode picks a bundled task with a random command timeout (0.5-3 s) and plays a random
mix of: the reference edit, a command that outlives its timeout, a command that kills itself, a
`setsid` child left running, an output flood, run_tests; then it submits (graded) or is
abandoned. One episode in 20 runs in a child process that is SIGKILLed mid-episode (a crash).
Nothing here calls the reaper: what a crashed process left must be gone once the next process has
made its first sandbox (code_gym.sandbox.leftovers.reap_on_start), so the count is taken after one
fresh process has made one sandbox. Exits 1 if anything leaked.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from code_gym.env.environment import CodeRepoEnv  # noqa: E402
from code_gym.actions.replay import hermes, patch_to_calls  # noqa: E402
from code_gym.sandbox.reaper import census  # noqa: E402
from code_gym.tasks.task import Timeouts, bundled_tasks  # noqa: E402

NASTY = [
    "sleep 30",                                      # outlives its timeout
    "kill -9 $$",                                    # killed command
    "setsid sleep 60 > /dev/null 2>&1 & echo left",  # a child that tries to outlive the command
    "yes soak | head -c 5000000",                    # output flood
    "python3 -c 'import os; [os.fork() for _ in range(5)]; import time; time.sleep(30)'",
]


def play(env: CodeRepoEnv, rng: random.Random, tasks) -> str:
    task = dataclasses.replace(rng.choice(tasks), timeouts=Timeouts(command=rng.uniform(0.5, 3.0), tests=60))
    env.reset(seed=rng.randrange(1 << 30), options={"task": task})
    moves = [hermes(patch_to_calls(task.reference_patch, task.repo))]
    moves += [hermes([{"name": "bash", "arguments": {"command": c}}]) for c in rng.sample(NASTY, rng.randint(1, 3))]
    moves.append(hermes([{"name": "run_tests", "arguments": {}}]))
    rng.shuffle(moves)
    for move in moves:
        _, _, terminated, truncated, _ = env.step(move)
        if terminated or truncated:
            return "ended"
    if rng.random() < 0.2:
        return "abandoned"  # the next reset releases it
    _, reward, _, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
    return "resolved" if info.get("resolved") else "graded"


CRASH = """
import sys, random
sys.path.insert(0, {root!r})
from benchmarks.soak import play
from code_gym.env.environment import CodeRepoEnv
from code_gym.tasks.task import bundled_tasks
env = CodeRepoEnv(isolation={isolation!r})
print("started", flush=True)
while True:
    play(env, random.Random(), bundled_tasks())
"""


def crash_episode(isolation: str, rng: random.Random) -> str:
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen([sys.executable, "-c", CRASH.format(root=root, isolation=isolation)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proc.stdout.readline()
    time.sleep(rng.uniform(0.2, 2.0))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return "crashed"


NEXT = """
import sys, tempfile
sys.path.insert(0, {root!r})
from code_gym.sandbox import make_sandbox
with tempfile.TemporaryDirectory() as folder:
    make_sandbox({isolation!r}, folder).close()
"""


def next_process(isolation: str) -> None:
    """A fresh process that makes one sandbox, as the next user of the machine would."""
    root = str(Path(__file__).resolve().parent.parent)
    subprocess.run([sys.executable, "-c", NEXT.format(root=root, isolation=isolation)], check=True)


def worker(isolation: str, episodes: list[int], tasks) -> dict[str, int]:
    env = CodeRepoEnv(isolation=isolation, max_steps=10)
    outcomes: dict[str, int] = {}
    try:
        for seed in episodes:
            rng = random.Random(seed)
            outcome = crash_episode(isolation, rng) if seed % 20 == 7 else play(env, rng, tasks)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        env.close()
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--isolation", default="bwrap")
    args = parser.parse_args()
    tasks = bundled_tasks()
    warmup = CodeRepoEnv(isolation=args.isolation)  # per-process caches are built before the threads start
    for task in tasks:
        warmup.reset(options={"task": task})
    warmup.close()
    before = census()
    started = time.monotonic()
    chunks = [list(range(i, args.episodes, args.envs)) for i in range(args.envs)]
    with ThreadPoolExecutor(args.envs) as pool:
        results = list(pool.map(lambda c: worker(args.isolation, c, tasks), chunks))
    elapsed = time.monotonic() - started
    outcomes: dict[str, int] = {}
    for r in results:
        for k, v in r.items():
            outcomes[k] = outcomes.get(k, 0) + v
    from code_gym.sandbox.runner import LOCAL_RUNNERS
    from code_gym.sandbox import _SHARED

    LOCAL_RUNNERS.close()  # warm runners and pools are meant to stay up while the process lives
    for backend in _SHARED.values():
        backend.close()
    next_process(args.isolation)
    time.sleep(0.5)
    after = census()
    leaked = {k: sorted(after[k] - before[k]) for k in after}
    print(f"{args.episodes} episodes on {args.envs} envs ({args.isolation}) in {elapsed:.0f}s "
          f"({args.episodes / elapsed * 60:.0f} episodes/min); outcomes {outcomes}")
    print("leaked: " + ", ".join(f"{k} {len(v)}" for k, v in leaked.items()))
    for kind, items in leaked.items():
        for item in items[:5]:
            print(f"  {kind}: {item}")
    return 1 if any(leaked.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
