"""Task supply at scale: multi-region tasks and their "regions" gate, statements written from the
failing tests' symptoms, multi-project builds that resume after a crash, re-validation, and a
multi-project build on a local Ray instance."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from code_gym.apps.cli import main
from code_gym.languages.python.builder import BuildOptions, build_tasks
from code_gym.languages.python.builder.batch import STATE_NAME, build_many
from code_gym.languages.python.builder.multiregion import apply_changes
from code_gym.languages.python.builder.mutations import functions, mutation_sites
from code_gym.grading.builder import Candidate
from code_gym.languages.python.builder.pipeline import _baseline, _evaluate, _Runs
from code_gym.languages.python.builder.project import open_project
from code_gym.languages.python.builder.revalidate import revalidate, revalidate_task
from code_gym.languages.python.builder.runner import run_tests
from code_gym.languages.python.builder.statement import REPORT_FLAGS, leak, parse_failures, write_statement
from code_gym.tasks.task import load_task_dir
from code_gym.grading.gates import validate_task
from test_builder import write_project

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    project = write_project(tmp_path_factory.mktemp("shop") / "shop")
    report = build_tasks(project, tmp_path_factory.mktemp("built"), BuildOptions(mutations_per_function=1, progress=False))
    return project, report


def _multi(report):
    return [t for t in report.tasks if "-plus-" in t.id]


def test_a_third_of_the_output_is_multi_region_and_passes_every_gate(shop):
    _, report = shop
    multi = _multi(report)
    assert report.manifest["multi_region"] == len(multi) and len(multi) * 3 >= len(report.tasks)
    across_files = [t for t in multi if len({h for h in t.reference_patch.splitlines() if h.startswith("+++ ")}) > 1]
    assert across_files, "the shop has three modules: some combination spans files"
    task = across_files[0]
    verdict = validate_task(task, runs=1)
    assert verdict.ok, verdict.problems
    assert verdict.hunks >= 2 and verdict.files >= 2
    # FAIL_TO_PASS is the union of the regions' failing tests
    assert len({t.split("::")[0] for t in task.fail_to_pass}) >= 2
    assert revalidate_task(task, runs=1).gate is None
    assert task.statement.count("### Report") >= 2


def test_the_regions_gate_rejects_a_region_no_test_needs(shop):
    project_dir, _ = shop
    project = open_project(project_dir, project_dir.parent / "work")
    options = BuildOptions(progress=False, workers=1)
    baseline, project = _baseline(project, options)
    runs = _Runs(project, baseline, options)
    sources = {p: (project.root / p).read_text() for p in ("shop/pricing.py", "shop/text.py")}
    [flip] = [c for c in mutation_sites(next(f for f in functions("shop/pricing.py", sources["shop/pricing.py"])
                                             if f.qualname == "apply_discount"), sources["shop/pricing.py"])
              if c.operator == "flip-comparison" and "percent < 100" in c.source]
    receipt = next(f for f in functions("shop/text.py", sources["shop/text.py"]) if f.qualname == "receipt_line")
    # max(width - ..., 1) -> max(..., 2): the test's receipt has five dots either way
    [equivalent] = [c for c in mutation_sites(receipt, sources["shop/text.py"]) if c.operator == "off-by-one"]
    tests = frozenset(t for t in runs.baseline.passed if "test_pricing" in t or "test_receipt_line" in t)
    staging = project_dir.parent / "staging"
    outcome = _evaluate(runs, Candidate("shop-combo", (flip, equivalent), tests), staging)
    assert outcome.result.gate == "regions" and "shop/text.py:receipt_line (off-by-one)" in outcome.result.reason
    # the same flip with a region that is needed passes the gate (and every later one)
    inventory = (project.root / "shop/inventory.py").read_text()
    [other] = [c for c in mutation_sites(next(f for f in functions("shop/inventory.py", inventory)
                                              if f.qualname == "Inventory.remove"), inventory)
               if c.operator == "flip-comparison"]
    both = frozenset(t for t in runs.baseline.passed if "test_inventory" in t or "test_pricing" in t)
    ok = _evaluate(runs, Candidate("shop-combo-2", (flip, other), both), staging)
    assert not hasattr(ok.result, "gate"), ok.result
    assert len(ok.result.fail_to_pass) == 5 and ok.result.statement.count("### Report") == 2


def test_changes_to_one_file_combine(shop):
    project_dir, _ = shop
    text = (project_dir / "shop/pricing.py").read_text()
    discount, total = functions("shop/pricing.py", text)
    a = next(c for c in mutation_sites(discount, text) if c.operator == "flip-comparison")
    b = next(c for c in mutation_sites(total, text) if c.operator == "swap-arguments")
    combined = apply_changes({"shop/pricing.py": text}, [a, b])["shop/pricing.py"]
    assert a.source.splitlines()[a.line - 1] in combined and b.source.splitlines()[b.line - 1] in combined
    assert combined.count("\n") == text.count("\n")
    with pytest.raises(ValueError, match="overlap"):
        apply_changes({"shop/pricing.py": text}, [a, a])


def test_statement_tells_the_symptom_not_the_function(tmp_path, shop):
    project_dir, _ = shop
    text = (project_dir / "shop/pricing.py").read_text()
    fn = next(f for f in functions("shop/pricing.py", text) if f.qualname == "apply_discount")
    [flip] = [c for c in mutation_sites(fn, text) if c.operator == "flip-comparison" and "percent < 100" in c.source]
    repo = tmp_path / "repo"
    shutil.copytree(project_dir, repo)
    (repo / "shop/pricing.py").write_text(flip.source)
    [run], _ = run_tests(repo, f"python -m pytest {REPORT_FLAGS}", ["tests/test_pricing.py"], 30)
    failing = sorted(t for t, o in run.outcomes.items() if o != "passed")
    assert failing == ["tests/test_pricing.py::test_discount", "tests/test_pricing.py::test_discount_is_clamped",
                       "tests/test_pricing.py::test_total"]
    symptoms = parse_failures(run.output, failing)
    assert symptoms["tests/test_pricing.py::test_total"].line == "assert total([10, 20], 50) == 15"
    statement = write_statement(flip, failing, symptoms, seed="x")
    # test_discount and test_discount_is_clamped call apply_discount by name; test_total shows it through total()
    assert "apply_discount" not in statement
    assert "`total([10, 20], 50)` gives `0.0` instead of `15`" in statement and "`test_total`" in statement
    assert ("shop/pricing.py" in statement or "`shop.pricing`" in statement) and leak(statement, flip) is None
    # a different seed phrases it differently, the facts stay
    other = {write_statement(flip, failing, symptoms, seed=str(i)).split("\n")[0] for i in range(8)}
    assert len(other) > 1
    # when every symptom names the function, it is named and its contract shown
    only_direct = write_statement(flip, failing[:1], symptoms, seed="x")
    assert "apply_discount(200, 25)" in only_direct and "def apply_discount(price, percent)" in only_direct


def test_symptoms_show_printed_values_where_the_test_names_a_variable():
    from code_gym.languages.python.builder.statement import Symptom, describe
    assert describe(Symptom("t", "assert triplet == result", ("assert (1, 2) == (3, 4)",))) == \
        "`triplet` gives `(1, 2)` instead of `(3, 4)`"
    assert describe(Symptom("t", "assert f(2) == [1]", ("assert [] == [1]", " +  where [] = f(2)"))) == \
        "`f(2)` gives `[]` instead of `[1]`"
    assert describe(Symptom("t", "d['k']", ("KeyError: 'k'",))) == "`d['k']` raises `KeyError: 'k'`"


def test_a_symptom_seen_the_same_way_in_several_classes_is_told_once():
    from code_gym.languages.python.builder.statement import Symptom, pick_symptoms

    text = "def h(x):\n    return x > 1\n"
    fn = next(iter(mutation_sites(next(iter(functions("m.py", text))), text)))  # a change of h, named by no symptom
    same = Symptom("t", "assert f(1) == 2", ("assert 1 == 2",))
    ids = [f"tests/test_m.py::{cls}::test_f" for cls in ("TestDict", "TestOrdered", "TestDefault")]
    chosen, _ = pick_symptoms(fn, ids + ["tests/test_m.py::test_g"],
                              {**dict.fromkeys(ids, same), "tests/test_m.py::test_g": Symptom("t", "g()", ("KeyError: 'k'",))})
    assert chosen == [("test_f", "`f(1)` gives `1` instead of `2`"), ("test_g", "`g()` raises `KeyError: 'k'`")]


def _projects(root: Path, names):
    for name in names:
        write_project(root / name)
        (root / name / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    return [str(root / n) for n in names]


def _state(out: Path) -> dict:
    try:
        return json.loads((out / STATE_NAME).read_text())["projects"]
    except (OSError, ValueError, KeyError):
        return {}


def test_a_killed_build_resumes_skipping_finished_projects(tmp_path):
    sources = _projects(tmp_path / "src", ["alpha", "beta", "gamma"])
    out = tmp_path / "out"
    args = [*sources, "--out", str(out), "--workers", "1", "--max-candidates", "3", "--mutations", "1",
            "--multi-ratio", "0.5"]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "code_gym.apps.cli", "tasks", "build", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            states = {k: v["status"] for k, v in _state(out).items()}
            if "built" in states.values() and "running" in states.values():
                break
            assert proc.poll() is None, "the build ended before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail(f"no project finished in time: {_state(out)}")
        os.killpg(proc.pid, signal.SIGKILL)  # a crash mid-project
    finally:
        proc.wait()
    before = _state(out)
    finished = [k for k, v in before.items() if v["status"] == "built"]
    crashed = [k for k, v in before.items() if v["status"] == "running"]
    assert finished and crashed
    stamps = {tid: (out / tid).stat().st_mtime_ns for k in finished for tid in before[k]["tasks"]}
    assert stamps
    assert main(["tasks", "build", *args]) == 0
    after = _state(out)
    assert {k: v["status"] for k, v in after.items()} == {"alpha": "built", "beta": "built", "gamma": "built"}
    for k in finished:  # skipped: the same result, its task folders untouched
        assert after[k] == before[k]
    assert stamps == {tid: (out / tid).stat().st_mtime_ns for tid in stamps}
    manifest = json.loads((out / "manifest.json").read_text())
    ids = sorted(t["id"] for t in manifest["tasks"])
    assert ids == sorted(t.id for t in load_task_dir(out)) and len(ids) == sum(len(v["tasks"]) for v in after.values())
    assert set(manifest["sources"]) == {"alpha", "beta", "gamma"}


def test_revalidate_reports_the_fraction_and_the_failing_gate(shop, tmp_path, capsys):
    _, report = shop
    out = tmp_path / "set"
    good = next(t for t in report.tasks if t.kind == "bugfix" and "-plus-" not in t.id)
    bad = next(t for t in report.tasks if t.id != good.id and "-plus-" not in t.id)
    for task in (good, bad):
        shutil.copytree(task.root, out / task.id)
    # the broken task's repo already holds the fix: its FAIL_TO_PASS tests pass untouched
    subprocess.run(["git", "apply", str(out / bad.id / "solution.patch")], cwd=out / bad.id / "repo", check=True)
    code = main(["tasks", "revalidate", str(out), "--runs", "1", "--workers", "2"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "1/2 tasks still pass every gate (50.0%)" in printed
    assert f"{bad.id}: fails: FAIL_TO_PASS tests pass on the untouched repo" in printed
    result = revalidate(load_task_dir(out), runs=1)
    assert result.fraction == 0.5 and result.by_gate() == {"fails": 1}


@pytest.mark.xdist_group("ray")
def test_projects_build_on_a_local_ray_instance(tmp_path):
    ray = pytest.importorskip("ray")
    sources = _projects(tmp_path / "src", ["north", "south"])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        report = build_many(sources, tmp_path / "out", BuildOptions(mutations_per_function=1, max_candidates=3,
                                                                    workers=1, progress=False, multi_ratio=0.5),
                            ray_address="auto")
    finally:
        ray.shutdown()
    assert {k: p.status for k, p in report.projects.items()} == {"north": "built", "south": "built"}
    tasks = load_task_dir(tmp_path / "out")
    assert {t.id.split("-")[0] for t in tasks} == {"north", "south"}
    assert sorted(t.id for t in tasks) == sorted(t["id"] for t in report.manifest["tasks"])
    assert validate_task(tasks[0], runs=1).ok
