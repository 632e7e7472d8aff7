"""A run that reaches the warm runner it forks from (issue 31, item 1, and its neighbours).

Every graded run and every `run_tests` run of a task is a child forked by a warm runner, and later
runs of other episodes fork from the same runner. Before the fix the runner had the runs' own uid,
so a run could change what every later run inherits: its limits (`prlimit`), its priority, its CPU
affinity, its OOM score, or connect to its socket. Now the runner becomes a uid of its own
(`runner.ISOLATE_RUNS`: the kernel refuses all of that to a process of another uid without
capabilities) and checks its own state before and after each run (`runner.CHECK_STATE`: changed,
it exits and the next run goes to a fresh runner). Each test shows what the attack gains with both
defences off (the runner as before) and that it gains nothing with them on; the prlimit attack
also with each defence alone.
"""
from __future__ import annotations

import json

import gymnasium as gym
import pytest

from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.sandbox import Limits, backend, runner
from code_gym.sandbox.local import LocalSandbox

from sandbox_backends import PYTHON, require

pytestmark = pytest.mark.xdist_group("docker")

KINDS = ["bwrap", "docker"]


@pytest.fixture(autouse=True)
def _fresh_runners():
    """Runners started by a test (poisoned ones, with the defences off) go at its end."""
    yield
    runner.LOCAL_RUNNERS.close()
    if backend_started("docker"):
        backend("docker").close()


def backend_started(kind: str) -> bool:
    from code_gym import sandbox

    return kind in sandbox._SHARED  # noqa: SLF001 - only to avoid starting Docker for a local test


def defences(monkeypatch, isolate: bool, check: bool) -> None:
    monkeypatch.setattr(runner, "ISOLATE_RUNS", isolate)
    monkeypatch.setattr(runner, "CHECK_STATE", check)


# -- the attack of item 1: a graded patch lowers its runner's limits --------------------------------

POISON = ("\ntry:\n    import resource as _r\n    _r.prlimit(1, _r.RLIMIT_NOFILE, (12, 12))\n"
          "except OSError:\n    pass\n")


