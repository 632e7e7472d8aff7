"""Speed of credit.didpo: side by side with the public DiDPO reference, and its syntax reader.

Two measurements, each printed as a table; together they rewrite the "## credit" section of
docs/benchmarks.md:

- side by side (`--refbench PAPER.json LARGE.json`): the shared harness's `--out` files
  (../shared/refbench/didpo_ref_bench.py with `--ours .`; its README): ours and the reference's two
  modes on the same rollouts, wall ms, medians; the ratios and the per-token Pearson of the advantages.
- syntax (`--syntax PAPER.jsonl LARGE.jsonl`, the harness's `--dump-ours-input` files): didpo's
  CPU time with the Python grammar's reader (`credit.pyspans`) and with tree-sitter alone, in
  alternating calls of one process.

`rollouts` makes synthetic rollouts for credit's tests (tests/credit/credit_testlib.load_bench):
each task has a module of base functions and a pool of "solution" functions
(5-40 lines of valid Python). Every trajectory alternates edit steps and steps that only run the
tests (empty diff). An edit inserts a function or replaces a base function through a JSON
str_replace-editor tool call; the function is taken verbatim from the task's pool (shared edit),
from the pool with a variable renamed or a constant changed (near-duplicate), or written fresh
(unique). Line numbers follow the file as it grows, so equal edits rarely give equal diff texts.
Half of the edit steps carry provenance, the other half are located by text search; every step has
token offsets from a word/space/punctuation tokenizer (roughly the granularity of a BPE tokenizer
on code).

Run: python benchmarks/credit_bench.py [--no-docs] [--refbench PAPER.json LARGE.json]
     [--syntax PAPER.jsonl LARGE.jsonl]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import credit  # noqa: E402
from _report import write_section  # noqa: E402
from credit import syntax  # noqa: E402

NAMES = ["total", "count", "items", "result", "value", "index", "data", "name", "node", "key", "acc",
         "buf", "row", "col", "size", "limit", "offset", "parts", "text", "seen", "queue", "path", "cost"]
CALLS = ["len", "sorted", "max", "min", "sum", "str", "int", "abs", "list", "dict"]
OPS = ["+", "-", "*", "//", "%"]
TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def function(rng: np.random.Generator, n_lines: int, docstring: bool = False) -> list[str]:
    """A syntactically valid Python function of about n_lines lines (with a docstring of four)."""
    args = list(rng.choice(NAMES, size=int(rng.integers(1, 4)), replace=False))
    verb = rng.choice(["get", "build", "parse", "merge", "scan", "fold"])
    lines = [f"def {verb}_{rng.integers(1000)}({', '.join(args)}):"]
    if docstring:
        lines += [f'    """{verb.capitalize()} the {args[0]}.', "", f"    Returns the {args[-1]}.", '    """']
    depth, need_body, names = 1, True, list(args)
    while len(lines) < n_lines - 1:
        pad = "    " * depth
        u = rng.random()
        if need_body or u < 0.55:
            target, src = rng.choice(NAMES), rng.choice(names)
            if rng.random() < 0.5:
                lines.append(f"{pad}{target} = {src} {rng.choice(OPS)} {rng.integers(1, 100)}")
            else:
                lines.append(f"{pad}{target} = {rng.choice(CALLS)}({src})")
            names.append(target)
            need_body = False
        elif u < 0.65 and depth < 3:
            lines.append(f"{pad}for {rng.choice(NAMES)} in {rng.choice(names)}:")
            depth, need_body = depth + 1, True
        elif u < 0.75 and depth < 3:
            lines.append(f"{pad}if {rng.choice(names)} > {rng.integers(0, 10)}:")
            depth, need_body = depth + 1, True
        elif u < 0.82 and depth > 1:
            depth -= 1
        elif u < 0.9:
            lines.append(f"{pad}# {rng.choice(NAMES)} {rng.choice(NAMES)}")
        else:
            lines.append("")
    lines.append(f"{'    ' * depth}return {rng.choice(names)}")
    return lines


def near_duplicate(rng: np.random.Generator, lines: list[str]) -> list[str]:
    """The function with one variable renamed, or one constant changed."""
    used = sorted({w for line in lines[1:] for w in re.findall(r"\b[a-z]+\b", line) if w in NAMES})
    if used and rng.random() < 0.6:
        old = rng.choice(used)
        return [re.sub(rf"\b{old}\b", f"{old}_{rng.integers(10)}", line) for line in lines]
    out = list(lines)
    k = int(rng.integers(1, len(out)))
    out[k] = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), out[k], count=1) if re.search(r"\d", out[k]) else out[k]
    return out


def hunk_diff(path: str, start: int, before: list[str], deleted: list[str], added: list[str],
              after: list[str]) -> str:
    old_len = len(before) + len(deleted) + len(after)
    new_len = len(before) + len(added) + len(after)
    body = ([" " + x for x in before] + ["-" + x for x in deleted] + ["+" + x for x in added]
            + [" " + x for x in after])
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{old_len} +{start},{new_len} @@\n" + "\n".join(body) + "\n")


def edit_step(rng, path, base, pool, cursor, with_provenance, docstrings=False):
    """One edit: insert or replace a function, as a JSON tool call plus the diff it made."""
    u = rng.random()
    if u < 0.4:
        new = pool[int(rng.integers(len(pool)))]
    elif u < 0.7:
        new = near_duplicate(rng, pool[int(rng.integers(len(pool)))])
    else:
        new = function(rng, int(rng.integers(5, 41)), docstrings)
    target = int(rng.integers(len(base)))
    deleted = base[target] if rng.random() < 0.4 else []
    at = max(1, 1 + sum(len(f) for f in base[:target]) + cursor)
    before = ["    x = 1", "", ""]
    after = ["", "", "def keep():"]
    diff = hunk_diff(path, at, before, deleted, new, after)
    args = ({"command": "str_replace", "path": path, "old_str": "\n".join(deleted), "new_str": "\n".join(new)}
            if deleted else {"command": "insert", "path": path, "insert_line": at + 2, "new_str": "\n".join(new)})
    thought = f"The failing test points at {rng.choice(NAMES)}; I will {'rewrite' if deleted else 'add'} a helper.\n"
    action = thought + "<tool_call>" + json.dumps({"name": "str_replace_editor", "arguments": args}) + "</tool_call>"
    provenance = None
    if with_provenance:
        provenance, pos = [], action.index(json.dumps(args["new_str"])[1:-1]) if new else 0
        for k, line in enumerate(new):
            esc = json.dumps(line)[1:-1]
            provenance.append((path, at + len(before) + k, pos, pos + len(esc)))
            pos += len(esc) + 2
    return action, diff, provenance, len(new) - len(deleted)


def rollouts(n_tasks: int, n_traj: int, n_steps: int, seed: int = 0, scale: float = 1.0,
             docstrings: bool = False) -> list[credit.Trajectory]:
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n_tasks):
        path = f"pkg/mod_{q}.py"
        base = [function(rng, int(rng.integers(5, 20)), docstrings) for _ in range(6)]
        pool = [function(rng, max(3, int(rng.integers(5, 41) * scale)), docstrings) for _ in range(6)]
        for j in range(n_traj):
            steps, cursor, good = [], 0, 0
            for t in range(n_steps):
                if t % 2 == 1:
                    action, diff, prov, grown = edit_step(rng, path, base, pool, cursor, rng.random() < 0.5, docstrings)
                    cursor += grown
                    good += "insert" in action
                else:
                    call = {"name": "bash", "arguments": {"command": f"pytest -q tests/test_mod_{q}.py"}}
                    action = "Let me run the tests.\n<tool_call>" + json.dumps(call) + "</tool_call>"
                    diff, prov = "", None
                offsets = np.array([m.span() for m in TOKEN.finditer(action)], np.int64)
                steps.append(credit.Step(action, diff, token_offsets=offsets, provenance=prov,
                                         observation=f"{int(rng.integers(3))} failed, 7 passed"))
            reward = float(rng.random() < 0.2 + 0.6 * good / max(1, n_steps // 2))
            out.append(credit.Trajectory(f"task-{q}", steps, reward))
    return out


def timed(fn, repeats: int) -> tuple[float, list]:
    """Least CPU time (ms) of `repeats` calls, and their results.

    CPU time of this process, not wall time: the machine is shared, and other processes' load
    otherwise shows up as noise of +-50%. The least of a few runs is the least disturbed one.
    """
    times, results = [], []
    for _ in range(repeats):
        t = time.process_time()
        results.append(fn())
        times.append((time.process_time() - t) * 1e3)
    return min(times), results


def syntax_costs(paths: list[str], rounds: int = 3) -> list[dict]:
    """didpo's CPU ms and its split phase (least of `rounds` alternating calls) with Python's
    reader and with tree-sitter alone, on each batch; and whether both give the same tokens."""
    python = syntax.GRAMMARS["python"]
    variants = {"reader": python, "tree-sitter": dataclasses.replace(python, reader=None)}
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            trajs = [json.loads(line) for line in f if line.strip()]
        runs: dict[str, list] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, grammar in variants.items():
                syntax.GRAMMARS["python"] = grammar
                try:
                    runs[name].append(timed(lambda: credit.didpo(trajs), 1))
                finally:
                    syntax.GRAMMARS["python"] = python
        a, b = (r[-1][1][0].tokens for r in runs.values())
        same = all(np.array_equal(x, y) for xs, ys in zip(a, b) for x, y in zip(xs, ys))
        row = {"batch": Path(path).stem, "same": same}
        for name, r in runs.items():
            row[name] = min(ms for ms, _ in r)
            row[f"{name} split"] = min(res[0].stats["cpu_ms"]["split"] for _, res in r)
        out.append(row)
    return out


def syntax_report(rows: list[dict]) -> str:
    out = ["| refbench batch | didpo ms, reader + tree-sitter | its split | didpo ms, tree-sitter alone | its split "
           "| same tokens |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['batch']} | {r['reader']:.0f} | {r['reader split']:.0f} | {r['tree-sitter']:.0f} | "
                   f"{r['tree-sitter split']:.0f} | {'yes' if r['same'] else 'NO'} |")
    return "\n".join(out)


def side_by_side(paths: list[str]) -> str:
    """The harness's --out files as one table: ours against the reference's exact_only and
    lightweight modes (wall ms, medians), the ratios and the advantages' Pearson."""
    out = ["| shape | ours ms (runs) | reference exact_only ms | ratio | reference lightweight ms | ratio | Pearson |",
           "|---|---|---|---|---|---|---|"]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            shapes = json.load(f)["shapes"]
        for name, shape in shapes.items():
            timing, modes, dims = shape["ours"]["timing"], shape["ours"]["per_mode"], shape["dims"]
            runs = ", ".join(f"{ms:.0f}" for ms in timing["runs_ms"])
            cells = [f"{modes[m]['ref_ms']:,.0f} | {modes[m]['ratio']:.0f}x" if m in modes else "not run | -"
                     for m in ("exact_only", "lightweight")]
            pearson = next(iter(modes.values()))["parity"]["pearson"]
            out.append(f"| {name} {dims['tasks']}x{dims['G']}x{dims['T']} | {timing['median_ms']:.0f} ({runs}) | "
                       f"{cells[0]} | {cells[1]} | {pearson:.3f} |")
    return "\n".join(out)


