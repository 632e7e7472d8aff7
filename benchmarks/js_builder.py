"""JavaScript task supply (issue 32): validated tasks per hour from npm packages that ship their
tests, per-package yields, gate rejections, environment build time and cache hits, the
multi-region share, `tasks revalidate` on a sample, and the grading time of a JavaScript task
against its bare runner. Results go to docs/benchmarks.md ("JavaScript builder").

    nice python benchmarks/js_builder.py                    # every package, 1 h box, 40 re-validated
    nice python benchmarks/js_builder.py --check            # the list only: runner, tests, environment
    nice python benchmarks/js_builder.py --max-minutes 10   # a 10-minute slice of the list

The goal: >= 500 validated tasks in <= 1 hour on the 2-core machine from >= 25 packages, >= 30%
multi-region, >= 95% passing re-validation. `--max-minutes` starts no package after that time
(the ones running finish); the rate is the tasks of the packages this run built over its wall time
(a resumed run counts only its own). Environments are built into a cache of the run's own
(`OUT/cache`, CODE_GYM_CACHE) so that their build times are cold ones; npm's download cache is
the user's (`--shared-cache` uses code-gym's usual cache instead: the hits of earlier runs).
The re-validation of the sample and the grading-time comparison come after the build and are not
part of its time.

Prediction, written before the first slice: a candidate costs 2-4 runs of a few test files
(0.2-0.5 s each in bubblewrap: node starts in ~50 ms, tape/mocha in ~150 ms, jest in ~1.5 s),
so ~1-2 s of wall time per candidate with 2 workers on an idle machine, ~2,000 candidates/hour
and, at ~85% acceptance, ~1,700 tasks/hour, falling 2-4x on a machine shared with other sessions.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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

# (npm spec, what it is). Each ships its test files in the registry tarball and passed `--check`
# (2026-12-05): its runner read from scripts.test, its test files found, its environment built.
# Ordered so that a time-boxed slice takes large and small packages and every runner alike.
PACKAGES = [
    ("qs@6.14.0", "query strings: parse/stringify with many options (tape, 4 test files)"),
    ("minimist@1.2.8", "argument parsing: one large function, 15 tape files"),
    ("hash.js@1.1.7", "SHA and RIPEMD in pure JS: exact digests (mocha 5 -> 10)"),
    ("is-callable@1.2.7", "a type check with engine quirks (tape)"),
    ("object-inspect@1.13.4", "util.inspect for browsers: many value kinds, 19 tape files"),
    ("safe-regex@2.1.1", "catastrophic-backtracking detection over a regex AST (jest)"),
    ("traverse@0.6.11", "object tree walking and mapping, 20 tape files"),
    ("deep-equal@2.2.3", "node's deepEqual algorithm (tape, one big test file)"),
    ("des.js@1.1.0", "DES and Triple DES: cipher modes and padding (mocha)"),
    ("events@3.3.0", "node's EventEmitter for browsers (tape)"),
    ("path-browserify@1.0.1", "node's path module (posix): normalize, relative, parse (tape)"),
    ("url@0.11.4", "node's legacy url.parse/format/resolve (mocha 3 -> 10)"),
    ("sha.js@2.4.12", "SHA family as streams: exact digests (tape)"),
    ("resolve@1.22.8", "node's require.resolve algorithm with fixture trees (tape, 20 files)"),
    ("jsonparse@1.3.1", "a streaming JSON parser: a byte-level state machine (tape)"),
    ("jsonify@0.0.1", "JSON.parse/stringify in plain JS (tape)"),
    ("json-stable-stringify@1.3.0", "deterministic JSON with comparators and cycles (tape)"),
    ("cipher-base@1.0.7", "the stream base class of browserify's ciphers (tape)"),
    ("string.prototype.matchall@4.1.0", "an ES spec polyfill on es-abstract (tape)"),
    ("text-table@0.2.0", "aligned text tables (tape)"),
    ("get-intrinsic@1.3.1", "the spec's %Intrinsic% table (tape)"),
    ("static-eval@2.1.1", "evaluating an AST of safe expressions (tape)"),
    ("for-each@0.3.5", "iteration over arrays, strings and objects (tape)"),
    ("varint@6.0.0", "protobuf varints: encode/decode with exact bytes (tape)"),
    ("function.prototype.name@1.2.0", "a Function#name polyfill (tape)"),
    ("array-includes@3.2.0", "an Array#includes polyfill on es-abstract (tape)"),
    ("falafel@2.2.5", "source rewriting through an acorn AST walk (tape)"),
    ("object.assign@4.1.7", "an Object.assign polyfill (tape)"),
    ("fast-json-stable-stringify@2.1.0", "deterministic JSON, the fast variant (tape)"),
    ("es-to-primitive@1.3.4", "the spec's ToPrimitive for ES5 and ES2015 (tape)"),
    ("internal-slot@1.1.0", "internal slots on a side channel (tape)"),
    ("call-bind@1.0.9", "callBind/callBound helpers (tape)"),
    ("string.prototype.trim@1.2.11", "a String#trim polyfill (tape)"),
    ("function-bind@1.1.2", "a Function#bind implementation (tape)"),
    ("regexp.prototype.flags@1.5.4", "a RegExp#flags polyfill (tape)"),
    ("is-date-object@1.1.0", "a cross-realm Date check (tape)"),
    ("duplexer@0.1.2", "a duplex stream from a writable and a readable (tape)"),
    ("object-is@1.1.6", "an Object.is polyfill (tape)"),
    ("subarg@1.0.0", "minimist with nested [ ] contexts (tape)"),
    ("xtend@4.0.2", "object extension (tape)"),
    ("defined@1.0.1", "the first defined argument (tape)"),
    ("archy@1.0.0", "npm ls-style trees (tape)"),
    ("concat-map@0.0.2", "map then concatenate (tape)"),
    ("has-symbols@1.1.0", "a Symbol support check (tape)"),
    ("is-string@1.1.1", "a cross-realm String check (tape)"),
    ("is-number-object@1.1.1", "a cross-realm Number check (tape)"),
    ("is-arguments@1.2.0", "an arguments-object check (tape)"),
    ("object.entries@1.1.9", "an Object.entries polyfill (tape)"),
    ("array.prototype.flat@1.3.3", "an Array#flat polyfill (tape)"),
    ("string.prototype.padstart@3.1.7", "a String#padStart polyfill (tape)"),
    ("json-schema-traverse@1.0.0", "JSON Schema traversal with callbacks (mocha)"),
]

# checked with `--check` (2026-12-05) and left out, with the reason the builder gave
REJECTED = [
    ("shell-quote@1.12.0", "no test files ship in the package (1.8.1 shipped them)"),
    ("define-properties@1.2.1", "no test files ship in the package"),
    ("is-core-module@2.18.0", "no test files ship in the package"),
    ("which-typed-array@1.1.24", "no test files ship in the package"),
    ("base64-js@1.5.1", "no test files ship in the package"),
    ("ieee754@1.2.1", "no test files ship in the package"),
    ("isarray@2.0.5", "no test files ship in the package"),
    ("bn.js@5.2.5", "no test files ship in the package"),
    ("asn1.js@5.4.1", "no test files ship in the package"),
    ("sprintf-js@1.1.3", "no test files ship in the package"),
    ("safe-buffer@5.2.1", "no test files ship in the package"),
    ("punycode@2.3.1", "no test files ship in the package"),
    ("object-keys@1.1.1", "runs `node test/index.js`, whose required test files the tarball leaves out"),
    ("es-abstract@1.24.2", "runs `node test` through an index requiring tape only indirectly"),
    ("through@2.3.8", "scripts.test is a shell loop (`for t in test/*.js; do node $t; done`)"),
    ("elliptic@6.6.1", "scripts.test runs `npm run unit`, a runner code-gym does not read (no runner found)"),
    ("diff@9.0.0", "its tests run through yarn scripts that build first (no runner found)"),
    ("util@0.12.5", "its node tests are plain scripts, not a test runner's"),
    ("assert@2.1.0", "builds before testing (no runner found)"),
    ("querystring-es3@0.2.1", "its tests run through a browser harness (no runner found)"),
    ("inherits@2.0.4", "node-tap (`tap`), not tape"),
    ("string_decoder@1.3.0", "node-tap (`tap test/parallel/*.js`)"),
    ("detective@5.2.1", "node-tap (`tap test/*.js`)"),
    ("wordwrap@1.0.0", "expresso"),
    ("merge-descriptors@2.0.0", "ava"),
    ("split@1.0.1", "asynct"),
    ("event-stream@4.0.1", "asynct"),
    ("extend@3.0.2", "runs `node test/index.js` with tape required indirectly"),
    ("array-flatten@3.0.0", "jest on TypeScript: the shipped dist/*.spec.js files run no test"),
    ("qs@6.17.1", "asks for tape@^5.10.3, which the registry here does not have (6.14.0 used instead)"),
    ("resolve@1.22.14", "its environment cannot be built here: one of its test dependencies has no matching version in the "
                        "registry (1.22.8 used instead)"),
    ("is-regex@1.2.1", "no function the mutations take (one exported expression)"),
]

TITLE = "JavaScript builder (benchmarks/js_builder.py)"


def check(chosen, out: Path) -> list[list]:
    """The package list's check, no test run: each tarball fetched and unpacked, its runner, test
    files and sources read and its environment built (or found in the cache)."""
    from code_gym.languages.javascript.builder.project import open_project

    def columns(project) -> list:
        env = project.environment
        return [project.test_command, len(project.test_files), len(project.source_files),
                "-" if env is None else "cached" if env.cached else f"built {env.build_seconds:.0f}s"]

    return _builders.check_list(chosen, lambda spec, work: open_project(spec, work, downloads=out / "downloads"),
                                columns, 4)


def grading_times(tasks, per_runner: int = 2) -> list[list]:
    """The reference of up to `per_runner` tasks of each runner, timed (median of 3) three ways:
    the bare runner on the host (the task's command without the grader's records, in a copy with the
    hidden tests laid), the same command in the sandbox, and the grader (`grade`: a fresh copy, the
    audit, canaries, the records and their cross-checks)."""
    language = languages.get("javascript")
    by_runner: dict[str, list] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        group = by_runner.setdefault(task.test_command.split()[0], [])
        if len(group) < per_runner:
            group.append(task)
    rows = []
    for runner, group in sorted(by_runner.items()):
        for task in group:
            runtime = language.runtime(task)
            copy = Workspace(task.repo, strategy="copy")
            results = Path(tempfile.mkdtemp(prefix="code-gym-bench-"))
            try:
                apply_changes(task, copy.root, reference_changes(task))
                lay_hidden_tests(task, copy.root)
                plan = language.test_run(task.test_command, task.visible_tests + task.hidden_tests, str(results))
                env = os.environ | runtime.variables(os.environ.get("PATH", ""))
                env.pop("CODE_GYM_REPORTERS", None)
                host = _builders.median_time(lambda: subprocess.run(
                    ["bash", "-c", plan.command], cwd=copy.root, env=env, capture_output=True,
                    timeout=task.timeouts.tests))
                sandbox = make_sandbox("auto", copy.root, Limits(timeout=task.timeouts.tests), runtime=runtime)
                try:
                    binds = {results: "/results"}
                    inside_plan = language.test_run(task.test_command, task.visible_tests + task.hidden_tests,
                                                    sandbox.inside(results, binds))
                    boxed = _builders.median_time(lambda: sandbox.exec(inside_plan.command, binds=binds))
                finally:
                    sandbox.close()
            finally:
                copy.close()
                shutil.rmtree(results, ignore_errors=True)
            changes = reference_changes(task)
            graded = _builders.median_time(lambda: grade(task, changes))
            tests = len(task.fail_to_pass) + len(task.pass_to_pass)
            rows.append([task.id[:44], runner, tests, f"{host:.2f}", f"{boxed:.2f}", f"{graded:.2f}",
                         f"{graded / host:.1f}x"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def _package_summary(report) -> str:
    """One wrapped paragraph: each package's tasks / candidates (multi-region), or why it gave none."""
    projects = sorted(report.projects.values(), key=lambda p: -len(p.tasks))
    yielding = [p for p in projects if p.tasks]
    parts = [f"{p.source} {len(p.tasks)}/{p.candidates} ({p.multi_region})" for p in yielding[:12]]
    rest = yielding[12:]
    if rest:
        parts.append(f"{len(rest)} more packages {min(len(p.tasks) for p in rest)}-{max(len(p.tasks) for p in rest)} "
                     f"tasks each")
    none = [p for p in projects if not p.tasks]
    text = "; ".join(parts)
    if none:
        text += ". None from " + ", ".join(f"{p.source} ({p.status})" for p in none)
    return _builders.fill(text)


