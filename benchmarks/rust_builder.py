"""Rust task supply (issue 34): validated tasks per hour from Debian's librust-*-dev crates, per-crate
yields, gate rejections, environment and target-cache builds and hits, the multi-region share,
`tasks revalidate` on a sample, and the grading time of a Rust task against a bare `cargo test`.
Results go to docs/benchmarks.md ("Rust builder").

    nice python benchmarks/rust_builder.py                    # every crate, 1 h box, 30 re-validated
    nice python benchmarks/rust_builder.py --check            # the list only: crate, targets, environment
    nice python benchmarks/rust_builder.py --only strsim,itoa --max-candidates 6 --doc /tmp/bench.md

The goal: >= 100 validated tasks in <= 1 hour on the 2-core machine from >= 8 crates, >= 30%
multi-region. `--max-minutes` starts no crate after that time (the ones running finish); the rate
is the tasks of the crates this run built over its wall time (a resumed run counts only its own).
Environments and target caches are built into a cache of the run's own (`OUT/cache`,
CODE_GYM_CACHE) so that their build times are cold ones; the .deb downloads are shared. The
re-validation of the sample and the grading-time comparison come after the build and are not part
of its time.

How the crates were chosen: small crates whose tests exercise their functions thoroughly and whose
test builds compile few crates (a heavy dev-dependency such as version-sync or criterion compiles
for every target cache: the builder leaves out the dev-dependencies no test names). Per crate, a
candidate is one incremental build of the crate plus its test binaries' run (3-8 s); the grader
check builds one target cache per hidden-test layout (a cold build of the crate and its
dependencies). `--max-candidates` (default 24 one-region candidates a crate, so ~14 more
multi-region ones at the default ratio) keeps every listed crate within the hour.

Prediction, written before the first run: ~6 s a candidate with 2 workers on an idle machine,
~60% of one-region candidates accepted (no coverage: some sites no test reaches), ~85% of
multi-region ones; 14 crates x (24 + 9) candidates x 6 s / 2 workers = 23 min of runs, plus ~1.5 min a
crate of environments, caches and grader checks: ~45 min for ~14 x (14 + 8) = ~300 tasks.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _builders  # noqa: E402
from _report import DOC, write_section  # noqa: E402

from code_gym import languages  # noqa: E402
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests  # noqa: E402
from code_gym.grading.grade import grade  # noqa: E402
from code_gym.grading.reference import reference_changes  # noqa: E402
from code_gym.sandbox import Limits, make_sandbox  # noqa: E402
from code_gym.util.table import format_table  # noqa: E402
from code_gym.workspace.working_copy import Workspace  # noqa: E402

# (Debian package, what it is). Ordered so that a time-boxed slice takes crates of every size.
CRATES = [
    ("librust-strsim-dev", "string similarity metrics: Hamming, Levenshtein, Jaro (unit + integration tests)"),
    ("librust-semver-dev", "Cargo's semver: parsing and matching version requirements (4 integration test files)"),
    ("librust-shlex-dev", "POSIX shell word splitting and quoting (unit tests)"),
    ("librust-itoa-dev", "fast integer to text, with a 128-bit division (integration tests)"),
    ("librust-unicode-width-dev", "display width of characters and strings (unit tests over tables)"),
    ("librust-version-compare-dev", "version strings compared part by part (unit tests, 6 files)"),
    ("librust-bit-vec-dev", "a vector of bits: set operations, iteration (unit tests)"),
    ("librust-adler-dev", "the Adler-32 checksum (unit tests)"),
    ("librust-shell-words-dev", "shell word splitting, quoting and joining (unit tests)"),
    ("librust-heck-dev", "case conversion: snake, kebab, camel, title (unit tests; unicode-segmentation)"),
    ("librust-fixedbitset-dev", "a fixed-size bit set (unit tests)"),
    ("librust-arrayvec-dev", "a vector with fixed capacity on the stack (unit + integration tests)"),
    ("librust-md5-dev", "the MD5 digest (unit tests)"),
    ("librust-glob-dev", "Unix shell glob patterns: matching and options (unit tests)"),
]

# checked and left out, with the reason
REJECTED = [
    ("librust-hex-dev", "its integration tests name version-sync, whose dependencies (regex, syn, pulldown-cmark, toml) "
                        "make every target cache a cold build of a minute or more"),
    ("librust-byteorder-dev", "its unit tests use quickcheck 0.9, which Debian does not ship: no test builds"),
    ("librust-humantime-dev", "its unit tests use rand 0.7, which Debian does not ship: no test builds"),
    ("librust-base64-dev", "its library's unit tests use rand 0.6 (not in Debian): the reader builds them in every run"),
    ("librust-semver-parser-dev", "pest's derive macros compile into every target cache (over 10 min under load)"),
    ("librust-deunicode-dev", "one test in the crate as Debian ships it: 1 task of 8 candidates"),
    ("librust-humansize-dev", "one function with a body the mutations take"),
    ("librust-fnv-dev", "no test in the crate as Debian ships it"),
    ("librust-percent-encoding-dev", "no test in the crate as Debian ships it"),
    ("librust-unindent-dev", "no test in the crate as Debian ships it"),
]

TITLE = "Rust builder (benchmarks/rust_builder.py)"
BARE = ('rm -rf "$CARGO_TARGET_DIR"; if [ -d "${CODE_GYM_RUST_CACHE:-}" ]; then cp -a "$CODE_GYM_RUST_CACHE" '
        '"$CARGO_TARGET_DIR"; fi; cargo test --offline --tests')


def check(chosen) -> list[list]:
    """The crate list's check, no test run: each crate unpacked, its targets and sources read, its
    dependencies' packages resolved and its Cargo.lock made."""
    from code_gym.languages.rust.builder.project import open_project

    return _builders.check_list(chosen, open_project, lambda project: [
        f"{project.crate} {project.version}", len(project.test_files), len(project.source_files),
        len(project.packages), len(project.dropped)], 5)