def load_average() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.split("load average:")[-1].strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-docs", action="store_true", help="print only, do not update docs/benchmarks.md")
    ap.add_argument("--refbench", nargs="+", metavar="JSON", default=[],
                    help="the shared harness's --out files (paper, large) of a run with --ours .")
    ap.add_argument("--syntax", nargs="+", metavar="JSONL", default=[],
                    help="the harness's --dump-ours-input files to time the Python reader on")
    args = ap.parse_args()
    before = load_average()
    parts = {"side": side_by_side(args.refbench) if args.refbench else "(not given: --refbench)",
             "syntax": syntax_report(syntax_costs(args.syntax)) if args.syntax else "(not measured: --syntax)"}
    parts["load"] = f"{before} before, {load_average()} after"
    print("\n\n".join(parts.values()))
    if not args.no_docs:
        write_docs(parts, len(os.sched_getaffinity(0)))


def write_docs(parts: dict[str, str], cores: int) -> None:
    """Replace (or append) the "## credit" section of docs/benchmarks.md."""
    write_section("credit", "\n\n".join([
        f"`benchmarks/credit_bench.py`, {time.strftime('%Y-%m-%d')}, the project's {cores}-core machine shared with "
        f"other jobs (load average {parts['load']} the script's own runs). credit is numpy and Python "
        "alone since issue 30 removed its C extensions (outputs equal to the bit).",
        SIDE_BY_SIDE, parts["side"], SIDE_BY_SIDE_NOTE,
        "Syntax units (`credit/syntax.py`), didpo CPU ms on the harness's rollouts, least of 3 alternating calls:",
        parts["syntax"], SYNTAX_NOTE]))


