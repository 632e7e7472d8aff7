"""The warm test runner gives the same results as a cold `python -m pytest`, on every bundled task."""
import shutil

import pytest

from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.sandbox import Limits, LocalSandbox, make_sandbox
from code_gym.languages.python.warm import pytest_argv
from conftest import BUNDLED
from sandbox_backends import PYTHON, UNEMPTIABLE_TMP, hold_runner_window, require, runner_fallback_as_before

# Docker-backed tests share one daemon: run them on one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("docker")


def test_only_plain_pytest_commands_go_to_the_runner():
    assert pytest_argv("python -m pytest -q -p no:cacheprovider tests/test_a.py") == [
        "-q", "-p", "no:cacheprovider", "tests/test_a.py"]
    assert pytest_argv("python -m pytest 'tests/test_a.py::test_x[1 2]'") == ["tests/test_a.py::test_x[1 2]"]
    for command in ("python -m pytest -p myplugin tests", "python -m pytest tests | tail", "python -m pytest $X", "python -m pytest tests/*.py",
                    "FOO=1 python -m pytest", "pytest tests", "python -m pytest; rm -rf /", "python -m pytest 'a"):
        assert pytest_argv(command) is None, command


def _grade(task, changes, warm, monkeypatch, isolation="bwrap"):
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1" if warm else "0")
    result = grade(task, changes, isolation=isolation)
    return result.tests, result.exit_code, result.timed_out


@pytest.mark.parametrize("task", BUNDLED, ids=lambda t: t.id)
def test_warm_and_cold_grading_agree_on_every_bundled_task(task, monkeypatch):
    require("bwrap")
    reference = reference_changes(task)
    for changes in ({}, reference):
        cold = _grade(task, changes, False, monkeypatch)
        warm = _grade(task, changes, True, monkeypatch)
        assert warm == cold and cold[0], (task.id, cold, warm)


@pytest.mark.parametrize("task", BUNDLED, ids=lambda t: t.id)
def test_warm_and_cold_grading_agree_in_docker(task, monkeypatch):
    require("docker")
    cold = _grade(task, {}, False, monkeypatch, "docker")
    warm = _grade(task, {}, True, monkeypatch, "docker")
    assert warm == cold and cold[0], (task.id, cold, warm)


SHADOW = "def main(*a, **k):\n    print('fake pytest: all passed')\n    return 0\n"


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_a_repo_that_shadows_pytest_runs_cold(kind, tmp_path, monkeypatch):
    """A cold `python -m pytest` imports ./pytest.py; so must the warm path (it falls back to cold)."""
    require(kind)
    (tmp_path / "pytest.py").write_text(SHADOW + "if __name__ == '__main__':\n    main()\n")
    outputs = []
    for warm in ("0", "1"):
        monkeypatch.setenv("CODE_GYM_WARM_RUNNER", warm)
        box = make_sandbox(kind, tmp_path, Limits(timeout=20), runtime=PYTHON)
        outputs.append(box.exec("python -m pytest -q").output)
        box.close()
    assert outputs[0] == outputs[1] and "fake pytest" in outputs[0]


def test_warm_runner_timeout_and_leftovers(tmp_path):
    require("bwrap")
    (tmp_path / "test_slow.py").write_text(
        "import subprocess, time\n\ndef test_slow():\n"
        "    subprocess.Popen(['setsid', 'sleep', '60'])\n    time.sleep(60)\n")
    box = LocalSandbox(tmp_path, "bwrap", Limits(timeout=20), warm=True, runtime=PYTHON)
    r = box.exec("python -m pytest -q -p no:cacheprovider test_slow.py", timeout=2)
    assert r.timed_out and r.exit_code is None
    (tmp_path / "test_slow.py").write_text("def test_ok():\n    assert True\n")
    r = box.exec("python -m pytest -q -p no:cacheprovider test_slow.py")
    assert r.exit_code == 0 and "1 passed" in r.output
    shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)


