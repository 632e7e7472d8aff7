"""What the builder benchmarks (js_builder.py, go_builder.py, rust_builder.py) share: the machine's
load, the list's check (each source opened, no test run), a timed median, the time-boxed build of a
list into one folder whose runs add up (OUT/runs.json), the re-validation of a sample, and the
report's common lines (the runs, the gates, the rate, OUT/summary.json). Each benchmark keeps its
list, its grading-time comparison and its section's wording."""
from __future__ import annotations

import json
import os
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from code_gym.tasks.task import load_task_dir


def load() -> str:
    """The machine's load averages, "1.0 / 2.0 / 3.0"."""
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def fill(text: str) -> str:
    return textwrap.fill(text, 100, break_on_hyphens=False, break_long_words=False)


def median_time(fn, n: int = 3) -> float:
    """The median of `n` timed calls of `fn`, in seconds."""
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        fn()
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def check_list(chosen, open_project: Callable[[str, Path], object], columns: Callable[[object], list],
               blanks: int) -> list[list]:
    """The list's check, no test run: each source opened (`open_project(name, workdir)`), a row
    [name, "ok", *columns(project), seconds, ""], or [name, "refused", "-" * blanks, seconds, the
    reason]; each row printed as it comes."""
    rows = []
    for name, _ in chosen:
        t0 = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="code-gym-check-") as work:
                project = open_project(name, Path(work))
            rows.append([name, "ok", *columns(project), f"{time.monotonic() - t0:.0f}", ""])
        except Exception as exc:  # noqa: BLE001 - the reason is the row
            rows.append([name, "refused", *["-"] * blanks, f"{time.monotonic() - t0:.0f}",
                         " ".join(str(exc).split())[:160]])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def own_cache(out: Path, shared: bool) -> None:
    """`out` made; unless `shared`, the run's environments and caches go into OUT/cache (cold ones)."""
    out.mkdir(parents=True, exist_ok=True)
    if not shared:
        os.environ["CODE_GYM_CACHE"] = str((out / "cache").resolve())


@dataclass
class Run:
    """A time-boxed build into OUT/tasks, with the runs before it into the same folder."""
    report: object  # the BatchReport
    built: list  # the projects this run's boxes started
    tasks: int
    multi: int
    candidates: int
    history: list[dict]  # OUT/runs.json: every run into this folder (a resumed run goes on where one stopped)
    gates: dict[str, int]

    @property
    def minutes(self) -> float:
        return sum(r["minutes"] for r in self.history)

    @property
    def rate(self) -> float:
        """Tasks per hour over every run's wall time."""
        hours = self.minutes / 60
        return self.tasks / hours if hours else 0

    def runs_text(self) -> str:
        """Each run: when, its box, its minutes and the load before and after."""
        return '; '.join(f"{r['started']}, a {r['max_minutes']:g} min box, {r['minutes']:.1f} min, load {r['load'][0]} "
                         f"before and {r['load'][1]} after" for r in self.history)

    def gates_text(self) -> str:
        """Each gate's rejections and their share of the candidates."""
        return ", ".join(f"{g} {n} ({n / self.candidates:.1%})" for g, n in self.gates.items()
                         if n and self.candidates) or "none"

    def slice_note(self, listed: int, unit: str, more: str = "") -> str:
        """A line for a run that did not reach every source of the list ("" when it did)."""
        if len(self.built) >= listed:
            return ""
        return (f"- Time-boxed ({', '.join(str(r['max_minutes']) for r in self.history)} min boxes; each run's {unit} "
                f"finish after its box): at this rate one hour gives about {self.rate:.0f} "
                f"tasks, if the {unit} not reached yield like those that were{more}.\n")

    def write_summary(self, out: Path) -> None:
        (out / "summary.json").write_text(json.dumps({"tasks": self.tasks, "multi_region": self.multi,
                                                      "candidates": self.candidates, "minutes": self.minutes,
                                                      "gates": self.gates}, indent=1))


def build(build_many, sources: list[str], out: Path, options, max_minutes: float) -> Run:
    """`build_many` of `sources` into OUT/tasks for at most `max_minutes`, this run added to OUT/runs.json."""
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    report = build_many(sources, out / "tasks", options, max_minutes=max_minutes)
    load_after = load()
    built = [p for p in report.projects.values() if p.status in ("built", "rejected", "environment", "error")]
    runs_file = out / "runs.json"
    history = json.loads(runs_file.read_text()) if runs_file.exists() else []
    history.append({"started": started, "minutes": round(report.duration / 60, 2), "max_minutes": max_minutes,
                    "load": [load_before, load_after]})
    runs_file.write_text(json.dumps(history, indent=1) + "\n")
    gates = {g: sum(p.gates.get(g, 0) for p in built) for g in report.manifest["gates"]}
    print(report.summary())
    return Run(report, built, sum(len(p.tasks) for p in built), sum(p.multi_region for p in built),
               sum(p.candidates for p in built), history, gates)


def revalidated(revalidate, out: Path, sample: int, workers: int) -> tuple[list, str]:
    """Every task in OUT/tasks, and the re-validation of a random sample of `sample` of them (seed
    0, 3 reference runs) in words ("not run" with no sample or no task)."""
    all_tasks = load_task_dir(out / "tasks")
    if not (sample and all_tasks):
        return all_tasks, "not run"
    t0 = time.monotonic()
    result = revalidate(all_tasks, runs=3, workers=workers, sample=sample, seed=0)
    print(result.summary())
    failed = ", ".join(f"{g} {n}" for g, n in result.by_gate().items()) or "none"
    multi = [r for r in result.results if r.regions > 1]
    return all_tasks, (f"**{sum(r.gate is None for r in result.results)}/{len(result.results)} "
                       f"({result.fraction:.1%})** pass every gate (multi-region "
                       f"{sum(r.gate is None for r in multi)}/{len(multi)}); failures by gate: {failed}; "
                       f"{(time.monotonic() - t0) / 60:.1f} min")
