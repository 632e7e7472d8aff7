"""The Docker backend: container settings, warm pool reuse, fresh containers, concurrency, reaper, env."""
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from code_gym.sandbox.images import DEFAULT_IMAGE, LABEL, apt_mirror
from code_gym.sandbox import Limits, make_sandbox
from sandbox_backends import PYTHON, require

# Docker-backed tests share one daemon: run them on one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("docker")

LIMITS = Limits(timeout=10, memory_bytes=512 << 20, processes=128, cpus=1.0)


@pytest.fixture
def docker_ok():
    require("docker")
    from code_gym.sandbox import docker

    return docker


def test_apt_mirror_reads_deb822_and_one_line_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n")
    assert apt_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# comment\ndeb [arch=amd64] http://old.example/debian bookworm main\n")
    assert apt_mirror(tmp_path) == "http://old.example/debian"
    with pytest.raises(RuntimeError, match="--mirror"):
        apt_mirror(tmp_path, suite="trixie")


def test_container_is_locked_down_and_labelled(docker_ok, tmp_path):
    box = make_sandbox("docker", tmp_path, LIMITS, runtime=PYTHON)
    try:
        info = docker_ok.client().api.inspect_container(box._box.id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
        assert host["Memory"] == LIMITS.memory_bytes and host["PidsLimit"] == LIMITS.processes
        assert host["NanoCpus"] == int(LIMITS.cpus * 1e9) and host["CapDrop"] == ["ALL"]
        assert info["Config"]["Labels"][LABEL] == "container"
        r = box.exec("touch /usr/x 2>&1; touch /x 2>&1; echo ok > /repo/f && cat /repo/f; ls /mnt/code-gym")
        assert "Read-only file system" in r.output and "ok" in r.output
        assert (tmp_path / "f").read_text() == "ok\n"
    finally:
        box.close()


def test_exec_timeout_kills_the_command(docker_ok, tmp_path):
    box = make_sandbox("docker", tmp_path, LIMITS, runtime=PYTHON)
    try:
        r = box.exec("echo before; sleep 30", timeout=1)
        assert r.timed_out and r.exit_code is None and "before" in r.output
        assert box.exec("echo after").output == "after\n"
    finally:
        box.close()


def test_warm_pool_reuses_a_clean_container_for_the_next_workspace(docker_ok, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "only_a.txt").write_text("a")
    (second / "only_b.txt").write_text("b")
    backend = docker_ok.DockerBackend(pool=True)
    try:
        box = backend.sandbox(first, LIMITS, runtime=PYTHON)
        container = box._box.id
        box.exec("echo tmpdata > /tmp/left; ls")
        box.close()
        box = backend.sandbox(second, LIMITS, runtime=PYTHON)
        assert box._box.id == container
        assert box.exec("ls; ls -A /tmp").output == "only_b.txt\n"
        box.close()
    finally:
        backend.close()
    assert not docker_ok.client().containers.list(all=True, filters={"id": container})


def test_a_pooled_container_that_stopped_is_not_handed_out(docker_ok, tmp_path, monkeypatch):
    """A container's PID 1 is its warm runner; a runner that ends after the container went back to
    the pool (a run left a /tmp it could not empty) stops the container. Handing it out again made
    the next command fail with Docker's 409 "container is not running" (seen in the full suite)."""
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "0")  # the cold path, where the 409 surfaced
    backend = docker_ok.DockerBackend(pool=True)
    try:
        box = backend.sandbox(tmp_path, LIMITS, runtime=PYTHON)
        stopped = box._box.id
        box.close()
        docker_ok.client().api.kill(stopped)  # what the runner's exit does to its container
        box = backend.sandbox(tmp_path, LIMITS, runtime=PYTHON)
        assert box._box.id != stopped
        assert box.exec("echo ok").output == "ok\n"
        box.close()
    finally:
        backend.close()
    assert not docker_ok.client().containers.list(all=True, filters={"id": stopped})


