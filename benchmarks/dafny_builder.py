"""Dafny task supply (issue 33): tasks per hour built from the verified programs of the corpus
(code_gym/languages/dafny/builder/corpus/), the gates' rejections, the audit over every built
task's reference, and `tasks revalidate` (3 runs of each reference) on a sample. Results go to
docs/benchmarks.md ("Dafny builder").

    nice python benchmarks/dafny_builder.py                 # the whole corpus, 20 re-validated
    nice python benchmarks/dafny_builder.py --revalidate 0  # the build only

The goal: >= 150 built tasks, every reference verifying 3 times in a row (the builder's own gate,
checked again by the re-validation), no audit finding on any reference. The rate counts the tasks
of the programs this run built over its wall time (a resumed run counts only its own); the
re-validation comes after the build and is not part of its time.

Prediction, written before the first full run: a candidate costs 1-4 verifier runs through the
grader (the stripped program, one per hunk of a multi-hunk reference), ~5-10 s each in bubblewrap
(Mono and Boogie start in ~1 s, most programs verify in 1-4 s), plus 3 reference runs and the
grader's check per program: ~40-60 s of wall time per program with 2 workers, ~150-250 tasks/hour.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import write_section  # noqa: E402

from code_gym.grading.audit import audit  # noqa: E402
from code_gym.grading.reference import reference_changes  # noqa: E402
from code_gym.languages.dafny.builder import CORPUS, BuildOptions, build_many, expand_sources, revalidate  # noqa: E402
from code_gym.tasks.task import load_task_dir  # noqa: E402

TITLE = "Dafny builder"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", nargs="*", default=[str(CORPUS)], help="programs or folders (default: the corpus)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--revalidate", type=int, default=20, help="tasks re-validated (a random sample; 0: none)")
    parser.add_argument("--out", default="out/dafny_builder")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args(argv)

    sources = expand_sources(args.sources)
    state = Path(args.out) / "build-state.json"
    done_before = {k for k, p in json.loads(state.read_text())["projects"].items() if p["status"] in ("built", "rejected")} \
        if state.exists() else set()
    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    batch = build_many(sources, args.out, BuildOptions(workers=args.workers))
    minutes = (time.monotonic() - t0) / 60
    print(batch.summary())
    built_now = sum(len(p.tasks) for key, p in batch.projects.items() if key not in done_before)
    tasks = load_task_dir(args.out)
    flagged = [t.id for t in tasks if audit(reference_changes(t), t)]
    gates = Counter({g: n for g, n in batch.manifest["gates"].items() if n})
    candidates = batch.manifest["candidates"]
    line = (f"- **{len(tasks)} tasks** from {candidates} candidates of {len(sources)} programs in **{minutes:.1f} min** "
            f"(**{60 * built_now / max(minutes, 1e-9):.0f} tasks/hour**); every reference verified 3x in a row within "
            f"half the 120 s timeout; rejected: {', '.join(f'{g} {n}' for g, n in sorted(gates.items())) or 'none'}; "
            f"audit findings on the {len(tasks)} references: {len(flagged)}.")
    print(line)
    if args.revalidate:
        sample = random.Random(0).sample(tasks, min(args.revalidate, len(tasks)))
        t1 = time.monotonic()
        report = revalidate(sample, runs=3, workers=args.workers)
        print(report.summary())
        line += (f"\n- `tasks revalidate` (3 runs, canaries and probes), {len(sample)} sampled (seed 0): "
                 f"**{report.fraction:.0%}** pass every gate; {(time.monotonic() - t1) / 60:.1f} min.")
    if not args.no_doc:
        body = (f"`python benchmarks/dafny_builder.py --out {args.out}` ({args.workers} workers), run "
                f"{started:%Y-%m-%d %H:%M} UTC on a shared machine.\n\n{line}")
        write_section(TITLE, body)
    return 0 if flagged == [] else 1


if __name__ == "__main__":
    sys.exit(main())