def _left_out() -> str:
    """How many packages were checked and left out, by kind of reason (each package and its reason is
    in REJECTED)."""
    kinds = {"no tests in the tarball": 0, "a runner code-gym does not run or read": 0, "other": 0}
    for _, why in REJECTED:
        kind = ("no tests in the tarball" if "no test files ship" in why else
                "a runner code-gym does not run or read" if any(w in why for w in (
                    "runner", "node-tap", "ava", "expresso", "asynct", "shell loop", "plain scripts",
                    "indirectly", "leaves out", "TypeScript")) else "other")
        kinds[kind] += 1
    counts = ", ".join(f"{kind}: {n}" for kind, n in kinds.items() if n)
    return _builders.fill(f"{len(REJECTED)} ({counts}); each with its reason in `REJECTED` of benchmarks/js_builder.py")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated package names (e.g. qs,minimist): these only")
    parser.add_argument("--packages", type=int, default=len(PACKAGES), help="the first N packages of the list")
    parser.add_argument("--max-minutes", type=float, default=60.0,
                        help="start no package after this many minutes of this run (default 60)")
    parser.add_argument("--max-candidates", type=int, default=None, help="one-region candidates per package")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--revalidate", type=int, default=40, help="tasks re-validated (a random sample; 0: none)")
    parser.add_argument("--grading", type=int, default=2, help="tasks per runner timed against the bare runner")
    parser.add_argument("--out", default="out/js_builder")
    parser.add_argument("--shared-cache", action="store_true", help="environments in code-gym's usual cache")
    parser.add_argument("--check", action="store_true", help="check the package list only (no test runs)")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args(argv)

    out = Path(args.out)
    _builders.own_cache(out, args.shared_cache)
    chosen = PACKAGES[: args.packages]
    if args.only:
        names = set(args.only.split(","))
        chosen = [p for p in PACKAGES if p[0].rsplit("@", 1)[0] in names]
    if args.check:
        rows = check(chosen, out)
        print(format_table(["package", "status", "runner", "test files", "sources", "environment", "s", "reason"], rows))
        return 0

    from code_gym.languages.javascript.builder import BuildOptions, build_many, revalidate

    options = BuildOptions(workers=args.workers, max_candidates=args.max_candidates, progress=False)
    run = _builders.build(build_many, [spec for spec, _ in chosen], out, options, args.max_minutes)
    report, built, tasks, multi, candidates, history = (run.report, run.built, run.tasks, run.multi, run.candidates,
                                                        run.history)
    envs = [p for p in built if p.environment]
    cold = [p for p in envs if p.environment == "built"]

    all_tasks, sample_text = _builders.revalidated(revalidate, out, args.revalidate, args.workers)
    grading = grading_times(all_tasks, args.grading) if args.grading and all_tasks else []

    slice_note = run.slice_note(len(chosen), "packages", " (the list mixes large and small ones, large first)")
    per_package = _package_summary(report)
    body = f"""`python benchmarks/js_builder.py --max-minutes {args.max_minutes:g}{'' if args.max_candidates is None else f' --max-candidates {args.max_candidates}'} --workers {args.workers} --revalidate {args.revalidate}` over {len(chosen)} listed npm packages, {len(history)} run(s) into one folder, each going on where the last stopped: {run.runs_text()} (other sessions shared the machine).

- **{tasks} validated tasks** from {candidates} candidates in **{run.minutes:.1f} min** of wall time (**{run.rate:.0f} tasks/hour**), from **{sum(1 for p in built if p.tasks)} packages** of the {len(built)} the time boxes started ({len(report.projects) - len(built)} left pending).
{slice_note}- **Multi-region: {multi} of {tasks} ({multi / tasks if tasks else 0:.0%})**.
- Environments (node_modules per dependency set, npm with scripts off, a cold cache of the run's own): {len(cold)} built, {sum(p.environment_seconds for p in cold):.0f} s in all (median {statistics.median([p.environment_seconds for p in cold]) if cold else 0:.1f} s), {len(envs) - len(cold)} found in the cache (packages with the same dependency set); {len(built) - len(envs)} packages needed none.
- Re-validation (`tasks revalidate --language javascript`: the grader with canaries, fresh sandboxes, 3 reference runs), a random sample of {args.revalidate} (seed 0): {sample_text}.

- Gate rejections (of {candidates} candidates): {run.gates_text()}.

per package (tasks / candidates, multi-region in brackets; the full table is the run's manifest.json):
{per_package}

Grading time of a task's reference (median of 3 runs, seconds): the bare runner on the host (the task's command without records, hidden tests laid), the same command in the sandbox, and the grader (`grade`: copy, audit, canaries, records and their cross-checks):

{format_table(["task", "runner", "tests", "bare runner", "in sandbox", "grader", "grader / bare"], grading) if grading else "not measured"}

Packages checked and left out: {_left_out()}.
"""
    if not args.no_doc:
        write_section(TITLE, body)
    run.write_summary(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
