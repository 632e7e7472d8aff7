"""benchmarks/tiny_lm_learning.py: --quick runs end to end through the real env (the hard task,
two methods, one seed, two updates) and writes its results without touching the docs; the
statistics (censoring, the paired bootstrap over seeds, the decision-token AUC) on made-up runs."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "tiny_lm_learning.py"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _bench():
    spec = importlib.util.spec_from_file_location("tiny_lm_learning", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _run(task, method, seed, reached, credit=(), budget=60):
    """A run whose P(reference) first reaches 0.9 after update `reached` (None: never, in `budget`)."""
    curve = [0.1] * (reached or budget + 1) + ([0.95] if reached else [])
    return {"task": task, "method": method, "seed": seed, "reached": reached, "episodes": 32, "parameters": 1,
            "p_reference": curve, "success": [0.5] * (len(curve) - 1), "parsed": [1.0],
            "credit": [list(c) for c in credit]}


def test_ratio_counts_censored_runs_at_the_budget_and_pairs_seeds():
    bench = _bench()
    runs = [_run("a", "GRPO", s, r) for s, r in enumerate([10, 20, None])]  # None: censored at 61
    runs += [_run("a", "X", s, r) for s, r in enumerate([5, 10, 30])]
    data = {"updates": 60, "runs": runs + [_run("b", "GRPO", 0, 1)]}
    mean, low, high = bench.ratio_ci(data, "X", "a", ("p", 0.9))
    assert mean == pytest.approx((5 + 10 + 30) / (10 + 20 + 61))
    assert low <= mean <= high and low >= min(5 / 10, 10 / 20, 30 / 61) - 1e-9
    # a seed without both methods' runs is left out of the pairing
    data["runs"].append(_run("a", "X", 3, 1))
    assert bench.ratio_ci(data, "X", "a", ("p", 0.9))[0] == pytest.approx(mean)
    assert bench.ratio_ci(data, "Y", "a", ("p", 0.9)) is None
    # a lower level is reached no later: every curve here jumps from 0.1 to 0.95
    assert bench.ratio_ci(data, "X", "a", ("p", 0.5))[0] == pytest.approx(mean)
    data["methods"], data["tasks"] = ["GRPO", "X"], ["a"]
    rows = {r[1]: r for r in bench.summary_rows(data)}
    assert rows["GRPO"][2:5] == ["2/3", f"{(10 + 20 + 61) / 3:.1f}", "1.00"]
    assert rows["X"][2] == "4/4" and rows["X"][4].startswith(f"{mean:.2f} [")
    # batch success averaged over 3 updates: 0.5 throughout here, never 0.9
    assert rows["GRPO"][5] == "0/3" and rows["GRPO"][6] == "61.0"
    assert bench.first_reach({"success": [0.8, 0.9, 0.9, 1.0]}, ("success", 0.9)) == 4


def test_decision_credit_auc():
    bench = _bench()
    assert bench.auc(np.array([1.0, 2.0]), np.array([0.0, 0.0])) == 1.0
    assert bench.auc(np.array([0.0]), np.array([0.0, 1.0])) == 0.25
    # GRPO-like credit: the same sign toward and away; a method that separates them: AUC 1
    credit = [(1, 0, 1, 0.5, 0.5), (1, 0, 0, 0.5, 0.5), (1, 0, 0, -0.5, 0.5), (2, 0, 1, 9.0, 1.0)]
    sharp = [(1, 0, 1, 1.0, 0.5), (1, 0, 0, -1.0, 0.5), (1, 0, 0, -0.5, 0.5)]
    data = {"methods": ["GRPO", "X"], "runs": [_run("a", "GRPO", 0, 1, credit), _run("a", "X", 0, 1, sharp)]}
    rows = {r[0]: r for r in bench.credit_table(data, 1)}
    assert rows["GRPO"][1] == "0.750" and rows["X"][1] == "1.000"  # update 2's row is not counted
    assert rows["X"][4] == "2.00"  # |A| at the decision twice the rest's


def test_quick_mode_writes_its_outputs(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    before = DOC.read_text()
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1])}
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--workers", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert DOC.read_text() == before
    data = json.loads((tmp_path / "tiny_lm_learning_quick.json").read_text())
    assert data["tasks"] == ["report-avg-aggregation"] and len(data["runs"]) == 2
    for r in data["runs"]:
        assert len(r["p_reference"]) >= 2 and r["episodes"] == 4 * (len(r["p_reference"]) - 1)
        # three regions, each with candidates to choose among: a decision per exact response's region
        assert r["credit"] and all(len(c) == 5 and c[1] in (0, 1, 2) and c[0] <= 2 for c in r["credit"])
    assert (tmp_path / "tiny_lm_learning_quick.png").stat().st_size > 0
    assert "| GRPO |" in run.stdout and "AUC at decisions" in run.stdout
    # a second run with the same settings keeps the finished runs
    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--workers", "1", "--out", str(tmp_path)],
                           capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0 and "resuming: 2 runs kept" in again.stderr