def grading_times(tasks, count: int = 4) -> list[list]:
    """The reference of up to `count` tasks (of different crates), timed (median of 3): a bare
    `cargo test` of the task's targets in the sandbox (no records, from a copy of the task's target
    cache, hidden tests laid), and the grader (`grade`: a fresh copy, the audit, canaries, the
    reader's records). The crate's code never runs on the host, so the bare run is sandboxed too."""
    language = languages.get("rust")
    chosen, crates = [], set()
    for task in sorted(tasks, key=lambda t: t.id):
        crate = task.id.split("-")[0]
        if crate not in crates and len(chosen) < count:
            crates.add(crate)
            chosen.append(task)
    rows = []
    for task in chosen:
        runtime = language.runtime(task)
        copy = Workspace(task.repo, strategy="copy")
        try:
            apply_changes(task, copy.root, reference_changes(task))
            lay_hidden_tests(task, copy.root)
            sandbox = make_sandbox("auto", copy.root, Limits(timeout=task.timeouts.tests, memory_bytes=4 << 30,
                                                             processes=512), runtime=runtime)
            try:
                # cargo's own test run of the library, binary and integration-test targets (no doc-tests,
                # which the grader does not run either), from a fresh copy of the task's target cache
                bare = _builders.median_time(lambda: sandbox.exec(BARE))
            finally:
                sandbox.close()
        finally:
            copy.close()
        changes = reference_changes(task)
        graded = _builders.median_time(lambda: grade(task, changes))
        tests = len(task.fail_to_pass) + len(task.pass_to_pass)
        rows.append([task.id[:44], tests, f"{bare:.2f}", f"{graded:.2f}", f"{graded / bare:.1f}x"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def _project_manifests(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((out / "projects").glob("*/manifest.json")):
        try:
            found[path.parent.name] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return found


def _crate_summary(report, manifests: dict[str, dict]) -> str:
    """One wrapped paragraph: each crate's tasks / candidates (multi-region), or why it gave none."""
    parts, none = [], []
    for key, p in sorted(report.projects.items(), key=lambda kv: -len(kv[1].tasks)):
        if p.tasks:
            changed = manifests.get(key, {}).get("changed_runs", {})
            parts.append(f"{key} {len(p.tasks)}/{p.candidates} ({p.multi_region}; {changed.get('median', 0):.1f} s a run)")
        else:
            none.append(f"{key} ({p.status}: {p.reason[:80]})")
    text = "; ".join(parts)
    if none:
        text += ". None from " + ", ".join(none)
    return _builders.fill(text)


def _caches(manifests: dict[str, dict]) -> str:
    """The environments and target caches the builds made or found."""
    envs = [m.get("environment") or {} for m in manifests.values()]
    caches = [m.get("target_cache") or {} for m in manifests.values() if m.get("target_cache")]
    cold_env = [e for e in envs if e and not e.get("cached")]
    cold_cache = [c for c in caches if not c.get("cached")]
    median_cache = statistics.median([c["build_seconds"] for c in cold_cache]) if cold_cache else 0.0
    return (f"environments: {len(cold_env)} made ({sum(e.get('build_seconds', 0) for e in cold_env):.0f} s in all), "
            f"{len(envs) - len(cold_env)} found in the cache; the crates' target caches: {len(cold_cache)} built "
            f"(median {median_cache:.0f} s, {sum(c.get('size', 0) for c in caches) / 2**20:.0f} MiB in all), "
            f"{len(caches) - len(cold_cache)} found in the cache")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated crate names (e.g. strsim,itoa): these only")
    parser.add_argument("--crates", type=int, default=len(CRATES), help="the first N crates of the list")
    parser.add_argument("--max-minutes", type=float, default=60.0,
                        help="start no crate after this many minutes of this run (default 60)")
    parser.add_argument("--max-candidates", type=int, default=24, help="one-region candidates per crate")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--revalidate", type=int, default=30, help="tasks re-validated (a random sample; 0: none)")
    parser.add_argument("--grading", type=int, default=4, help="tasks timed against a bare cargo test")
    parser.add_argument("--out", default="out/rust_builder")
    parser.add_argument("--shared-cache", action="store_true", help="environments and caches in code-gym's usual cache")
    parser.add_argument("--check", action="store_true", help="check the crate list only (no test runs)")
    parser.add_argument("--doc", default=str(DOC), help="the markdown file the section goes to (a smoke run: a copy)")
    parser.add_argument("--no-doc", action="store_true", help="write no section")
    args = parser.parse_args(argv)

    out = Path(args.out)
    _builders.own_cache(out, args.shared_cache)
    chosen = CRATES[: args.crates]
    if args.only:
        names = {f"librust-{n}-dev" for n in args.only.split(",")}
        chosen = [c for c in CRATES if c[0] in names]
    if args.check:
        rows = check(chosen)
        print(format_table(["package", "status", "crate", "test targets", "sources", "packages", "dropped", "s",
                            "reason"], rows))
        return 0

    from code_gym.languages.rust.builder import BuildOptions, build_many, revalidate

    options = BuildOptions(workers=args.workers, max_candidates=args.max_candidates, progress=False)
    run = _builders.build(build_many, [name for name, _ in chosen], out, options, args.max_minutes)
    report, built, tasks, multi, candidates, history = (run.report, run.built, run.tasks, run.multi, run.candidates,
                                                        run.history)
    manifests = _project_manifests(out / "tasks")

    all_tasks, sample_text = _builders.revalidated(revalidate, out, args.revalidate, args.workers)
    grading = grading_times(all_tasks, args.grading) if args.grading and all_tasks else []
    compile_rejections = sum("does not compile" in r.get("reason", "") for m in manifests.values()
                             for r in m.get("rejections", []))
    body = f"""`python benchmarks/rust_builder.py --max-minutes {args.max_minutes:g} --max-candidates {args.max_candidates} --workers {args.workers} --revalidate {args.revalidate}` over {len(chosen)} listed Debian crates (Debian's cargo 1.65 / rustc 1.63), {len(history)} run(s) into one folder: {run.runs_text()}.

- **{tasks} validated tasks** from {candidates} candidates in **{run.minutes:.1f} min** of wall time (**{run.rate:.0f} tasks/hour**), from **{sum(1 for p in built if p.tasks)} crates** of the {len(built)} the time boxes started ({len(report.projects) - len(built)} left pending).
- **Multi-region: {multi} of {tasks} ({multi / tasks if tasks else 0:.0%})**.
- Gate rejections (of {candidates} candidates): {run.gates_text()}; of the `fails` ones, {compile_rejections} changes that do not compile.
- Builds: {_caches(manifests)}.
- Re-validation (`tasks revalidate --language rust`: the grader with canaries, fresh sandboxes, 3 reference runs), a random sample of {args.revalidate} (seed 0): {sample_text}.

per crate (tasks / candidates, multi-region and the median changed-code run, a build and the tests, in brackets):
{_crate_summary(report, manifests)}

Grading time of a task's reference (median of 3 runs, seconds): a bare `cargo test` of its targets in the sandbox (from a copy of the task's target cache; the crate's code never runs on the host) and the grader (`grade`: copy, audit, canaries, the reader's records):

{format_table(["task", "tests", "bare cargo test", "grader", "grader / bare"], grading) if grading else "not measured"}

Crates checked and left out: {len(REJECTED)}, each with its reason in `REJECTED` of benchmarks/rust_builder.py.
"""
    if not args.no_doc:
        write_section(TITLE, body, Path(args.doc))
    run.write_summary(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
