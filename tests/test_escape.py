"""Escape attempts, each run on the local (bubblewrap) and the Docker backend: each is contained
and leaves nothing behind (no process, no file outside the workspace, no mount, no cgroup)."""
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import uuid
from pathlib import Path

import pytest

from code_gym.sandbox import Limits, cgroup, make_sandbox, runner
from code_gym.workspace.working_copy import Workspace, default_disk_quota
from sandbox_backends import PYTHON, require

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
    """This process's cgroups, less those of its idle warm runners (they live until the process ends)."""
    runners = {p for _, zygote in runner.LOCAL_RUNNERS.idle if zygote.group for p in zygote.group.paths}
    return {g for g in cgroup.leftover_groups(include_live=True) if g.name.startswith(f"{os.getpid()}-")} - runners


@pytest.fixture(params=BACKENDS)
def box(request, tmp_path):
    require(request.param)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "task" / "hidden").mkdir(parents=True)
    (tmp_path / "task" / "hidden" / "test_hidden.py").write_text("ANSWER = 42\n")
    (tmp_path / "host_secret.txt").write_text("HOST-SECRET\n")
    sandbox = make_sandbox(request.param, ws, LIMITS, mask=(tmp_path / "task",), runtime=PYTHON)
    sandbox.ws, sandbox.tmp = ws, tmp_path
    groups_before = _own_groups()
    yield sandbox
    sandbox.close()
    assert _mounts_under(ws) == [], "a mount of the workspace outlived the sandbox"
    assert _own_groups() <= groups_before, "a command's cgroup was left"


DEFAULT_QUOTA = default_disk_quota()


@pytest.fixture(params=BACKENDS)
def box_ws(request, tmp_path):
    """A sandbox on a real episode workspace (overlay, disk quota) with the default limits."""
    require(request.param)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("A = 1\n")
    ws = Workspace(tmp_path / "src")
    sandbox = make_sandbox(request.param, ws.root, Limits(timeout=120), runtime=PYTHON)
    groups_before = _own_groups()
    yield sandbox, ws
    sandbox.close()
    ws.close()
    assert _mounts_under(ws.base) == [] and not ws.base.exists()
    assert _own_groups() <= groups_before, "a command's cgroup was left"


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) << 10


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
    again = make_sandbox(box.name if box.name != "docker" else "docker", box.ws, LIMITS, runtime=PYTHON)
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


# --- Privileges, persistence, the host's view, resources (issue 13). Each docstring says what the
# attempt achieved on the code before the change, measured on the local backend (bubblewrap started
# by root, as on the project's machines) and on Docker.

SITE = Path(sysconfig.get_paths()["purelib"])


def _status_field(output: str, name: str) -> str:
    return next(line.split()[1] for line in output.splitlines() if line.startswith(name + ":"))


def test_no_capabilities_and_no_root_uid_under_bubblewrap(box):
    """Before: bubblewrap ran as root with every capability (CapEff 000001fffeffffff, uid 0);
    Docker: uid 0 with no capabilities. Docker still runs as the env's uid (docs/sandboxes.md,
    "Privileges": a non-root container user could not write the workspace)."""
    r = box.exec("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Uid|Gid):' /proc/self/status; id -u")
    for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(_status_field(r.output, cap), 16) == 0, r.output
    assert _status_field(r.output, "NoNewPrivs") == "1", r.output
    uid = r.output.split()[-1]
    assert uid == ("1000" if box.name == "bwrap" else str(os.getuid())), r.output


def test_cannot_mount_a_file_system(box):
    """Before (bwrap): `mount -t tmpfs` inside succeeded (CAP_SYS_ADMIN)."""
    r = box.exec("mkdir -p m && mount -t tmpfs none m && echo MOUNTED; "
                 "mount -t proc none m 2>/dev/null && echo MOUNTED; grep -c ' /repo/m ' /proc/self/mountinfo")
    assert "MOUNTED" not in r.output, r.output
    assert _mounts_under(box.ws) == []


def test_cannot_remount_the_system_read_write(box):
    """Before (bwrap): `mount -o remount,bind,rw /usr` succeeded and a file written there landed in
    the host's /usr, as root."""
    target = Path(f"/usr/lib/code-gym-escape-{uuid.uuid4().hex[:8]}")
    r = box.exec(f"mount -o remount,bind,rw /usr; mount -o remount,rw /; touch {target} && echo WROTE")
    assert "WROTE" not in r.output and not target.exists(), r.output
    target.unlink(missing_ok=True)