def test_a_forked_child_leaves_the_parents_warm_runners_alone(tmp_path, monkeypatch):
    """AsyncVectorEnv forks workers: a child that inherited the idle runners must not stop them
    (at exit, or when it finds them 'dead' because it cannot wait on its parent's children)."""
    import os

    from code_gym.sandbox.runner import LOCAL_RUNNERS

    require("bwrap")
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    box = make_sandbox("bwrap", tmp_path, Limits(timeout=30), runtime=PYTHON)
    assert "1 passed" in box.exec("python -m pytest -q").output
    idle = [zygote for _, zygote in LOCAL_RUNNERS.idle]
    assert idle and all(z.alive() and z.slot.is_dir() for z in idle)
    pid = os.fork()
    if pid == 0:  # the child: use the pool and exit through atexit, as a vector-env worker does
        try:
            LOCAL_RUNNERS.acquire(("no such key",), lambda counter: None)
            LOCAL_RUNNERS.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert all(z.alive() and z.slot.is_dir() for z in idle)
    assert "1 passed" in box.exec("python -m pytest -q").output
    box.close()


EXIT_HANDLER_TEST = ("import atexit\n\natexit.register(lambda: print('EXIT HANDLER RAN'))\n\n\n"
                     "def test_ok():\n    assert True\n")


def test_a_data_folder_named_like_a_preloaded_module_keeps_the_run_warm(tmp_path, monkeypatch):
    """A folder without __init__ shadows nothing, so it must not send the run cold (where exit
    handlers run after the junit XML is written); a real shadowing module still does."""
    require("bwrap")
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_ok.py").write_text(EXIT_HANDLER_TEST)
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "data.txt").write_text("not a module\n")
    box = make_sandbox("bwrap", tmp_path, Limits(timeout=30), runtime=PYTHON)
    try:
        warm = box.exec("python -m pytest -q -p no:cacheprovider test_ok.py")
        assert warm.exit_code == 0 and "1 passed" in warm.output and "EXIT HANDLER RAN" not in warm.output
        (tmp_path / "json" / "__init__.py").write_text("print('LOCAL JSON IMPORTED')\n")
        cold = box.exec("python -m pytest -q -p no:cacheprovider test_ok.py")
        assert "LOCAL JSON IMPORTED" in cold.output  # a regular package named json: the cold run imports it
    finally:
        box.close()
        shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)


def test_a_runner_that_goes_away_before_taking_a_run_gives_it_back_but_one_that_took_it_fails_it(tmp_path):
    """A runner that cannot empty /tmp exits after its run; a request still in its listen queue is
    reset (the CI rehearsal of this change saw ConnectionResetError escape from `run`). That run never
    started, so it goes to a fresh runner (RunnerGone); a run the server took and then died on is a failed run."""
    import socket
    import threading
    import time

    from code_gym.sandbox import runner

    def serve(path, take: bool):
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(path))
        srv.listen(1)

        def then_go():
            if take:
                conn, _ = srv.accept()
                conn.recv(65536)
                conn.close()
            else:
                time.sleep(0.5)
            srv.close()
        threading.Thread(target=then_go, daemon=True).start()

    serve(tmp_path / "queued.sock", take=False)
    with pytest.raises(runner.RunnerGone):
        runner.run(tmp_path / "queued.sock", ["-q"], "/repo", {}, 10, 1000)
    serve(tmp_path / "taken.sock", take=True)
    taken = runner.run(tmp_path / "taken.sock", ["-q"], "/repo", {}, 10, 1000)
    assert taken.exit_code == 137 and not taken.timed_out
    with pytest.raises(runner.RunnerGone):  # nothing listens at all
        runner.run(tmp_path / "nobody.sock", ["-q"], "/repo", {}, 10, 1000)


