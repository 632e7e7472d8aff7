"""The OpenRLHF launch scripts (their dry runs print commands and start nothing). Parsing the
printed commands with OpenRLHF's own parser is in test_openrlhf.py; a training run on
train_didpo.sh's arguments, with the setup hook in every Ray worker, in test_openrlhf_trainer.py."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest


SCRIPTS = Path(__file__).resolve().parent.parent / "integrations" / "openrlhf" / "scripts"
LAUNCHERS = ["train_didpo.sh", "train_grpo_baseline.sh", "train_didpo_multinode.sh"]


@pytest.fixture
def run(tmp_path):
    """Runs a script with a `ray` on PATH that leaves a mark if anything calls it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_ray = bin_dir / "ray"
    fake_ray.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ray-was-called'}\n")
    fake_ray.chmod(0o755)

    def run_script(script, *args, **env):
        result = subprocess.run(["bash", str(SCRIPTS / script), *args], capture_output=True, text=True, cwd=tmp_path,
                                env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                                     "PYTHON": sys.executable, **env})
        assert not (tmp_path / "ray-was-called").exists(), f"{script} {args} started Ray"
        return result

    return run_script


def commands(stdout: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("script", LAUNCHERS)
def test_help_describes_the_script(run, script):
    result = run(script, "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage:") and "--dry-run" in result.stdout


def test_single_node_dry_run_prints_dataset_and_training_commands(run, tmp_path):
    result = run("train_didpo.sh", "--dry-run", "--train.seed", "7")
    assert result.returncode == 0, result.stderr
    dataset, training = commands(result.stdout)
    assert dataset == [sys.executable, "-m", "code_gym.apps.cli", "openrlhf", "dataset", "--out",
                       str(tmp_path / "code_gym_prompts.jsonl")]
    assert training[0] == "env" and training[1].startswith("CODE_GYM_AGENT={")
    assert training[2:5] == [sys.executable, "-m", "integrations.openrlhf.train"]
    options = training[5:]
    assert options[options.index("--algo.advantage.estimator") + 1] == "didpo"
    assert options[options.index("--actor.num_gpus_per_node") + 1] == "8"
    assert options[-2:] == ["--train.seed", "7"]  # extra arguments come last, so they win
    assert Path(options[options.index("--train.agent_func_path") + 1]) == SCRIPTS.parent / "agent_func.py"


def test_dry_run_skips_the_dataset_when_it_exists(run, tmp_path):
    data = tmp_path / "mine.jsonl"
    data.write_text("{}\n")
    [training] = commands(run("train_didpo.sh", "--dry-run", DATA=str(data)).stdout)
    assert training[training.index("--data.prompt_dataset") + 1] == str(data)


def test_grpo_baseline_runs_the_same_command_with_openrlhfs_grpo(run):
    didpo = commands(run("train_didpo.sh", "--dry-run").stdout)[-1]
    grpo = commands(run("train_grpo_baseline.sh", "--dry-run").stdout)[-1]
    differing = [(a, b) for a, b in zip(didpo, grpo) if a != b]
    assert len(didpo) == len(grpo) and ("didpo", "group_norm") in differing
    assert all("didpo" in a for a, _ in differing)  # the estimator, and the run name in output folders


def test_multinode_roles(run):
    head = commands(run("train_didpo_multinode.sh", "head", "--head-address", "10.1.2.3", "--dry-run").stdout)
    assert head == [["ray", "start", "--head", "--node-ip-address", "10.1.2.3", "--port", "6379",
                     "--dashboard-host", "0.0.0.0", "--num-gpus", "8"]]
    worker = commands(run("train_didpo_multinode.sh", "worker", "--head-address", "10.1.2.3", "--dry-run").stdout)
    assert worker == [["ray", "start", "--address", "10.1.2.3:6379", "--num-gpus", "8"]]
    submit = commands(run("train_didpo_multinode.sh", "submit", "--head-address", "10.1.2.3", "--dry-run",
                          NODES="4").stdout)[-1]
    assert submit[:5] == ["ray", "job", "submit", "--address", "http://10.1.2.3:8265"]
    runtime_env = submit[submit.index("--runtime-env-json") + 1]
    assert '"CODE_GYM_AGENT"' in runtime_env
    # the preflight waits for all 4 nodes (the driver runs with the job's env_vars)
    assert json.loads(runtime_env)["env_vars"]["CODE_GYM_PREFLIGHT_NODES"] == "4"
    train = submit[submit.index("--") + 1:]
    assert train[1:3] == ["-m", "integrations.openrlhf.train"]
    assert train[train.index("--actor.num_nodes") + 1] == "4" and train[train.index("--vllm.num_engines") + 1] == "32"


def test_multinode_without_a_role_prints_usage(run):
    result = run("train_didpo_multinode.sh", "--dry-run")
    assert result.returncode == 2 and result.stderr.startswith("usage:")
