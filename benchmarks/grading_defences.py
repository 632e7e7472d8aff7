"""Grading time with and without the run's tamper defences (canaries, the results stream), on every
bundled task's reference solution: median of N grades each, warm runner on, audit on in both.

Prediction (written before measuring): the stream adds one pipe and one JSON line per test phase,
well under 1%; the canaries add four trivial tests to a run that costs about 1 s: a few percent.

    python benchmarks/grading_defences.py [--repeats 5]

Writes the section "grading: tamper defences" of docs/benchmarks.md. Probes (issue 14 item 2)
are a column to add once they are merged.
"""
from __future__ import annotations

import argparse
import statistics
import time

from code_gym.grading import grade
from code_gym.reference import reference_changes
from code_gym.task import bundled_tasks

from _report import write_section

CONFIGS = {"none": {"canaries": False, "records": False}, "canaries": {"records": False},
           "stream": {"canaries": False}, "canaries + stream": {}}


def median_seconds(task, changes, options: dict, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = grade(task, changes, **options)
        times.append(time.perf_counter() - started)
        assert result.resolved, (task.id, options, result.summary())
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tasks = bundled_tasks()
    rows = []
    for task in tasks:
        changes = reference_changes(task)
        grade(task, changes)  # warm runners and reference ids ready before timing
        rows.append((task.id, {name: median_seconds(task, changes, opts, args.repeats) for name, opts in CONFIGS.items()}))
        print(task.id, {k: round(v, 3) for k, v in rows[-1][1].items()}, flush=True)
    header = "| task | " + " | ".join(f"{c} (s)" for c in CONFIGS) + " | canaries + stream vs none |"
    lines = [header, "|---" * (len(CONFIGS) + 2) + "|"]
    for task_id, t in rows:
        lines.append(f"| {task_id} | " + " | ".join(f"{t[c]:.3f}" for c in CONFIGS)
                     + f" | {100 * (t['canaries + stream'] / t['none'] - 1):+.1f}% |")
    totals = {c: sum(t[c] for _, t in rows) for c in CONFIGS}
    lines.append("| **all** | " + " | ".join(f"{totals[c]:.2f}" for c in CONFIGS)
                 + f" | {100 * (totals['canaries + stream'] / totals['none'] - 1):+.1f}% |")
    table = "\n".join(lines)
    change = {c: 100 * (totals[c] / totals["none"] - 1) for c in CONFIGS if c != "none"}
    result = ("Result: over all tasks " + ", ".join(f"{c} {v:+.1f}%" for c, v in change.items())
              + " against none; single tasks vary by tens of percent between runs on this shared machine, "
                "so read the total.")
    print(table)
    print(result)
    write_section("grading: tamper defences", f"""`benchmarks/grading_defences.py`: `grade()` of each bundled task's reference
solution (audit on, warm runner), median of {args.repeats}, with the run's tamper defences off, one at
a time, and both (issue 14: canaries, the results stream; probes to be added). Prediction: the
stream well under 1%, the canaries a few percent; target: the defences add at most 20%.

{table}

{result}
""")


if __name__ == "__main__":
    main()