def test_cannot_unmount_the_task_mask(box, tmp_path):
    """Before (bwrap): `umount` of the tmpfs that masks a task folder lying in a bound folder (a task
    shipped in the installed wheel) showed its hidden tests."""
    task = Path(f"/usr/local/lib/code-gym-escape-{uuid.uuid4().hex[:8]}")
    (task / "hidden").mkdir(parents=True)
    try:
        (task / "hidden" / "test_secret.py").write_text("ANSWER = 'HIDDEN-TEST-BODY'\n")
        sandbox = make_sandbox(box.name, box.ws, LIMITS, mask=(task,), runtime=PYTHON)
        try:
            r = sandbox.exec(f"umount -l {task}; umount {task}; cat {task}/hidden/test_secret.py; "
                             f"ls {task.parent} | grep -c code-gym-escape")
        finally:
            sandbox.close()
        assert "HIDDEN-TEST-BODY" not in r.output, r.output
    finally:
        shutil.rmtree(task)


def test_cannot_write_the_interpreter_or_site_packages(box):
    """Before (bwrap): after a remount, appending to an installed module (pytest's, so that every
    later grade passes) and writing into the Python prefix both succeeded on the host. The chown
    failed before too (EINVAL: bubblewrap's user namespace mapped uid 0 only)."""
    probe = SITE / f"code_gym_escape_probe_{uuid.uuid4().hex[:8]}.py"
    probe.write_text("X = 1\n")
    prefix_file = Path(sys.prefix) / f"code-gym-escape-{uuid.uuid4().hex[:8]}"
    try:
        r = box.exec(f"for d in /usr {sys.prefix} {sys.base_prefix} {SITE}; do mount -o remount,bind,rw $d; done; "
                     f"echo 'X = 2' >> {probe} && echo WROTE; touch {prefix_file} && echo WROTE; "
                     f"chown 12345 {probe} && echo WROTE; "
                     "python3 -c 'import pytest, os; open(pytest.__file__, \"a\").write(\"\\n\")' && echo WROTE")
        assert "WROTE" not in r.output, r.output
        assert probe.read_text() == "X = 1\n" and probe.stat().st_uid == os.getuid() and not prefix_file.exists()
    finally:
        probe.unlink()
        prefix_file.unlink(missing_ok=True)


def test_pth_file_does_not_run_on_the_host(box, tmp_path):
    """Before (bwrap): a `.pth` file dropped into site-packages after a remount ran in the next host
    Python, outside any sandbox (host code execution as root)."""
    marker = tmp_path / "pth-ran"
    pth = SITE / f"zz-code-gym-escape-{uuid.uuid4().hex[:8]}.pth"
    try:
        box.exec(f"mount -o remount,bind,rw {SITE}; mount -o remount,bind,rw {sys.prefix}; "
                 f"echo \"import os; open('{marker}', 'w').close()\" > {pth}; "
                 f"echo \"import os; open('{marker}', 'w').close()\" > $(python3 -c 'import site; print(site.getsitepackages()[0])')/{pth.name}")
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        assert not pth.exists() and not marker.exists()
    finally:
        pth.unlink(missing_ok=True)


def test_cannot_read_the_host_disk_through_a_device_node(box):
    """Before (bwrap): `mknod` of the host's root block device, then a remount of /tmp with `dev`,
    read the raw disk (every task's hidden tests with it)."""
    dev = os.stat("/").st_dev
    # the refusals go to stderr, which Docker may interleave after the counts: only the counts are read
    r = box.exec(f"mknod /tmp/disk b {os.major(dev)} {os.minor(dev)} 2>/dev/null; mount -o remount,dev /tmp 2>/dev/null; "
                 "mknod disk b {0} {1} 2>/dev/null; for d in /tmp/disk disk; do head -c 4096 $d 2>/dev/null | wc -c; done"
                 .format(os.major(dev), os.minor(dev)))
    assert r.output.split()[-2:] == ["0", "0"], r.output


def test_cannot_lift_its_own_process_limit(box):
    """Before (bwrap): mounting the cgroup v1 `pids` hierarchy inside and writing `max` to the
    command's own pids.max lifted the fork-bomb limit."""
    r = box.exec("mkdir -p /tmp/cg && mount -t cgroup -o pids none /tmp/cg && "
                 "g=/tmp/cg$(grep pids /proc/self/cgroup | cut -d: -f3) && echo max > $g/pids.max && "
                 "grep -qx max $g/pids.max && echo LIFTED")
    assert "LIFTED" not in r.output, r.output