def test_a_forked_child_leaves_the_parents_idle_containers_alone(docker_ok, tmp_path):
    """AsyncVectorEnv forks workers: a child that inherited a backend must not remove the parent's
    idle containers when it exits."""
    import os

    backend = docker_ok.DockerBackend(pool=True)
    try:
        box = backend.sandbox(tmp_path, LIMITS, runtime=PYTHON)
        container = box._box.id
        box.close()
        pid = os.fork()
        if pid == 0:
            try:
                docker_ok._close_backends()  # what the child's exit runs
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert docker_ok.client().containers.list(filters={"id": container})
        box = backend.sandbox(tmp_path, LIMITS, runtime=PYTHON)
        assert box._box.id == container and box.exec("echo hi").output == "hi\n"
        box.close()
    finally:
        backend.close()


def test_fresh_mode_removes_the_container_at_close(docker_ok, tmp_path):
    box = make_sandbox("docker-fresh", tmp_path, LIMITS, runtime=PYTHON)
    container = box._box.id
    assert box.exec("echo hi").output == "hi\n"
    box.close()
    assert not docker_ok.client().containers.list(all=True, filters={"id": container})


def test_dropped_sandbox_gives_its_container_back(docker_ok, tmp_path):
    backend = docker_ok.DockerBackend(pool=False)
    box = backend.sandbox(tmp_path, LIMITS, runtime=PYTHON)
    container = box._box.id
    del box
    assert not docker_ok.client().containers.list(all=True, filters={"id": container})


def test_parallel_starts_all_finish(docker_ok, tmp_path):
    backend = docker_ok.DockerBackend(pool=False)
    results, errors = [], []

    def start(i):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        try:
            box = backend.sandbox(ws, LIMITS, runtime=PYTHON)
            results.append(box.exec(f"echo {i}").output.strip())
            box.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(i,), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a parallel container start hung"
    assert errors == [] and sorted(results) == [str(i) for i in range(6)]


CRASHER = """
import os, sys
from code_gym.sandbox import Limits, make_sandbox
box = make_sandbox("docker", sys.argv[1], Limits(timeout=5))
box.exec("true")
print(box._box.id, box._box.slot, flush=True)
os._exit(0)  # a crash: no close, no atexit
"""


def test_reaper_removes_what_a_crashed_process_left(docker_ok, tmp_path):
    out = subprocess.run([sys.executable, "-c", CRASHER, str(tmp_path)], capture_output=True, text=True, check=True)
    container, slot = out.stdout.split()
    assert docker_ok.client().containers.list(all=True, filters={"id": container})
    assert docker_ok.reap() >= 1
    assert not docker_ok.client().containers.list(all=True, filters={"id": container})
    assert not Path(slot).exists() and str(tmp_path) not in Path("/proc/self/mounts").read_text()


def test_env_episode_resolves_in_docker_with_the_tasks_image(docker_ok, tiny_task):
    from dataclasses import replace

    from code_gym.env.environment import CodeRepoEnv
    from code_gym.actions.replay import hermes, patch_to_calls

    env = CodeRepoEnv(task=replace(tiny_task, image=DEFAULT_IMAGE), isolation="docker")
    try:
        _, info = env.reset(seed=0)
        assert info["sandbox"] == "docker"
        env.step(hermes(patch_to_calls(tiny_task.reference_patch, tiny_task.repo)))
        _, _, _, _, info = env.step(hermes([{"name": "bash", "arguments": {"command": "sed -i 's/^/#/' data.bin; pwd"}}]))
        assert "/repo" in info["tool_results"][0]["output"] and info["changed_files"] == ["data.bin"]
        _, reward, terminated, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
        assert terminated and reward == 1.0 and info["resolved"]
    finally:
        env.close()


def test_unknown_image_is_a_clear_error(docker_ok, tmp_path):
    with pytest.raises(RuntimeError, match="not on this machine"):
        make_sandbox("docker", tmp_path, LIMITS, image="code-gym-no-such-image:1", runtime=PYTHON)
    assert not list(Path("/tmp").glob(f"code-gym-docker-{__import__('os').getpid()}-*/repo/*"))


