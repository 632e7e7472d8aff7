"""Where the grading defences' milliseconds go: the CPU time of the graded test process itself, per
defence, on every bundled task's reference solution (median of N runs, variants interleaved).

The test runs are made the way the warm runner makes them (code_gym/languages/python/warm.py): a clean
worker process imports pytest and its built-in plugins once and forks one child per run, which
runs `pytest.main` with the grader's arguments and the results-stream plugin; the child times
its own CPU (time.process_time from fork to exit, so the machine's other load does not count).
The grading copies are made with the grader's own functions (apply_changes, lay_hidden_tests,
canary.make, probes.lay). What runs is each bundled task's reference solution, shipped with the
project. grading_bench.py measures the end-to-end wall time of `grade()`; this script says which
part of the test process each defence costs:

- (a) none: the task's tests only.
- (b0) canaries, with the per-process caches a forked child started with before this change
  (inspect's module-file map and tokenize's patterns empty in the runner);
- (b) canaries with the runner's WARM_CACHES filled, as the runner does now;
- (c0) canaries + probes, the probe file as it was (replay and harvest halves, ~460 lines);
- (c) canaries + probes, the replay half alone (code_gym/languages/python/probe_replay.py), as laid now.

    python benchmarks/grading_defences.py [--runs 7] [--tasks id,id]

Writes the section "Grading cost: where the time goes" of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

from code_gym.languages.python import canary  # noqa: E402
from code_gym.languages.python import probes  # noqa: E402
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests  # noqa: E402
from code_gym.grading.reference import reference_changes  # noqa: E402
from code_gym.languages.python.reporter import PLUGIN_SOURCE  # noqa: E402
from code_gym.languages.python.warm import WARM_CACHES  # noqa: E402
from code_gym.util.table import format_table, markdown_table  # noqa: E402
from code_gym.tasks.task import bundled_tasks  # noqa: E402
from code_gym.workspace.working_copy import Workspace  # noqa: E402

TITLE = "Grading cost: where the time goes"
HISTORY = """Where each defence's milliseconds go (per grade, CPU ms; from cProfile of single grades, scaled to
the totals above): the canaries in pytest's report of the two must-fail canaries (a forked run's
first traceback maps every loaded module's file and compiles tokenize's patterns: ~15-20 ms before
the runner filled both caches before it forks, ~5-8 now), rewriting and compiling the canary file
(~5), collecting it (~8-10); the probes in compiling the probe file (~4-7 for the 230-line replay
half, ~8-14 for the whole file) and the replay (~5); the host side (`make`/`check`, `plant`/
`collect`) under 3; the results stream within the noise. History (per-task rows and the
prediction in git): filling the caches saved less than predicted (25 -> 24 ms then); the fix
probes of issue 31 cost ~1 ms a grade (1336 -> 1321 ms for (c) on the same machine: within the
noise); every run pays pytest's `unraisableexception` cleanup (five `gc.collect()`, 30-40 ms):
not a defence, left as it is."""
VARIANTS = ("a", "b0", "b", "c0", "c")
LABELS = {"a": "(a) none", "b0": "(b0) canaries, caches as before", "b": "(b) canaries",
          "c0": "(c0) + probes, whole probe file", "c": "(c) + probes, replay half"}

# The worker: a clean interpreter with pytest preloaded, like the runner's server; one fork per job.
WORKER = PLUGIN_SOURCE + WARM_CACHES + r'''
import importlib, json, os, sys, time
import pytest, _pytest.config
for _name in _pytest.config.default_plugins:
    try:
        importlib.import_module("_pytest." + _name)
    except ImportError:
        pass
JOBS = [json.loads(line) for line in sys.stdin]
cold = os.fork()  # a second worker whose caches stay as the runner's were before WARM_CACHES
if cold:
    warm_caches()
for job in JOBS:
    if bool(job["warm"]) != bool(cold):
        continue
    r, w = os.pipe()
    rr, rw = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(rr)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.chdir(job["cwd"])
        sys.path[0] = job["cwd"]
        started = time.process_time()
        code = pytest.main(job["argv"], plugins=[RecordStream(rw, "n")])
        os.write(w, json.dumps([time.process_time() - started, int(code)]).encode())
        os._exit(0)
    os.close(w)
    os.close(rw)
    while os.read(rr, 65536):
        pass
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.waitpid(pid, 0)
    print(json.dumps([job["key"], *json.loads(out)]), flush=True)
if not cold:
    os._exit(0)
os.waitpid(cold, 0)
'''


def prepare(task, changes, variant: str, copies: list, full_probe_source: str) -> dict:
    """A grading copy for one run of `variant` (kept in `copies`), with the grader's arguments."""
    copy = Workspace(task.repo, strategy="copy")
    copies.append(copy)
    root = copy.root
    apply_changes(task, root, changes)
    lay_hidden_tests(task, root)
    selected = list(task.visible_tests + task.hidden_tests)
    results = Path(tempfile.mkdtemp(prefix="code-gym-defences-"))
    copies.append(results)
    extra = []
    if variant != "a":
        planted = canary.make(task.hidden_tests + task.visible_tests, lambda p: (root / p).exists())
        (root / planted.path).write_text(planted.source)
        selected.insert(secrets.randbelow(len(selected) + 1), planted.path)
        extra.append("--maxfail=0")
    if variant in ("c0", "c"):
        found = probes.probe_set(task)
        spec = {"probes": [{"steps": probes.replayed(p.steps)} for p in found.probes]}
        path = probes.lay(root, spec, results, str(results), task.hidden_tests + task.visible_tests)
        if variant == "c0":
            text = (root / path).read_text()
            (root / path).write_text(full_probe_source + text[text.index("\nSPEC_PATH, OUT_PATH"):])
        selected.insert(0, path)
    argv = ["-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit1", "--continue-on-collection-errors", *extra,
            f"--junitxml={results}/junit.xml", *selected]
    return {"cwd": str(root), "argv": argv, "warm": variant != "b0"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tasks", default="")
    args = parser.parse_args()
    wanted = set(filter(None, args.tasks.split(",")))
    child = Path(probes.probe_child.__file__).read_text()
    harvest_half = child[child.index("# ------"):child.index('if __name__ == "__main__":')]
    full_probe_source = probes.REPLAY_SOURCE + "\n" + harvest_half  # the probe file as a graded run carried it
    rows, totals = [], {v: 0.0 for v in VARIANTS}
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": ""}
    for task in bundled_tasks():
        if wanted and task.id not in wanted:
            continue
        changes = reference_changes(task)
        copies: list = []
        try:
            jobs = []
            for run in range(args.runs + 1):  # the first round warms the page cache: not counted
                for variant in VARIANTS:
                    jobs.append({"key": [run, variant], **prepare(task, changes, variant, copies, full_probe_source)})
            done = subprocess.run([sys.executable, "-c", WORKER], input="".join(json.dumps(j) + "\n" for j in jobs),
                                  capture_output=True, text=True, env=env, check=True)
        finally:
            for made in copies:
                made.close() if isinstance(made, Workspace) else shutil.rmtree(made, ignore_errors=True)
        samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for line in done.stdout.splitlines():
            (run, variant), seconds, code = json.loads(line)
            assert code in (0, 1), (task.id, variant, code)
            if run:
                samples[variant].append(seconds)
        medians = {v: statistics.median(s) for v, s in samples.items()}
        for v in VARIANTS:
            totals[v] += medians[v]
        rows.append([task.id, *(f"{medians[v] * 1000:.0f}" for v in VARIANTS)])
        print(rows[-1], file=sys.stderr, flush=True)
    rows.append(["all tasks (sum of medians)", *(f"{totals[v] * 1000:.0f}" for v in VARIANTS)])
    base = totals["a"]
    rows.append(["vs (a)", "", *(f"{(totals[v] / base - 1) * 100:+.1f}%" for v in VARIANTS[1:])])
    header = ["task", *(f"{LABELS[v]} (CPU ms)" for v in VARIANTS)]
    print(format_table(header, rows))
    cost = {v: (totals[v] - base) * 1000 / max(len(rows) - 2, 1) for v in VARIANTS}
    result = (f"Result: per grade, the canaries cost {cost['b0']:.0f} ms of test-process CPU with the caches as "
              f"before and {cost['b']:.0f} ms with them filled; the probes then {cost['c0'] - cost['b']:.0f} ms with "
              f"the whole probe file and {cost['c'] - cost['b']:.0f} ms with the replay half (means over tasks).")
    print(result)
    body = (f"`python benchmarks/grading_defences.py --runs {args.runs}`: CPU time of the graded test process "
            f"(pytest forked from a preloaded worker as the warm runner does, results stream on), median of "
            f"{args.runs} runs per variant, interleaved, the {len(rows) - 2} bundled tasks. Measured "
            f"{datetime.date.today()} (the per-task rows are printed by the script).\n\n"
            f"{markdown_table(header, rows[-2:])}\n\n{result}\n\n{HISTORY}\n")
    write_section(TITLE, body)


if __name__ == "__main__":
    main()