def test_tmp_is_private_to_each_command(box):
    """Before (Docker): /tmp and /dev/shm lasted across the commands of an episode (emptied only
    when the container went back to the pool)."""
    box.exec("echo one > /tmp/left; echo one > /dev/shm/left; mkdir /tmp/d; chmod 000 /tmp/d")
    r = box.exec("cat /tmp/left /dev/shm/left 2>/dev/null; ls -A /tmp /dev/shm")
    words = r.output.split()  # whole words: a bound folder's name under /tmp (a checkout) may hold "one"
    assert "one" not in words and "left" not in words and "d" not in words, r.output


def test_warm_test_runs_get_a_fresh_tmp(box):
    """Before (bwrap): the warm runner's /tmp lasted across test runs and episodes: a file a test
    wrote was there for the next run's tests."""
    (box.ws / "test_a.py").write_text(
        "import os\n\ndef test_write():\n    open('/tmp/channel', 'w').write('SECRET')\n"
        "    os.makedirs('/dev/shm/d', exist_ok=True)\n\n"
        "def test_read():\n    assert not os.path.exists('/tmp/channel') or open('/tmp/channel').read() == 'SECRET'\n")
    first = box.exec("python -m pytest -q -p no:cacheprovider test_a.py", timeout=60)
    assert "2 passed" in first.output, first.output
    (box.ws / "test_a.py").write_text(
        "import os\n\ndef test_nothing_left():\n"
        "    bound = {line.split()[4].split('/')[2] for line in open('/proc/self/mountinfo')\n"
        "             if line.split()[4].startswith('/tmp/')}  # a virtualenv under the host's /tmp\n"
        "    assert set(os.listdir('/tmp')) <= bound and not os.path.exists('/dev/shm/d'), os.listdir('/tmp')\n")
    second = box.exec("python -m pytest -q -p no:cacheprovider test_a.py", timeout=60)
    assert "1 passed" in second.output, second.output


def test_second_episode_sees_nothing_the_first_wrote(box, tmp_path):
    """Before (bwrap): a file a test of one episode wrote in the warm runner's /tmp was readable by
    the tests of the next episode in the same process (a channel between episodes)."""
    (box.ws / "test_w.py").write_text(
        "def test_w():\n    open('/tmp/from-episode-1', 'w').write('x')\n    open('/dev/shm/e1', 'w').write('x')\n")
    assert "1 passed" in box.exec("python -m pytest -q -p no:cacheprovider test_w.py", timeout=60).output
    box.exec("echo x > /tmp/cmd-e1; echo x > $HOME/.e1; echo x > /dev/shm/cmd-e1")
    box.close()
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    (ws2 / "test_r.py").write_text(
        "import os\n\ndef test_r():\n    assert not {'from-episode-1', 'cmd-e1', '.e1'} & set(os.listdir('/tmp'))\n"
        "    assert not os.path.exists('/dev/shm/e1')\n")
    second = make_sandbox(box.name, ws2, LIMITS, mask=(box.tmp / "task",), runtime=PYTHON)
    try:
        r = second.exec("python -m pytest -q -p no:cacheprovider test_r.py", timeout=60)
        seen = second.exec("ls -A /tmp /dev/shm")
    finally:
        second.close()
    assert "1 passed" in r.output, r.output
    assert "e1" not in seen.output, seen.output


def test_proc_shows_no_host_environment(box, monkeypatch):
    """Before (bwrap): /proc/1/environ showed the host's PATH (the environment bubblewrap was started
    with)."""
    monkeypatch.setenv("CODE_GYM_HOST_SECRET", "HOST-ENV-SECRET")
    host_path = os.environ["PATH"]
    r = box.exec("for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null")
    assert "HOST-ENV-SECRET" not in r.output
    assert f"PATH={host_path}\n" not in r.output + "\n" or host_path == _sandbox_path(box), r.output


def _sandbox_path(box) -> str:
    return box.exec("echo $PATH").output.strip()