SIDE_BY_SIDE = """Side by side with the public reference (xuc865/verl-code 74d09ed, `didpo/`) on the shared harness's
rollouts (ours on its plain dicts, conversion inside the clock), wall ms, medians; the budget
(issue 30): paper <= 150 ms, large <= 3 s, at least 50x the reference's lightweight mode:

    $PY -u ../shared/refbench/didpo_ref_bench.py $REF --shapes paper --modes exact_only,lightweight --repeats 3 --ours . --out $RUNS/paper.json
    $PY -u ../shared/refbench/didpo_ref_bench.py $REF --shapes large --modes exact_only,lightweight --repeats 1 --warmup 0 --ours . --out $RUNS/large.json
    $PY benchmarks/credit_bench.py --refbench $RUNS/paper.json $RUNS/large.json --syntax $RUNS/paper.jsonl $RUNS/large.jsonl"""
SIDE_BY_SIDE_NOTE = """The reference's time moves 1.3-2.7x with the machine's load (a run at load 6-9 measured ours 5.1 s
and the reference 543 s at large): compare ratios within one run, on a quiet machine. Both shapes
meet the budget. History (git, 461fca0): numpy reached ~90-100 ms at paper in issue 15; C
extensions then 29.6 / 573 ms (256x / 243x exact_only); issue 30 removed them for one readable
implementation."""
SYNTAX_NOTE = """Prediction (before measuring): parsing the paper batch's 770 distinct Python sides with tree-sitter
costs ~45 ms + ~20 ms of queries, where the reader answers most in ~15 ms: tree-sitter alone adds
~40-50 ms at paper (~145-165 ms here) and ~0.5-0.7 s at large (~2.6 s). Result: the same
tokens; +40-48 ms at paper (123-140 -> 164-185 ms: over the 150 ms budget), +0.7-1.1 s at large
(2.1-2.4 -> 2.9-3.4 s: at the 3 s budget's edge): the parse is per character of every distinct
side. So Python keeps its reader (`credit/pyspans.py`); other languages use tree-sitter alone. Dropped: parsing on two threads
(py-tree-sitter holds the GIL: slower), incremental re-parses of similar sides (no faster)."""

if __name__ == "__main__":
    main()
