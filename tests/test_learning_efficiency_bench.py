"""benchmarks/learning_efficiency.py --quick runs end to end (the branch policy, one task, two seeds)
and writes its results and plots; its numbers are not checked (the tiny LM's benchmark:
tests/test_tiny_lm_bench.py)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path


SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "learning_efficiency.py"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def test_quick_mode_writes_its_outputs(tmp_path):
    spec = importlib.util.spec_from_file_location("learning_efficiency", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # for its method and task names
    before = DOC.read_text()
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1])}
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--workers", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    assert DOC.read_text() == before  # --quick never writes the docs
    branch = json.loads((tmp_path / "learning_efficiency_quick.json").read_text())
    assert branch["tasks"] == [bench.QUICK_TASK] and branch["seeds"] == 2
    assert {r["method"] for r in branch["runs"]} == set(bench.METHODS)
    assert set(branch["diagnosis"]) == {"1", "all"}
    assert (tmp_path / "learning_efficiency_quick.png").stat().st_size > 0
    printed = run.stdout
    assert "| method | K |" in printed and "DiDPO (within)" in printed