# A test module that leaves the runner a /tmp it cannot empty, and an exit handler: it runs only
# in a cold run, where it could rewrite the junit XML after pytest wrote it.
ENDS_ITS_RUNNER = (UNEMPTIABLE_TMP + "\nimport atexit\n\natexit.register(lambda: print('EXIT HANDLER RAN'))\n\n\n"
                   "def test_ok():\n    assert True\n")


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_a_run_that_ends_its_runner_does_not_send_the_next_run_cold(kind, tmp_path, monkeypatch):
    """The attack: a run leaves a /tmp the runner cannot empty, so the runner exits after it; the next
    run finds no runner. Before issue 14 it then ran cold (bubblewrap), where the exit handler runs,
    or (Docker) ran cold in the dying container or failed on the dead one; now it goes to a fresh
    runner (a fresh container) and stays warm."""
    require(kind)
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_tmp.py").write_text(ENDS_ITS_RUNNER)
    hold_runner_window(monkeypatch)

    def two_runs():
        box = make_sandbox(kind, tmp_path, Limits(timeout=60), runtime=PYTHON)
        try:
            return [box.exec("python -m pytest -q -p no:cacheprovider test_tmp.py") for _ in range(2)]
        finally:
            box.close()

    first, second = two_runs()
    assert first.exit_code == 0 and "EXIT HANDLER RAN" not in first.output
    assert second.exit_code == 0 and "1 passed" in second.output and "EXIT HANDLER RAN" not in second.output, second.output
    runner_fallback_as_before(monkeypatch)  # the defence off
    if kind == "bwrap":
        assert "EXIT HANDLER RAN" in two_runs()[1].output
    else:  # the container died with its runner: the old cold run either failed on it or ran cold
        import docker.errors
        try:
            second = two_runs()[1]
            assert "EXIT HANDLER RAN" in second.output or second.exit_code != 0, second.output
        except docker.errors.APIError:  # the container is gone: the run could not be made at all
            pass
    shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)


# A test that writes into the runner's socket folder and swaps its socket for a link: before the
# folder was sealed, the file landed on the host outside every quota and stayed for later runs and
# episodes, and the link sent later runs wherever the agent pointed it (another runner: the red
# team read the hidden tests through the grading runner that way).
PLANTS = ("import os\n\ndef test_plant():\n"
          "    for name, act in (('planted', lambda p: open(p, 'w').write('x' * 4096)),\n"
          "                      ('runner.sock', lambda p: (os.rename(p, p + '.old'), os.symlink('/nowhere', p)))):\n"
          "        try:\n            act('/run/code-gym/' + name)\n            print('WROTE', name)\n"
          "        except OSError as exc:\n            print('REFUSED', name, exc.strerror)\n")


def _planted(kind: str) -> list:
    import glob
    import os

    slots = glob.glob(f"/tmp/code-gym-{'runner' if kind == 'bwrap' else 'docker'}-{os.getpid()}-*/ctl")
    return [p for s in slots for p in glob.glob(s + "/*") if not p.endswith("/runner.sock")]


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_a_run_cannot_write_the_runners_socket_folder(kind, tmp_path, monkeypatch):
    from code_gym.sandbox import mounts

    require(kind)
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_plant.py").write_text(PLANTS)

    def runs(limits=Limits(timeout=60)):
        box = make_sandbox(kind, tmp_path, limits, runtime=PYTHON)
        try:
            first = box.exec("python -m pytest -q -s -p no:cacheprovider test_plant.py")
            planted = _planted(kind)
            second = box.exec("python -m pytest -q -s -p no:cacheprovider test_plant.py")
            return first, planted, second
        finally:
            box.close()

    first, planted, second = runs()
    assert first.exit_code == 0 and "REFUSED planted Read-only file system" in first.output, first.output
    assert "REFUSED runner.sock" in first.output and not planted, planted
    assert second.exit_code == 0 and "1 passed" in second.output  # the socket is still the runner's
    if kind == "docker":  # an agent's command there sees the folder too
        box = make_sandbox(kind, tmp_path, Limits(timeout=60), runtime=PYTHON)
        try:
            assert box.exec("touch /run/code-gym/planted").exit_code != 0 and not _planted(kind)
        finally:
            box.close()
    monkeypatch.setattr(mounts, "seal", lambda path: None)  # the defence off: the attack lands on the host
    fresh = Limits(timeout=60, processes=Limits().processes + 1)  # other limits: a runner (container) started now
    first, planted, second = runs(fresh)
    assert "WROTE planted" in first.output and "WROTE runner.sock" in first.output and planted, first.output
    # the host does not follow the link (the second guard): that run went to a fresh runner
    assert second.exit_code == 0 and "1 passed" in second.output


