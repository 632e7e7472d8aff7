"""A killed process's leftovers (workspace and quota mounts, warm-runner slot, cgroups, containers)
are gone once the next process has made its first sandbox: no explicit `reap_all` call."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from code_gym.sandbox import cgroup
from sandbox_backends import require

pytestmark = pytest.mark.xdist_group("docker")

CRASHING = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from code_gym.languages.python.runtime import python_runtime
    from code_gym.sandbox import Limits, make_sandbox
    from code_gym.workspace.working_copy import Workspace

    src = Path(sys.argv[2])
    ws = Workspace(src)
    box = make_sandbox(sys.argv[1], ws.root, Limits(timeout=60), runtime=python_runtime())
    assert "1 passed" in box.exec("python -m pytest -q -p no:cacheprovider test_ok.py").output
    threading.Thread(target=box.exec, args=("sleep 60",), daemon=True).start()
    time.sleep(0.5)
    print("ready", flush=True)
    time.sleep(60)
""")

NEXT = textwrap.dedent("""
    import sys, tempfile
    from code_gym.sandbox import make_sandbox

    with tempfile.TemporaryDirectory() as folder:
        make_sandbox(sys.argv[1], folder).close()
""")


def _left_by(pid: int) -> dict[str, list[str]]:
    tag = f"-{pid}-"
    found = {
        "temp dirs": [str(p) for p in Path("/tmp").glob("code-gym-*") if tag in p.name],
        "mounts": [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
                   if "/tmp/code-gym-" in line and tag in line],
        "cgroups": [str(g) for g in cgroup.leftover_groups(include_live=True) if g.name.startswith(f"{pid}-")],
        "containers": [],
    }
    try:
        from code_gym.sandbox.docker import OWNER_LABEL, client, docker_unavailable

        if docker_unavailable() is None:
            found["containers"] = [c.name for c in client().containers.list(all=True)
                                   if c.labels.get(OWNER_LABEL, "").endswith(f":{pid}")]
    except ImportError:
        pass
    return found


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_leftovers_of_a_killed_process_are_reaped_by_the_next_one(kind, tmp_path):
    require(kind)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    crashing = subprocess.Popen([sys.executable, "-c", CRASHING, kind, str(tmp_path / "src")], env=env,
                                stdout=subprocess.PIPE, text=True)
    try:
        assert crashing.stdout.readline().strip() == "ready"
        left = _left_by(crashing.pid)
        assert left["temp dirs"] and left["mounts"], left  # there is something to reap
        if kind == "docker":
            assert left["containers"], left
        else:
            assert left["cgroups"] or not cgroup.available(), left
    finally:
        crashing.send_signal(signal.SIGKILL)
        crashing.wait()
    subprocess.run([sys.executable, "-c", NEXT, kind], env=env, check=True, timeout=120)
    assert _left_by(crashing.pid) == {"temp dirs": [], "mounts": [], "cgroups": [], "containers": []}


def test_every_temp_folder_code_gym_makes_names_its_process():
    # the reaper removes a folder only when its name says which process made it (owned_prefix);
    # builder runs and environment builds made `code-gym-build-XXXX` folders that outlived a killed
    # process forever
    import re

    root = Path(__file__).resolve().parents[1] / "code_gym"
    unowned = [f"{path.relative_to(root)}:{n}" for path in root.rglob("*.py")
               for n, line in enumerate(path.read_text().splitlines(), 1)
               if re.search(r"(mkdtemp|TemporaryDirectory)\(prefix=(TEMP_PREFIX|[\"']code-gym-)", line)]
    assert unowned == [], unowned
