"""`python -m integrations.openrlhf.train --help` on a machine without OpenRLHF's GPU stack (issue 31):
the flags print, code-gym's among them; a training run there says what is missing instead of a
traceback."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("openrlhf")


def _train(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no test's shim of the GPU stack
    return subprocess.run([sys.executable, "-m", "integrations.openrlhf.train", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def _installed(module: str) -> bool:
    return _python(f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)") == "True"


def _python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.strip()


def test_help_prints_every_flag_without_the_gpu_stack():
    done = _train("--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--algo.advantage.estimator" in done.stdout and "didpo-split" in done.stdout
    assert "--credit.options" in done.stdout and "--rollout.n_samples_per_prompt" in done.stdout


def test_a_run_without_the_gpu_stack_names_what_is_missing():
    if _installed("flash_attn"):
        pytest.skip("flash_attn is installed here")
    done = _train("--algo.advantage.estimator", "didpo", "--rollout.n_samples_per_prompt", "2")
    assert done.returncode == 1
    assert "needs flash_attn" in done.stderr and "Traceback" not in done.stderr