def test_mountinfo_shows_no_task_or_layer_paths(box, tmp_path):
    """Before (bwrap): /proc/self/mountinfo showed the overlay's lower dir (the task's repository),
    its upper and work dirs and the masked task folder."""
    task = tmp_path / "tasks" / "secret-task-name"
    (task / "repo").mkdir(parents=True)
    (task / "repo" / "a.py").write_text("A = 1\n")
    ws = Workspace(task / "repo")
    try:
        sandbox = make_sandbox(box.name, ws.root, LIMITS, mask=(task,), runtime=PYTHON)
        try:
            r = sandbox.exec("cat /proc/self/mountinfo /proc/self/mounts")
        finally:
            sandbox.close()
    finally:
        ws.close()
    assert "secret-task-name" not in r.output and str(ws.base) not in r.output, r.output


def test_disk_fill_across_many_files_hits_the_quota(box_ws):
    """Before: eight 250 MB files from one command all landed on the host disk (only a per-file cap);
    here 2 GB in 16 files: all of it was written."""
    sandbox, ws = box_ws
    ws.scan_changes()
    before = _rss()
    r = sandbox.exec("for i in $(seq 16); do head -c 134217728 /dev/zero > f$i.bin || break; done; du -sm .")
    diffs = ws.scan_changes()
    grown = _rss() - before
    written = sum(p.stat().st_size for p in ws.root.glob("f*.bin"))
    assert written <= DEFAULT_QUOTA, written
    assert f"disk quota of {DEFAULT_QUOTA >> 20} MiB is full" in r.describe(), r.describe()[-500:]
    assert sum(d.binary for d in diffs) >= 8  # shown by size and hash (a last empty file is not binary)
    assert grown < 100 << 20, f"host resident memory grew by {grown >> 20} MB"
    sandbox.exec("rm -f f*.bin")
    assert sandbox.exec("echo ok > small.txt && cat small.txt").output.strip() == "ok"


def test_host_memory_stays_flat_when_an_episode_writes_gigabytes(box_ws):
    """Before: the host process grew from 46 MB to 1.97 GB resident after one step that wrote eight
    250 MB files, because the step diff read every changed file into memory; measured here with
    six 128 MiB random files and a 100 MB text file: +1233 MB."""
    sandbox, ws = box_ws
    ws.scan_changes()
    before = _rss()
    sandbox.exec("for i in $(seq 3); do head -c 134217728 /dev/urandom > r$i.bin || break; done; "
                 "head -c 100000000 /dev/zero | tr '\\0' 'a' | fold -w 100 > big.txt")
    diffs = ws.scan_changes()
    grown = _rss() - before
    assert grown < 100 << 20, f"host resident memory grew by {grown >> 20} MB"
    by_path = {d.path: d for d in diffs}
    assert by_path["r1.bin"].binary and "Binary files" in by_path["r1.bin"].text
    assert by_path["big.txt"].binary


def test_setuid_file_in_the_workspace_gives_no_privilege(box_ws):
    """Before: a setuid copy of a shell made in the workspace stayed a setuid-root file on the host
    (owner root, mode 4755) on a mount that honours setuid; run by an unprivileged host user it
    gave euid 0."""
    sandbox, ws = box_ws
    sandbox.exec("cp /bin/sh ./sush && chmod 4755 ./sush")
    path = ws.root / "sush"
    assert path.stat().st_mode & 0o4000  # made: the defence is the host mount (nosuid)
    fd = os.open(path, os.O_RDONLY)
    try:
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            f"/proc/self/fd/{fd}", "-p", "-c", "id -u"], pass_fds=(fd,), capture_output=True, text=True)
    finally:
        os.close(fd)
    assert r.stdout.strip() != "0", r


def test_files_an_episode_adds_are_bounded(tmp_path, monkeypatch):
    """Each step's scan walks every file of the workspace: 300k empty files made each later step take
    7 s (red team). The workspace's tmpfs takes at most EXTRA_INODES files beyond the repository's."""
    from code_gym.workspace import working_copy as workspace
    from code_gym.util.hostfs import overlay_supported

    require("bwrap")
    if not overlay_supported():
        pytest.skip("the workspace quota needs root (mount); not root here")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    make = "mkdir -p many && cd many && for i in $(seq 3000); do : > f$i 2>/dev/null || break; done; ls | wc -l"

    def added(extra):
        monkeypatch.setattr(workspace, "EXTRA_INODES", extra)
        ws = Workspace(tmp_path / "src")
        box = make_sandbox("bwrap", ws.root, Limits(timeout=60), runtime=PYTHON)
        try:
            return int(box.exec(make).output.split()[-1])
        finally:
            box.close()
            ws.close()

    assert added(1000) < 1000
    assert added(0) == 3000  # the defence off: no bound