# A run that leaves a pytest config and a conftest in the runner's root, above /repo: pytest reads
# them in every later run of that runner (other episodes' grading too). The red team's conftest
# wrote the fix into /repo before collection, so empty patches of later episodes scored 1.0.
ROOT_PLANT = ("def test_plant():\n"
              "    for name, text in (('/pytest.ini', '[pytest]\\n'), ('/conftest.py', \"print('ROOT CONFTEST RAN')\\n\")):\n"
              "        try:\n            open(name, 'w').write(text)\n            print('WROTE', name)\n"
              "        except OSError as exc:\n            print('REFUSED', name, exc.strerror)\n")


def test_a_run_cannot_leave_a_conftest_above_the_repository_for_later_runs(tmp_path, monkeypatch):
    from code_gym.sandbox import local

    require("bwrap")
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_plant.py").write_text(ROOT_PLANT)
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")

    def runs(limits):
        box = make_sandbox("bwrap", tmp_path, limits, runtime=PYTHON)
        try:
            return [box.exec(f"python -m pytest -q -s -p no:cacheprovider {name}") for name in ("test_plant.py",
                                                                                                "test_ok.py")]
        finally:
            box.close()

    plant, later = runs(Limits(timeout=60))
    assert "REFUSED /conftest.py Read-only file system" in plant.output, plant.output
    assert later.exit_code == 0 and "ROOT CONFTEST RAN" not in later.output
    monkeypatch.setattr(local, "_ROOT_READ_ONLY", ())  # the defence off: a fresh runner, root writable
    plant, later = runs(Limits(timeout=60, processes=Limits().processes + 2))
    assert "WROTE /conftest.py" in plant.output and "ROOT CONFTEST RAN" in later.output, later.output


# A graded run that leaves files, a changed link and a System V shared-memory segment in /dev: on
# Docker /dev is a writable tmpfs that outlived the run, and the next episode given the pooled
# container read the hidden tests a graded run had copied there.
DEV_PLANT = ("import os, subprocess\n\ndef test_plant():\n"
             "    open('/dev/planted', 'w').write('hidden tests')\n"
             "    os.unlink('/dev/stdin')\n    os.symlink('SECRET', '/dev/stdin')\n"
             "    subprocess.run(['ipcmk', '-M', '4096'], check=True)\n")
DEV_LOOK = ("import os, subprocess\n\ndef test_look():\n"
            "    segments = subprocess.run(['ipcs', '-m'], capture_output=True, text=True).stdout.count('0x')\n"
            "    print('LEFT', os.path.exists('/dev/planted'), os.readlink('/dev/stdin'), segments)\n")


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_what_a_run_leaves_in_dev_is_gone_for_the_next_run(kind, tmp_path, monkeypatch):
    from dataclasses import replace

    from code_gym.sandbox import local

    require(kind)
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (tmp_path / "test_plant.py").write_text(DEV_PLANT)
    (tmp_path / "test_look.py").write_text(DEV_LOOK)

    def runs(limits, runtime=PYTHON):
        box = make_sandbox(kind, tmp_path, limits, runtime=runtime)
        try:
            return [box.exec(f"python -m pytest -q -s -p no:cacheprovider {name}").output
                    for name in ("test_plant.py", "test_look.py")]
        finally:
            box.close()

    plant, look = runs(Limits(timeout=60))
    assert "LEFT False /proc/self/fd/0 0" in look, (plant, look)
    # the defence off: the server does not put /dev back, and bubblewrap's /dev is writable
    program = PYTHON.warm.program.replace(" + [wipe_dev(DEV)]", "")
    assert program != PYTHON.warm.program
    monkeypatch.setattr(local, "_ROOT_READ_ONLY", ("--remount-ro", "/"))
    plant, look = runs(Limits(timeout=60, processes=Limits().processes + 3),
                       replace(PYTHON, warm=replace(PYTHON.warm, program=program)))
    assert "LEFT True SECRET 1" in look, (plant, look)
