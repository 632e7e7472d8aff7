"""The `code-gym` command."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from code_gym.table import format_table
from code_gym.task import TaskError, bundled_tasks, load_task_dir


def _tasks(paths: list[str] | None):
    if not paths:
        return bundled_tasks()
    out = []
    for p in paths:
        out += bundled_tasks() if p == "bundled" else load_task_dir(Path(p))
    return out


def run_episode(env, calls_text: list[str], task) -> dict:
    """Play fixed responses then submit; returns the table row data."""
    from code_gym.replay import hermes

    started = time.monotonic()
    env.reset(options={"task": task})
    steps, reward, info = 0, 0.0, {}
    for text in calls_text + [hermes([{"name": "submit", "arguments": {}}])]:
        _, reward, terminated, truncated, info = env.step(text)
        steps += 1
        if terminated or truncated:
            break
    return {"steps": steps, "reward": reward, "resolved": info.get("resolved", False),
            "tests": f"{info.get('tests_passed', 0)}/{info.get('tests_total', 0)}",
            "time": time.monotonic() - started}


def cmd_demo(args) -> int:
    from code_gym.env import CodeRepoEnv
    from code_gym.replay import hermes, patch_to_calls

    tasks = _tasks(args.tasks)
    env = CodeRepoEnv(tasks=tasks, isolation=args.isolation)
    rows, failures = [], 0
    try:
        for i, task in enumerate(tasks, 1):
            print(f"[{i}/{len(tasks)}] {task.id}", file=sys.stderr, flush=True)
            reference = [hermes(patch_to_calls(task.reference_patch, task.repo), "Applying the fix.")]
            for label, responses in (("reference", reference), ("empty", [])):
                row = run_episode(env, responses, task)
                bad = (label == "reference" and not row["resolved"]) or (label == "empty" and row["reward"] >= 1.0)
                failures += bad
                rows.append([task.id, label, row["steps"], row["reward"], row["tests"],
                             "yes" if row["resolved"] else "no", f"{row['time']:.2f}s"])
    finally:
        env.close()
    print(format_table(["task", "submission", "steps", "reward", "tests", "resolved", "time"], rows))
    print(f"\n{len(tasks)} tasks; sandbox: {env.isolation}; "
          f"{'all references resolve and empty submissions fail' if not failures else f'{failures} unexpected results'}")
    return 1 if failures else 0


def cmd_tasks_list(args) -> int:
    tasks = _tasks(args.paths)
    rows = [[t.id, t.kind, len(t.visible_tests), len(t.hidden_tests), t.statement.splitlines()[0][:70]] for t in tasks]
    print(format_table(["task", "kind", "visible", "hidden", "statement"], rows))
    return 0


def cmd_tasks_validate(args) -> int:
    from code_gym.validate import validate_task

    tasks = _tasks(args.paths)
    rows, bad = [], 0
    for i, task in enumerate(tasks, 1):
        print(f"[{i}/{len(tasks)}] validating {task.id}", file=sys.stderr, flush=True)
        v = validate_task(task, runs=args.runs, isolation=args.isolation)
        bad += not v.ok
        rows.append([v.task_id, v.kind, v.files, v.hunks, f"{v.untouched_failing}/{v.untouched_total}",
                     f"{sum('exit code 0' in r for r in v.reference_runs)}/{args.runs}",
                     "ok" if v.ok else "; ".join(v.problems)])
    print(format_table(["task", "kind", "files", "hunks", "hidden failing untouched", "reference passes", "verdict"], rows))
    print(f"\n{len(tasks) - bad}/{len(tasks)} tasks pass every gate")
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="code-gym", description="Repository-editing RL environments and DiDPO credit.")
    parser.add_argument("--isolation", default="auto", choices=["auto", "bwrap", "unshare", "none"],
                        help="sandbox for agent commands and tests ('none' runs them unisolated: explicit opt-in)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run every task with its reference solution and with an empty submission")
    demo.add_argument("--tasks", nargs="*", help="task folders (default: the bundled suite)")
    demo.set_defaults(func=cmd_demo)
    tasks = sub.add_parser("tasks", help="list or validate tasks").add_subparsers(dest="tasks_command", required=True)
    lst = tasks.add_parser("list", help="list tasks")
    lst.add_argument("paths", nargs="*", help="task folders (default: the bundled suite)")
    lst.set_defaults(func=cmd_tasks_list)
    val = tasks.add_parser("validate", help="check the gates: reference passes 3x, untouched repo fails a hidden test")
    val.add_argument("paths", nargs="*", help="task folders or folders of tasks ('bundled' or none: the bundled suite)")
    val.add_argument("--runs", type=int, default=3, help="reference runs that must all pass (default 3)")
    val.set_defaults(func=cmd_tasks_validate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TaskError as exc:
        print(f"code-gym: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
