"""The runtime contract (code_gym.sandbox.base.Runtime): what any language gives a sandbox, checked
with runtimes that are not Python's on every backend."""
from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from code_gym.sandbox import Limits, Runtime, make_sandbox
from code_gym.sandbox.records import new_nonce
from sandbox_backends import PYTHON, require

# Docker-backed tests share one daemon: run them on one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("docker")

KINDS = ["bwrap", "unshare", "docker"]
PS = "for p in /proc/[0-9]*/stat; do read -r _ comm state _ < $p; echo $state $comm; done"


@dataclass(frozen=True)
class ScriptReporter:
    """A reporter of another language: a shell script that writes one record on the channel."""

    def setup(self, inside, fd, nonce, env):
        return {"report.sh": f"echo record {nonce} >&{fd}\n"}, env | {"REPORTER": inside}


@pytest.fixture
def ws(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _sandbox(kind, ws, runtime, **limits):
    require(kind)
    return make_sandbox(kind, ws, Limits(timeout=30, **limits), runtime=runtime)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("runtime", [None, Runtime()], ids=["none", "no-reporter"])
def test_a_run_with_records_needs_a_reporter(kind, runtime, ws):
    box = _sandbox(kind, ws, runtime)
    try:
        with pytest.raises(ValueError, match="reporter"):
            box.exec("touch ran", records=new_nonce())
        assert not (ws / "ran").exists()  # refused before anything ran
        assert box.exec("touch ran").exit_code == 0 and (ws / "ran").exists()
    finally:
        box.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_runtime_binds_its_folders_read_only_and_sets_its_variables(kind, ws, tmp_path):
    tool = tmp_path / "tool"
    (tool / "bin").mkdir(parents=True)
    (tool / "bin" / "greet").write_text("#!/bin/sh\necho greeting from the tool\n")
    (tool / "bin" / "greet").chmod(0o755)
    runtime = Runtime(folders=(tool,), path=(f"{tool}/bin",), env=(("GREETING", "hi"),))
    box = _sandbox(kind, ws, runtime)
    try:
        run = box.exec(f"greet; echo $GREETING; echo venv=${{VIRTUAL_ENV:-unset}}; touch {tool}/planted; echo rc=$?")
    finally:
        box.close()
    assert "greeting from the tool\nhi\nvenv=unset\n" in run.output and "rc=1" in run.output, run.output
    assert not (tool / "planted").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_reporter_folder_is_read_only_and_the_channel_comes_back(kind, ws):
    nonce = new_nonce()
    box = _sandbox(kind, ws, Runtime(reporter=ScriptReporter()))
    try:
        run = box.exec('bash "$REPORTER/report.sh"; echo printed; touch "$REPORTER/planted" && echo WROTE || echo REFUSED',
                       records=nonce)
        later = box.exec('echo "${REPORTER:-gone}"')
    finally:
        box.close()
    assert run.records == f"record {nonce}\n".encode(), (run.records, run.output)
    assert "printed" in run.output and "REFUSED" in run.output and "WROTE" not in run.output, run.output
    assert later.output.strip() == "gone" and later.records is None


EXIT_HANDLER_TEST = ("import atexit\n\natexit.register(lambda: print('EXIT HANDLER RAN'))\n\n\n"
                     "def test_ok():\n    assert True\n")


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_without_a_warm_server_commands_run_cold(kind, ws, monkeypatch):
    """A warm run ends its child with os._exit (no exit handlers); a runtime without a warm server
    has every command run cold, where they run."""
    monkeypatch.setenv("CODE_GYM_WARM_RUNNER", "1")
    (ws / "test_ok.py").write_text(EXIT_HANDLER_TEST)
    outputs = {}
    for name, runtime in (("warm", PYTHON), ("bare", Runtime())):
        box = _sandbox(kind, ws, runtime)
        try:
            outputs[name] = box.exec("python -m pytest -q -s -p no:cacheprovider test_ok.py").output
        finally:
            box.close()
    assert "1 passed" in outputs["warm"] and "EXIT HANDLER RAN" not in outputs["warm"], outputs
    assert "1 passed" in outputs["bare"] and "EXIT HANDLER RAN" in outputs["bare"], outputs


def test_a_container_without_a_warm_server_reaps_and_cleans(ws):
    """PID 1 of a container whose runtime has no warm server: a shell that reaps orphans and
    survives each command's `kill -9 -1`; what a command left (a setsid child, /tmp) is gone, and
    there is no runner socket folder."""
    box = _sandbox("docker", ws, Runtime())
    try:
        first = box.exec("cat /proc/1/cmdline | tr '\\0' ' '; echo; touch /tmp/left; (setsid sleep 300 &); "
                         "(setsid bash -c 'sleep 0.2 & exit 0' &); sleep 1.5; " + PS)
        later = box.exec(f"{PS}; ls /tmp; ls -d /run/code-gym 2>&1")
    finally:
        box.close()
    assert first.output.startswith("bash -c trap"), first.output
    assert " Z " not in first.output.replace("\n", " \n "), first.output  # the orphan was reaped
    assert first.output.count("(sleep)") == 2, first.output  # PID 1's and the setsid child
    assert later.output.count("(sleep)") == 1 and "left" not in later.output, later.output  # PID 1's only
    assert "No such file or directory" in later.output


def test_containers_are_pooled_per_runtime(ws):
    tool = Runtime(env=(("TOOL", "1"),))
    ids = []
    for runtime in (tool, Runtime(env=(("TOOL", "1"),)), PYTHON):
        box = _sandbox("docker", ws, runtime)
        try:
            ids.append(box._box.id)
            assert box.exec("echo ${TOOL:-none}").output.strip() == ("1" if runtime != PYTHON else "none")
        finally:
            box.close()
    assert ids[0] == ids[1] and ids[2] != ids[0]  # an equal runtime reuses the container; another does not


def test_a_runtime_pickles_to_an_equal_one():
    """Runtimes travel to Ray workers by pickle and key runner and container pools."""
    for runtime in (PYTHON, Runtime(reporter=ScriptReporter(), env=(("A", "b"),))):
        again = pickle.loads(pickle.dumps(runtime))
        assert again == runtime and hash(again) == hash(runtime)
