"""The Ray backend on a local Ray instance: a whole episode runs its commands in a Ray actor."""
import pytest

from code_gym.sandbox import Limits, make_sandbox
from sandbox_backends import IN_CI, PYTHON, require

try:
    import ray
except ImportError:
    ray = None
    if IN_CI:
        raise
# every test that starts a local Ray instance is in xdist group "ray": two at once on one machine
# crash each other's workers (the OpenRLHF trainer's preflight died that way in the full suite)
pytestmark = [pytest.mark.skipif(ray is None, reason="ray is not installed: pip install 'code-gym[ray]'"),
              pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def backend():
    require("bwrap")
    from code_gym.sandbox.ray import RayBackend

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield RayBackend(num_cpus=0.5)
    finally:
        ray.shutdown()


def test_files_travel_both_ways(backend, tmp_path):
    (tmp_path / "keep.txt").write_text("host\n")
    (tmp_path / "gone.txt").write_text("x\n")
    box = make_sandbox(backend, tmp_path, Limits(timeout=20), runtime=PYTHON)
    try:
        assert box.name == "ray:bwrap"
        (tmp_path / "edited_here.txt").write_text("from the host\n")
        r = box.exec("cat edited_here.txt; echo remote > made_there.txt; rm gone.txt; ln -s keep.txt link")
        assert r.exit_code == 0 and r.output == "from the host\n"
        assert (tmp_path / "made_there.txt").read_text() == "remote\n"
        assert not (tmp_path / "gone.txt").exists() and (tmp_path / "link").is_symlink()
        results = tmp_path.parent / "results"
        results.mkdir()
        binds = {results: "/results"}
        box.exec(f"echo junit > {box.inside(results, binds)}/junit.xml", binds=binds)
        assert (results / "junit.xml").read_text() == "junit\n"
    finally:
        box.close()


def test_episode_resolves_through_ray(backend, tiny_task):
    from code_gym.env.environment import CodeRepoEnv
    from code_gym.actions.replay import hermes, patch_to_calls

    env = CodeRepoEnv(task=tiny_task, isolation=backend)
    try:
        _, info = env.reset(seed=0)
        assert info["sandbox"] == "ray:bwrap"
        env.step(hermes(patch_to_calls(tiny_task.reference_patch, tiny_task.repo)))
        _, _, _, _, info = env.step(hermes([{"name": "bash", "arguments": {"command": "echo '# note' >> calc/ops.py"}}]))
        assert info["changed_files"] == ["calc/ops.py"]
        _, reward, terminated, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
        assert terminated and reward == 1.0 and info["resolved"]
    finally:
        env.close()


def test_a_node_whose_bubblewrap_fails_says_so_on_the_driver(backend, tmp_path):
    """A worker's own warnings stay in its log (log_to_driver=False here, and on most clusters no
    one reads them): a node that falls back from bubblewrap to a weaker sandbox must say so where
    the episode is made. The worker here finds a `bwrap` that fails, first on its PATH."""
    import os

    from code_gym.sandbox.ray import RayBackend

    require("unshare")
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: No space left on device' >&2\n"
                                  "exit 1\n")
    (broken / "bwrap").chmod(0o755)
    (tmp_path / "ws").mkdir()
    nodes = RayBackend(num_cpus=0.5)
    nodes.actor_class = nodes.actor_class.options(
        runtime_env={"env_vars": {"PATH": f"{broken}:{os.environ['PATH']}"}})
    with pytest.warns(UserWarning, match=r"on Ray node .*bubblewrap is installed but failed its probe "
                                         r"\(bwrap: Creating new namespace failed"):
        box = make_sandbox(nodes, tmp_path / "ws", Limits(timeout=20), runtime=PYTHON)
    try:
        assert box.name == "ray:unshare"
        assert box.exec("echo ok").output == "ok\n"
    finally:
        box.close()
