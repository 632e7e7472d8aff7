"""Go task supply (issue 34): validated tasks per hour from Debian's golang-*-dev packages (which
ship their _test.go files), per-package yields, gate rejections, environment and build-cache
hits, the multi-region share, `tasks revalidate` on a sample, and the grading time of a Go task
against a bare `go test` of the same code in the same sandbox. Results go to docs/benchmarks.md
("Go builder").

    nice python benchmarks/go_builder.py                    # every package, a 1 h box, 30 re-validated
    nice python benchmarks/go_builder.py --check            # the list only: import path, tests, environment
    nice python benchmarks/go_builder.py --max-minutes 10   # a 10-minute slice of the list

The goal: >= 300 validated tasks in <= 1 hour on the 2-core machine from >= 15 packages, >= 30%
multi-region. The list holds packages with few dependencies (most have none, one needs uniseg),
whose tests are quick unit tests: a candidate costs one compile of the changed package and a run
of the test packages that cover it (1-3 s in bubblewrap with the build cache); a package's fixed
cost is its baseline (one coverage run per test package, 10-200 s: gods has 19 test packages).
`--max-candidates` (default 16 one-region candidates a package, then 0.6 multi-region ones per
accepted task: ~22 tasks a package) spreads the hour over every package, so that the box reaches
all of them rather than exhausting the first few. `--max-minutes` starts no package after that
time (the ones running finish); the rate is the tasks of the packages this run built over its wall
time (a resumed run counts only its own). Environments and build caches go into a cache of the
run's own (`OUT/cache`, CODE_GYM_CACHE) so that their build times are cold ones (`--shared-cache`:
code-gym's usual cache). The package code runs only in the sandbox: the bare `go test` the grader
is compared with runs there too. The re-validation and the grading-time comparison come after the
build and are not part of its time.

Prediction, from two smoke runs on the shared machine (load 12-22): semver and runewidth with 10
candidates each gave 25 tasks (40% multi-region) in 1.6 min; eight packages with 6 candidates
each gave 68 tasks (40% multi-region) in 6.7 min, every package yielding; 16/16 re-validated.
So ~600-900 tasks/hour; the 26 packages at 16 candidates (~570 tasks) fit in the hour.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _builders  # noqa: E402
from _report import write_section  # noqa: E402

from code_gym import languages  # noqa: E402
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests  # noqa: E402
from code_gym.grading.grade import grade  # noqa: E402
from code_gym.grading.reference import reference_changes  # noqa: E402
from code_gym.sandbox import Limits, make_sandbox  # noqa: E402
from code_gym.util.table import format_table  # noqa: E402
from code_gym.workspace.working_copy import Workspace  # noqa: E402

# (Debian package, what it is). Each opened with `--check` (2026-12-05: its import path, test files and
# environment); the packages whose baseline is long (many test packages) come last.
PACKAGES = [
    ("golang-github-dustin-go-humanize-dev", "human-readable sizes, times, commas, ordinals (no dependency)"),
    ("golang-github-google-shlex-dev", "shell-style lexing and splitting (no dependency)"),
    ("golang-github-blang-semver-dev", "semantic versions: parse, compare, ranges (no dependency)"),
    ("golang-github-mattn-go-runewidth-dev", "the display width of Unicode text (uniseg)"),
    ("golang-github-masterminds-semver-dev", "semantic versions with constraints (no dependency)"),
    ("golang-github-hashicorp-go-version-dev", "versions and constraints (no dependency)"),
    ("golang-github-kballard-go-shellquote-dev", "shell quoting and word splitting (no dependency)"),
    ("golang-github-mattn-go-shellwords-dev", "shell word parsing with variables (no dependency)"),
    ("golang-github-agext-levenshtein-dev", "edit distances and similarity (no dependency)"),
    ("golang-github-xrash-smetrics-dev", "string metrics: Jaro-Winkler, Soundex, Wagner-Fischer (no dependency)"),
    ("golang-github-texttheater-golang-levenshtein-dev", "Levenshtein distances and edit scripts (no dependency)"),
    ("golang-github-armon-go-radix-dev", "a radix tree (no dependency)"),
    ("golang-github-hashicorp-golang-lru-dev", "LRU, 2Q and ARC caches (no dependency)"),
    ("golang-github-bits-and-blooms-bitset-dev", "bit sets (no dependency)"),
    ("golang-github-huandu-xstrings-dev", "string functions: case, translate, squeeze (no dependency)"),
    ("golang-github-iancoleman-strcase-dev", "case conversions of identifiers (no dependency)"),
    ("golang-github-danwakefield-fnmatch-dev", "fnmatch(3) patterns (no dependency)"),
    ("golang-github-ryanuber-go-glob-dev", "simple glob matching (no dependency)"),
    ("golang-github-docker-go-units-dev", "sizes and durations for humans (no dependency)"),
    ("golang-github-tidwall-match-dev", "wildcard matching (no dependency)"),
    ("golang-github-mitchellh-go-wordwrap-dev", "word wrapping (no dependency)"),
    ("golang-github-kr-text-dev", "text indentation and wrapping (no dependency)"),
    ("golang-github-google-go-cmp-dev", "deep comparison and diffs by reflection (no dependency)"),
    ("golang-github-cespare-xxhash-dev", "xxHash64 (no dependency)"),
    ("golang-github-emirpasic-gods-dev", "containers: lists, sets, stacks, maps, trees, heaps (no dependency)"),
    ("golang-github-gobwas-glob-dev", "compiled glob patterns (no dependency)"),
]
# packages opened and left out, with the reason
REJECTED: list[tuple[str, str]] = []

TITLE = "Go builder (benchmarks/go_builder.py)"


def check(chosen) -> list[list]:
    """The package list's check, no test run: each package unpacked, its import path, test files and
    sources read and the Debian packages of its environment resolved."""
    from code_gym.languages.go.builder.project import open_project

    return _builders.check_list(chosen, open_project, lambda project: [
        project.import_path, len(project.test_files), len(project.source_files), len(project.packages),
        ", ".join(project.unresolved)[:40] or "-"], 5)


_BARE_MS = re.compile(r"CODE_GYM_BARE_MS (\d+)")


def _bare(task, warm: bool) -> float | None:
    """Seconds of a bare `go test` of the task's reference (hidden tests laid, every package, no
    reader, no records) in the sandbox with the task's runtime: from an empty GOCACHE (cold), or
    from a copy of the task's build cache (warm, as the grader's reader copies it; the copy is not
    timed)."""
    language = languages.get("go")
    runtime = language.runtime(task)
    copy = Workspace(task.repo, strategy="copy")
    try:
        apply_changes(task, copy.root, reference_changes(task))
        lay_hidden_tests(task, copy.root)
        plan = language.test_run(task.test_command, (), "/nonexistent")
        seed = 'cp -a "$CODE_GYM_GO_CACHE/." "$GOCACHE/" 2>/dev/null; ' if warm else ""
        command = (f'unset CODE_GYM_REPORTERS; export GOCACHE=/tmp/code-gym-bare-cache; mkdir -p "$GOCACHE"; {seed}'
                   f's=$(date +%s%N); ({plan.command}) >/dev/null 2>&1; e=$(date +%s%N); '
                   f'echo CODE_GYM_BARE_MS $(( (e - s) / 1000000 ))')
        sandbox = make_sandbox("auto", copy.root, Limits(timeout=task.timeouts.tests * 3), runtime=runtime)
        try:
            run = sandbox.exec(command)
        finally:
            sandbox.close()
    finally:
        copy.close()
    found = _BARE_MS.search(run.output or "")
    return int(found.group(1)) / 1000 if found else None


def _median(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def grading_times(tasks, count: int) -> list[list]:
    """The reference of `count` tasks (of different projects), timed (median of 3): bare `go test`
    cold and warm in the sandbox, and the grader (`grade`: a fresh copy, the audit, canaries, the
    reader's records, the build cache copied)."""
    chosen, seen = [], set()
    for task in sorted(tasks, key=lambda t: t.id):
        project = task.environment.import_path
        if project not in seen and len(chosen) < count:
            seen.add(project)
            chosen.append(task)
    rows = []
    for task in chosen:
        cold = _median([_bare(task, warm=False) for _ in range(3)])
        warm = _median([_bare(task, warm=True) for _ in range(3)])
        changes = reference_changes(task)
        graded = []
        for _ in range(3):
            t0 = time.monotonic()
            grade(task, changes)
            graded.append(time.monotonic() - t0)
        graded_s = statistics.median(graded)
        tests = len(task.fail_to_pass) + len(task.pass_to_pass)

        def shown(value):
            return "?" if value is None else f"{value:.2f}"

        rows.append([task.id[:44], tests, shown(cold), shown(warm), f"{graded_s:.2f}",
                     f"{graded_s / warm:.1f}x" if warm else "?"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def _package_summary(report) -> str:
    """One wrapped paragraph: each package's tasks / candidates (multi-region), or why it gave none."""
    projects = sorted(report.projects.values(), key=lambda p: -len(p.tasks))
    yielding = [p for p in projects if p.tasks]
    parts = [f"{p.source.removeprefix('golang-').removesuffix('-dev')} {len(p.tasks)}/{p.candidates} "
             f"({p.multi_region})" for p in yielding[:16]]
    rest = yielding[16:]
    if rest:
        parts.append(f"{len(rest)} more packages {min(len(p.tasks) for p in rest)}-{max(len(p.tasks) for p in rest)} "
                     f"tasks each")
    none = [p for p in projects if not p.tasks and p.status not in ("pending", "running")]
    text = "; ".join(parts)
    if none:
        text += ". None from " + ", ".join(f"{p.source} ({p.status}: {p.reason[:60]})" for p in none)
    return textwrap.fill(text, 100, break_on_hyphens=False, break_long_words=False)


def _cache_hits(out: Path, keys) -> tuple[int, int, int, int, int]:
    """(projects needing no Debian package, environments found in the cache, unpacked; build caches
    found, made) of the built projects."""
    env_none = env_hit = env_built = cache_hit = cache_made = 0
    for key in keys:
        path = out / "projects" / key / "manifest.json"
        if not path.exists():
            continue
        env = json.loads(path.read_text()).get("environment") or {}
        if not env.get("packages"):
            env_none += 1
        else:
            env_hit += bool(env.get("cached"))
            env_built += not env.get("cached")
        cache_hit += bool(env.get("build_cache_cached"))
        cache_made += bool(env.get("build_cache")) and not env.get("build_cache_cached")
    return env_none, env_hit, env_built, cache_hit, cache_made


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated Debian package names: these only")
    parser.add_argument("--packages", type=int, default=len(PACKAGES), help="the first N packages of the list")
    parser.add_argument("--max-minutes", type=float, default=60.0,
                        help="start no package after this many minutes of this run (default 60)")
    parser.add_argument("--max-candidates", type=int, default=16, help="one-region candidates per package (default 16)")
    parser.add_argument("--multi-ratio", type=float, default=0.6, help="multi-region candidates per accepted task")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--revalidate", type=int, default=30, help="tasks re-validated (a random sample; 0: none)")
    parser.add_argument("--grading", type=int, default=3, help="tasks (of different packages) timed against bare go test")
    parser.add_argument("--out", default="out/go_builder")
    parser.add_argument("--shared-cache", action="store_true", help="environments and build caches in code-gym's cache")
    parser.add_argument("--check", action="store_true", help="check the package list only (no test runs)")
    parser.add_argument("--doc", default=None, help="the markdown file to write the section into "
                                                    "(default docs/benchmarks.md)")
    parser.add_argument("--no-doc", action="store_true", help="write no section")
    args = parser.parse_args(argv)

    out = Path(args.out)
    _builders.own_cache(out, args.shared_cache)
    chosen = PACKAGES[: args.packages]
    if args.only:
        names = set(args.only.split(","))
        chosen = [p for p in PACKAGES if p[0] in names]
    if args.check:
        rows = check(chosen)
        print(format_table(["package", "status", "import path", "test files", "sources", "env packages",
                            "unresolved imports", "s", "reason"], rows))
        return 0

    from code_gym.languages.go.builder import BuildOptions, build_many, revalidate
    from code_gym.languages.go.builder.batch import source_key

    options = BuildOptions(workers=args.workers, max_candidates=args.max_candidates, multi_ratio=args.multi_ratio,
                           progress=False)
    run = _builders.build(build_many, [name for name, _ in chosen], out, options, args.max_minutes)
    report, built, tasks, multi, candidates, history = (run.report, run.built, run.tasks, run.multi, run.candidates,
                                                        run.history)
    env_none, env_hit, env_built, cache_hit, cache_made = _cache_hits(out / "tasks", [source_key(p.source) for p in built])
    env_seconds = [p.environment_seconds for p in built if p.environment == "built"]

    all_tasks, sample_text = _builders.revalidated(revalidate, out, args.revalidate, args.workers)
    grading = grading_times(all_tasks, args.grading) if args.grading and all_tasks else []

    slice_note = run.slice_note(len(chosen), "packages")
    yielding = sum(1 for p in built if p.tasks)
    body = f"""`python benchmarks/go_builder.py --max-minutes {args.max_minutes:g} --max-candidates {args.max_candidates} --multi-ratio {args.multi_ratio:g} --workers {args.workers} --revalidate {args.revalidate}` over {len(chosen)} listed Debian golang-*-dev packages, {len(history)} run(s) into one folder: {run.runs_text()}.

- **{tasks} validated tasks** from {candidates} candidates in **{run.minutes:.1f} min** of wall time (**{run.rate:.0f} tasks/hour**), from **{yielding} packages** of the {len(built)} the time boxes started ({len(report.projects) - len(built)} left pending).
{slice_note}- **Multi-region: {multi} of {tasks} ({multi / tasks if tasks else 0:.0%})**.
- Environments (the Debian packages' closure unpacked, a cold cache of the run's own): {env_built} unpacked ({sum(env_seconds):.0f} s with their build caches), {env_hit} found in the cache, {env_none} packages needed none; build caches (a sandboxed `go test -run '^$' -exec /bin/true ./...` per repository): {cache_made} made, {cache_hit} found in the cache. The grader's check makes one more per accepted task (its repository differs).
- Re-validation (`tasks revalidate`: the grader with canaries, fresh sandboxes, 3 reference runs), a random sample of {args.revalidate} (seed 0): {sample_text}.
- Gate rejections (of {candidates} candidates): {run.gates_text()}.

per package (tasks / candidates, multi-region in brackets; the full table is the run's manifest.json):
{_package_summary(report)}

Grading time of a task's reference (median of 3 runs, seconds, all in bubblewrap with the task's environment): bare `go test` of every package from an empty build cache (cold) and from a copy of the task's build cache (warm, the copy not timed), and the grader (`grade`: copy, audit, canaries, the reader's records, its own cache copy):

{format_table(["task", "tests", "bare cold", "bare warm", "grader", "grader / warm"], grading) if grading else "not measured"}
"""
    if not args.no_doc:
        if args.doc:
            write_section(TITLE, body, Path(args.doc))
        else:
            write_section(TITLE, body)
    run.write_summary(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