def _poisoned(task) -> dict[str, bytes]:
    """The untouched package with the poison appended to its __init__ (no correct code at all)."""
    path = "calc/__init__.py"
    return {path: (task.repo / path).read_bytes() + POISON.encode()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("isolate, check", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["undefended", "own-uid", "self-check", "both"])
def test_a_graded_patch_that_lowers_its_runners_limits_spoils_the_next_reference_grade(
        kind, isolate, check, tiny_task, monkeypatch):
    require(kind)
    defences(monkeypatch, isolate, check)
    reference = reference_changes(tiny_task)
    assert grade(tiny_task, reference, isolation=kind).resolved  # a runner of these settings, clean
    attacker = grade(tiny_task, _poisoned(tiny_task), isolation=kind)
    assert not attacker.resolved
    after = grade(tiny_task, reference, isolation=kind)  # the next episode: the reference patch
    if isolate or check:
        assert after.resolved, after.output[-2000:]
    else:  # what the attack gained: the reference patch itself no longer resolves the task
        assert not after.resolved


def _run_tests_episode(task, kind, poison: bool) -> str:
    """One episode through env.step: optionally a test file that poisons the runner, run through
    run_tests and deleted before submit; the run_tests observation of an untouched repo otherwise."""
    env = gym.make("CodeRepo-v0", task=task, isolation=kind, integrity="off")
    try:
        env.reset(seed=0)
        if poison:
            body = "import resource\n\n\ndef test_poison():\n    resource.prlimit(1, resource.RLIMIT_NOFILE, (12, 12))\n"
            env.step({"name": "bash", "arguments": {"command": f"cat > tests/test_zz.py <<'EOF'\n{body}EOF"}})
        obs, *_ = env.step({"name": "run_tests", "arguments": {"paths": ["tests/test_zz.py"]} if poison else {}})
        if poison:
            env.step({"name": "bash", "arguments": {"command": "rm tests/test_zz.py"}})
        env.step({"name": "submit", "arguments": {}})
        return obs
    finally:
        env.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("defended", [False, True], ids=["undefended", "defended"])
def test_a_run_tests_run_that_lowers_its_runners_limits_spoils_later_episodes(kind, defended, tiny_task,
                                                                              monkeypatch):
    require(kind)
    defences(monkeypatch, defended, defended)
    before = _run_tests_episode(tiny_task, kind, poison=False)
    assert "1 passed" in before
    _run_tests_episode(tiny_task, kind, poison=True)
    after = _run_tests_episode(tiny_task, kind, poison=False)  # another episode, untouched
    assert ("1 passed" in after) == defended, after[-2000:]


# -- neighbours: whatever else of its runner a run can change or reach -------------------------------

def _runs(kind, tmp_path, attack: str, look: str) -> tuple[str, str]:
    """Two runs in one runner, from two sandboxes (two episodes): `attack`, a test body run first,
    and `look`, a test body that prints what a later run inherits. Their outputs."""
    outputs = []
    for name, body in (("attack", attack), ("look", look)):
        folder = tmp_path / name
        folder.mkdir(parents=True)
        (folder / f"test_{name}.py").write_text(
            "import ctypes, os, resource, signal, socket, sys\n\n\ndef test_it():\n"
            + "".join(f"    {line}\n" for line in body.splitlines()))
        limits = Limits(timeout=60)
        if kind == "docker":
            box = backend("docker").sandbox(folder, limits, runtime=PYTHON)
        else:
            box = LocalSandbox(folder, kind, limits, runtime=PYTHON)
        try:
            result = box.exec("python -m pytest -q -s -p no:cacheprovider", records="n")
        finally:
            box.close()
        outputs.append(result.output)
    assert result.records, result.output  # the look ran warm (the server's plugin answered)
    return outputs[0], outputs[1]


def _seen(output: str, key: str):
    """The JSON value a `look` printed after `key=`."""
    line = next(l for l in output.splitlines() if l.startswith(key + "="))
    return json.loads(line.split("=", 1)[1])


NEIGHBOURS = {
    # renice the runner: every later run at the lowest priority (a slower batch, time-outs)
    "priority": ("try:\n    os.setpriority(os.PRIO_PROCESS, 1, 19)\nexcept OSError:\n    pass",
                 "print('seen=' + str(os.getpriority(os.PRIO_PROCESS, 0)))", 19),
    # pin the runner to one CPU: every later run inherits it
    "affinity": ("try:\n    os.sched_setaffinity(1, {min(os.sched_getaffinity(0))})\nexcept OSError:\n    pass",
                 "print('seen=' + str(len(os.sched_getaffinity(0))))", 1),
    # make the runner (and all it forks later) the OOM killer's first victim
    "oom-score": ("try:\n    open('/proc/1/oom_score_adj', 'w').write('1000')\nexcept OSError:\n    pass",
                  "print('seen=' + open('/proc/self/oom_score_adj').read().strip())", 1000),
    # lower a hard limit: later runs may never write a file over 1 KiB
    "file-size": ("try:\n    resource.prlimit(1, resource.RLIMIT_FSIZE, (1024, 1024))\nexcept OSError:\n    pass",
                  "print('seen=' + str(resource.getrlimit(resource.RLIMIT_FSIZE)[1]))", 1024),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("what", sorted(NEIGHBOURS))
def test_a_run_cannot_change_what_later_runs_inherit_from_the_runner(kind, what, tmp_path, monkeypatch):
    require(kind)
    attack, look, gained = NEIGHBOURS[what]
    if what == "affinity":
        import os

        if len(os.sched_getaffinity(0)) < 2:
            pytest.skip("one CPU: pinning to one changes nothing")
    defences(monkeypatch, False, False)
    assert _seen(_runs(kind, tmp_path / "off", attack, look)[1], "seen") == gained  # the attack as it was
    defences(monkeypatch, True, True)
    assert _seen(_runs(kind, tmp_path / "on", attack, look)[1], "seen") != gained


REACH = ("out = {}\n"
         "try:\n    resource.prlimit(1, resource.RLIMIT_NOFILE)\n    out['limits'] = 'read'\n"
         "    resource.prlimit(1, resource.RLIMIT_CORE, (0, 0))\n    out['limits'] = 'written'\n"
         "except OSError as e:\n    out['limits'] = e.errno\n"
         "try:\n    os.kill(1, 0)\n    out['signal'] = 'sent'\nexcept OSError as e:\n    out['signal'] = e.errno\n"
         "s = socket.socket(socket.AF_UNIX)\n"
         "try:\n    s.connect('/run/code-gym/runner.sock')\n    out['socket'] = 'connected'\n"
         "except OSError as e:\n    out['socket'] = e.errno\n"
         "s.close()\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "out['ptrace'] = 'attached' if libc.ptrace(16, 1, 0, 0) == 0 else ctypes.get_errno()\n"  # PTRACE_ATTACH
         "for name in ('environ', 'cwd', 'fd/0', 'mem'):\n"
         "    try:\n        open('/proc/1/' + name, 'rb').close()\n        out[name] = 'opened'\n"
         "    except OSError as e:\n        out[name] = e.errno\n"
         "print('reach=' + json.dumps(out))")


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_can_neither_signal_trace_read_nor_connect_to_its_runner(kind, tmp_path, monkeypatch):
    """What a run reaches of PID 1 (its runner): with the runs' uid, its limits (read and written),
    signals and its socket, which would take a run's request after the run ends; its memory and
    /proc links were closed by the server being non-dumpable. With a uid of its own none of them,
    though the server is dumpable again (its /proc files then belong to its uid, not to root)."""
    require(kind)
    look = "import json\n" + REACH
    defences(monkeypatch, False, False)
    before = _seen(_runs(kind, tmp_path / "off", "pass", look)[1], "reach")
    assert before["limits"] == "written" and before["signal"] == "sent" and before["socket"] == "connected"
    defences(monkeypatch, True, True)
    after = _seen(_runs(kind, tmp_path / "on", "pass", look)[1], "reach")
    assert all(isinstance(v, int) for v in after.values()), after  # an errno each: refused


def test_a_run_cannot_end_its_runner_with_a_signal(tmp_path, monkeypatch):
    """SIGINT reaches a Python PID 1 (its handler raises KeyboardInterrupt): with the runs' uid a run
    ended its runner, and the next run (another episode's) paid for a fresh one; now the signal is
    refused and the runner serves on."""
    require("bwrap")
    started = []
    start_runner = LocalSandbox._start_runner

    def counting(self, *args, **kwargs):
        started.append(1)
        return start_runner(self, *args, **kwargs)

    monkeypatch.setattr(LocalSandbox, "_start_runner", counting)
    for defended in (False, True):
        defences(monkeypatch, defended, defended)
        runner.LOCAL_RUNNERS.close()
        started.clear()
        _runs("bwrap", tmp_path / str(defended), "try:\n    os.kill(1, signal.SIGINT)\nexcept OSError:\n    pass",
              "pass")
        assert len(started) == (1 if defended else 2)  # undefended: the attack cost a runner start


KEY_ADD = ("libc = ctypes.CDLL(None, use_errno=True)\n"
           "calls = {'x86_64': 248, 'aarch64': 217}[os.uname().machine]\n"
           "libc.syscall(calls, b'user', b'leak', b'the hidden tests', 16, -4)")  # add_key into @u
KEY_LOOK = ("libc = ctypes.CDLL(None, use_errno=True)\n"
            "find, ctl = {'x86_64': (249, 250), 'aarch64': (218, 219)}[os.uname().machine]\n"
            "key = libc.syscall(find, b'user', b'leak', None, 0)\n"  # request_key
            "buf = ctypes.create_string_buffer(64)\n"
            "if key > 0:\n    libc.syscall(ctl, 11, key, buf, 64)\n"  # KEYCTL_READ
            "print('seen=' + json.dumps(buf.value.decode()))")


def test_a_run_cannot_leave_a_key_for_later_runs(tmp_path, monkeypatch):
    """A user's keyrings belong to its uid in the runner's user namespace, shared by every run there:
    a graded run left what it read (the hidden tests) in a key, and a later episode's run read it.
    Runs now cannot use the key calls at all (as under Docker's seccomp profile)."""
    require("bwrap")
    look = "import json\n" + KEY_LOOK
    defences(monkeypatch, False, False)
    assert _seen(_runs("bwrap", tmp_path / "off", KEY_ADD, look)[1], "seen") == "the hidden tests"
    defences(monkeypatch, True, True)
    assert _seen(_runs("bwrap", tmp_path / "on", KEY_ADD, look)[1], "seen") == ""
