"""Escape attempts, each run on the local (bubblewrap) and the Docker backend: each is contained
and leaves nothing behind (no process, no file outside the workspace, no mount, no cgroup)."""
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from code_gym.sandbox import Limits, cgroup, make_sandbox
from sandbox_backends import require

# Docker-backed tests share one daemon: run them on one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("docker")

BACKENDS = ["bwrap", "docker"]
LIMITS = Limits(timeout=5, max_output=4096, file_size_bytes=1 << 20, memory_bytes=256 << 20, processes=64)


def _marker() -> str:
    return f"cg-escape-{uuid.uuid4().hex[:12]}"


def _running(marker: str) -> str:
    return subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout


def _mounts_under(path: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if str(path) in line]


def _own_groups() -> set[Path]:
    return {g for g in cgroup.leftover_groups(include_live=True) if g.name.startswith(f"{os.getpid()}-")}


@pytest.fixture(params=BACKENDS)
def box(request, tmp_path):
    require(request.param)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "task" / "hidden").mkdir(parents=True)
    (tmp_path / "task" / "hidden" / "test_hidden.py").write_text("ANSWER = 42\n")
    (tmp_path / "host_secret.txt").write_text("HOST-SECRET\n")
    sandbox = make_sandbox(request.param, ws, LIMITS, mask=(tmp_path / "task",))
    sandbox.ws, sandbox.tmp = ws, tmp_path
    groups_before = _own_groups()
    yield sandbox
    sandbox.close()
    assert _mounts_under(ws) == [], "a mount of the workspace outlived the sandbox"
    assert _own_groups() <= groups_before, "a command's cgroup was left"


def test_cannot_read_hidden_tests(box):
    r = box.exec(f"cat {box.tmp}/task/hidden/test_hidden.py; grep -rs ANSWER / --include=test_hidden.py | head -3")
    assert "ANSWER" not in r.output


def test_cannot_read_host_files(box):
    r = box.exec(f"cat {box.tmp}/host_secret.txt; cat /proc/1/environ | tr '\\0' '\\n' | head -50")
    assert "HOST-SECRET" not in r.output and "CODE_GYM" not in r.output


def test_cannot_see_host_processes(box):
    r = box.exec("ls /proc | grep -cE '^[0-9]+$'")
    assert int(r.output.split()[0]) < 20  # only the sandbox's own few processes


def test_cannot_write_outside_workspace(box):
    target = box.tmp / "outside.txt"
    box.exec(f"echo x > {target}; echo y > /usr/evil-{os.getpid()}; echo z > /etc/evil-{os.getpid()}; "
             f"mkdir -p {box.tmp}/made")
    assert not target.exists() and not (box.tmp / "made").exists()
    assert not Path(f"/usr/evil-{os.getpid()}").exists() and not Path(f"/etc/evil-{os.getpid()}").exists()


def test_symlink_out_of_workspace_leads_nowhere(box):
    outside = box.tmp / "outside_dir"
    outside.mkdir()
    box.exec(f"ln -s {outside} out && echo pwned > out/pwn.txt; ln -s {box.tmp}/host_secret.txt s && cat s")
    assert not (outside / "pwn.txt").exists()
    r = box.exec("cat s")
    assert "HOST-SECRET" not in r.output


def test_no_network_not_even_the_hosts_loopback(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True)
    thread.start()
    r = box.exec(f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('OPEN')\"; "
                 "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=2); print('OPEN')\"")
    server.close()
    thread.join(timeout=5)
    assert "OPEN" not in r.output and accepted in ([], [None])


def _accept(server: socket.socket):
    server.settimeout(4)
    try:
        return server.accept()
    except OSError:
        return None


def test_fork_bomb_is_contained(box):
    marker = _marker()
    r = box.exec(f"bomb() {{ bash -c 'exec -a {marker} sleep 30' & bomb | bomb & }}; bomb; sleep 2; echo host-still-forks",
                 timeout=3)
    assert r.exit_code is not None or r.timed_out
    time.sleep(0.3)
    assert _running(marker) == ""
    assert subprocess.run(["true"]).returncode == 0
    assert box.exec("echo alive").output.strip() == "alive"


def test_memory_bomb_is_contained(box):
    r = box.exec("python3 -c \"a = []\nwhile True: a.append(bytearray(32 << 20))\"")
    assert r.exit_code not in (0, None)
    assert box.exec("echo alive").output.strip() == "alive"


def test_infinite_loop_is_killed(box):
    marker = _marker()
    r = box.exec(f"bash -c 'exec -a {marker} bash -c \"while :; do :; done\"'", timeout=1)
    assert r.timed_out and r.exit_code is None
    time.sleep(0.3)
    assert _running(marker) == ""


def test_setsid_child_does_not_outlive_its_command(box):
    marker = _marker()
    r = box.exec(f"setsid bash -c 'exec -a {marker} sleep 60' > /dev/null 2>&1 & "
                 f"nohup bash -c 'exec -a {marker} sleep 60' > /dev/null 2>&1 & echo started")
    assert "started" in r.output
    time.sleep(0.3)
    assert _running(marker) == ""


def test_disk_fill_is_capped_and_tmp_does_not_persist(box):
    r = box.exec("head -c 5000000 /dev/zero > big.bin; head -c 5000000 /dev/zero > /tmp/big.bin; "
                 "for i in 1 2 3; do head -c 5000000 /dev/zero > /tmp/f$i; done; ls /tmp | wc -l")
    assert (box.ws / "big.bin").stat().st_size <= LIMITS.file_size_bytes
    box.exec("touch /tmp/leftover")
    box.close()
    again = make_sandbox(box.name if box.name != "docker" else "docker", box.ws, LIMITS)
    try:
        left = again.exec("ls -A /tmp").output.split()  # a warm container's /tmp is emptied on release
        assert not {"leftover", "big.bin", "f1"} & set(left), left
    finally:
        again.close()
    assert r.exit_code is not None


def test_output_flood_is_capped(box):
    r = box.exec("yes code-gym", timeout=2)
    assert r.truncated and len(r.output) < 2 * LIMITS.max_output
    r = box.exec("head -c 20000000 /dev/urandom | base64 -w0")
    assert r.truncated and len(r.output) < 2 * LIMITS.max_output