# A command that kills its wrapper shell (exit 137) before the wrapper's `kill -9 -1` runs, leaving
# a setsid child behind: the red team kept such a process racing the host's editor writes.
KILLS_ITS_WRAPPER = ("(setsid sleep 300 </dev/null >/dev/null 2>&1 &); "
                     "kill -9 $(awk '{print $4}' /proc/$PPID/stat)")


def test_a_command_that_kills_its_wrapper_leaves_no_process(docker_ok, tmp_path, monkeypatch):
    from code_gym.sandbox import docker

    def survivors():
        box = make_sandbox("docker", tmp_path, Limits(timeout=20), runtime=PYTHON)
        try:
            first = box.exec(KILLS_ITS_WRAPPER)
            # a live sleep (a killed one waits as a zombie until the runner, PID 1, reaps it)
            return first, box.exec("grep -l '^[0-9]* (sleep) [^Z]' /proc/[0-9]*/stat 2>/dev/null | wc -l").output.strip()
        finally:
            box.close()

    first, left = survivors()
    assert first.exit_code == 137 and left == "0", (first, left)
    monkeypatch.setattr(docker, "_reap_leftovers", lambda container_id: None)  # the defence off
    first, left = survivors()
    assert first.exit_code == 137 and left == "1", (first, left)


def test_what_a_command_leaves_in_dev_is_gone_for_the_next(docker_ok, tmp_path, monkeypatch):
    plant = "echo hidden > /dev/planted; rm /dev/stdin; ln -s SECRET /dev/stdin; ipcmk -M 4096 >/dev/null"
    look = "ls /dev/planted 2>/dev/null; readlink /dev/stdin; ipcs -m | grep -c 0x"

    def left(limits):
        box = make_sandbox("docker", tmp_path, limits, runtime=PYTHON)
        try:
            box.exec(plant)
            return box.exec(look).output.split()
        finally:
            box.close()

    assert left(LIMITS) == ["/proc/self/fd/0", "0"]
    monkeypatch.setattr(docker_ok, "_WRAPPER", docker_ok._WRAPPER.replace("; " + docker_ok._DEV_WIPE, ""))  # off
    assert left(LIMITS) == ["/dev/planted", "SECRET", "1"]


def test_a_link_in_the_binds_folder_mounts_nothing_on_the_host(docker_ok, tmp_path, monkeypatch):
    """A command linked /mnt/code-gym/0 to a host folder; the next command with binds (run_tests'
    results folder) made the host mount that bind over the linked folder, as root."""
    import subprocess

    victim, results, work = tmp_path / "victim", tmp_path / "results", tmp_path / "repo"
    for folder in (victim, results, work):
        folder.mkdir()
    (victim / "kept").write_text("host file\n")

    def attack(limits):
        box = make_sandbox("docker", work, limits, runtime=PYTHON)
        try:
            linked = box.exec(f"ln -s {victim} /mnt/code-gym/0").exit_code
            try:
                with_binds = box.exec("ls /mnt/code-gym/0 && touch /mnt/code-gym/0/written", binds={results: "/results"})
            except NotADirectoryError:  # as before the fix: the host's clean-up met the link (the mount stays)
                with_binds = None
            mounted = subprocess.run(["findmnt", "-rn", str(victim)], capture_output=True, text=True).stdout
            return linked, with_binds, mounted
        finally:
            box.close()
            subprocess.run(["umount", "-l", str(victim)], capture_output=True)

    linked, with_binds, mounted = attack(LIMITS)
    assert linked != 0 and not mounted and with_binds.exit_code == 0 and (results / "written").exists()
    assert (victim / "kept").exists()
    monkeypatch.setattr(docker_ok, "_BINDS_READ_ONLY", False)  # the defence off (a fresh container)
    monkeypatch.setattr(docker_ok, "_bind_target", lambda folder: folder.mkdir(exist_ok=True) or folder)  # as before
    linked, with_binds, mounted = attack(Limits(timeout=10, memory_bytes=512 << 20, processes=129, cpus=1.0))
    assert linked == 0 and mounted, mounted
