"""The privilege model of each backend (docs/sandboxes.md, "Privileges"), the ownership of what a
sandbox writes, the disk quota option and bounded step diffs."""
import hashlib
import os
from pathlib import Path

import pytest

from code_gym.util.hostfs import MAX_DIFF_BYTES
from code_gym.sandbox import Limits, make_sandbox
from code_gym.workspace.working_copy import Workspace
from sandbox_backends import PYTHON, require

pytestmark = pytest.mark.xdist_group("docker")


@pytest.fixture
def episode(request, tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("A = 1\n")
    ws = Workspace(tmp_path / "src")
    yield ws
    ws.close()


def test_unshare_fallback_has_no_capabilities_and_a_read_only_system(tmp_path):
    require("unshare")
    task = tmp_path / "task"
    (task / "hidden").mkdir(parents=True)
    (task / "hidden" / "t.py").write_text("HIDDEN\n")
    (tmp_path / "ws").mkdir()
    box = make_sandbox("unshare", tmp_path / "ws", Limits(timeout=10), mask=(task,), runtime=PYTHON)
    r = box.exec(f"grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status; id -u; "
                 f"mount -t tmpfs none /mnt && echo MOUNTED; umount {task}; cat {task}/hidden/t.py; "
                 f"touch /usr/code-gym-unshare-probe && echo WROTE")
    assert "CapEff:\t0000000000000000" in r.output and "CapBnd:\t0000000000000000" in r.output, r.output
    assert "NoNewPrivs:\t1" in r.output and "\n1000\n" in r.output, r.output
    assert "MOUNTED" not in r.output and "HIDDEN" not in r.output and "WROTE" not in r.output, r.output
    assert not Path("/usr/code-gym-unshare-probe").exists()


def test_unshare_fallback_has_a_private_tmp(tmp_path):
    """The workspace and a bound results folder (both under the host's /tmp) stay reachable and
    writable; what a command writes elsewhere in /tmp is its own and gone after it."""
    require("unshare")
    ws, results = tmp_path / "ws", tmp_path / "results"
    ws.mkdir()
    results.mkdir()
    box = make_sandbox("unshare", ws, Limits(timeout=10), runtime=PYTHON)
    binds = {results: "/unused"}
    r = box.exec(f"pwd; echo w > in-ws; echo r > {box.inside(results, binds)}/junit.xml; "
                 f"echo left > /tmp/code-gym-unshare-left; ls /tmp | wc -l", binds=binds)
    assert r.output.split()[0] == str(ws.resolve()), r.output
    assert (ws / "in-ws").read_text() == "w\n" and (results / "junit.xml").read_text() == "r\n"
    assert not Path("/tmp/code-gym-unshare-left").exists()
    assert "left" not in box.exec("cat /tmp/code-gym-unshare-left 2>&1 || true").output.replace("unshare-left", "")


@pytest.mark.parametrize("kind", ["bwrap", "unshare", "docker"])
def test_files_the_sandbox_writes_belong_to_the_host_user(kind, episode):
    """Files a command creates or edits in the workspace are the host process's own: the editor
    tools and the grader read and rewrite them, and the diff sees each change."""
    require(kind)
    box = make_sandbox(kind, episode.root, Limits(timeout=20), runtime=PYTHON)
    try:
        box.exec("echo 'B = 2' > pkg/new.py && echo 'A = 3' > pkg/mod.py && mkdir -p data && echo x > data/f")
        new = episode.root / "pkg" / "new.py"
        assert {new.stat().st_uid, (episode.root / "data").stat().st_uid} == {os.getuid()}
        new.write_text("B = 4\n")  # the host side edits what the sandbox wrote ...
        (episode.root / "host.py").write_text("H = 1\n")
        r = box.exec("cat pkg/new.py && echo 'H = 2' >> host.py && cat host.py")  # ... and the other way round
        assert r.output.split() == ["B", "=", "4", "H", "=", "1", "H", "=", "2"], r.output
    finally:
        box.close()
    episode.scan_changes()
    assert episode.changed_files() == {"pkg/mod.py": b"A = 3\n", "pkg/new.py": b"B = 4\n", "data/f": b"x\n",
                       "host.py": b"H = 1\nH = 2\n"}


def test_env_disk_quota_option_and_message(tiny_task):
    from code_gym.env.environment import CodeRepoEnv
    from code_gym.actions.replay import hermes

    env = CodeRepoEnv(task=tiny_task, disk_quota=8 << 20)
    try:
        env.reset()
        assert env.ws.quota == 8 << 20
        obs, *_ = env.step(hermes([{"name": "bash", "arguments": {
            "command": "for i in 1 2 3; do head -c 4000000 /dev/zero > f$i || echo FULL; done"}}]))
        assert "FULL" in obs and "disk quota of 8 MiB is full" in obs, obs
    finally:
        env.close()


def test_workspace_disk_quota_refuses_bad_values(tmp_path):
    with pytest.raises(ValueError, match="disk_quota"):
        Workspace(tmp_path, disk_quota=-1)


def test_large_changed_file_is_diffed_by_size_and_hash(episode):
    big = b"line\n" * (MAX_DIFF_BYTES // 5 + 1)
    (episode.root / "big.txt").write_bytes(big)
    (episode.root / "pkg" / "mod.py").write_text("A = 2\n")
    diffs = {d.path: d for d in episode.scan_changes()}
    oid = hashlib.sha1(b"blob %d\0" % len(big) + big).hexdigest()
    assert diffs["big.txt"].binary and f"index {'0' * 40}..{oid}" in diffs["big.txt"].text
    assert not diffs["pkg/mod.py"].binary and "+A = 2" in diffs["pkg/mod.py"].text
    assert episode.changed_files()["big.txt"] == big  # the grader still gets the whole file
    (episode.root / "big.txt").write_bytes(big[:-1] + b"X")
    assert [d.path for d in episode.scan_changes()] == ["big.txt"]
    assert episode.scan_changes() == []
