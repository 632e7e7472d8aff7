"""Warm runner: a test runner already loaded, inside the sandbox, forked once per run.

A runtime may bring a warm server (`Runtime.warm`: its program, the interpreter that runs it, and
`takes(command)`, the argv a command's run gets, or None for a command it does not take). A backend
starts the program once inside a long-lived sandbox, where it listens on a Unix socket in a folder
the host can reach, and sends it each command `takes` accepts. Each request names the argv, the
folder, the environment and, for a run with records, the nonce; the server forks a child that runs
it (its own session, fresh environment) and streams its output back in frames, the records in
frames of their own, and the exit code in a frame of its own, so printed text cannot fake it. The
server may decline a run ("run it cold": e.g. the folder shadows a module it preloaded, which a
cold run would import); the backend then runs the command cold, through the runtime's reporter.
A patch must not be able to choose a cold run: a run that the server does not finish (it died
after taking the request) is a failed run with exit code 137, never run again cold; a server that
does not take a run (an earlier run left it a /tmp it could not empty, so it exited) raises
`RunnerGone`, and the backend runs it on a fresh runner.

Where the runner lives: in a Docker container it is PID 1 (so it also reaps orphans, and after
each run kills every process the run left); locally it is PID 1 of a long-lived bubblewrap
sandbox whose /repo is a shared "slot" mount, like a warm container (`LocalRunners`). After each
run the server empties /tmp and /dev/shm and puts /dev back, so a run sees no file an earlier run
(of this or another episode) left there; `server_program` writes that side for a server in Python.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import socket
import stat
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from code_gym.sandbox import mounts
from code_gym.sandbox.base import CappedOutput, WarmServer

SOCKET_NAME = "runner.sock"
CTL_DIR = "/run/code-gym"  # where the server's socket folder is bound inside a sandbox
_FRAME = struct.Struct(">cI")  # kind (b"o" output, b"r" records, b"x" exit code, b"c" run it cold), payload size

# The server side of the protocol, for a warm server written in Python (`server_program`). Stdlib
# only. `_SERVER_HEAD` runs first (every module the kit uses is imported there, before the
# language's part looks at what is preloaded); the language's part then defines `declines(cwd)`
# (True: the run goes cold) and `run(argv, cwd, records)` (in the forked child, the run's exit
# code; `records` is (write end, nonce) or None); `_SERVER_TAIL` serves.
_SERVER_HEAD = r'''
import ctypes, json, os, resource, select, signal, socket, struct, sys
try:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: commands cannot ptrace or read the server
except Exception:
    pass
'''
_SERVER_TAIL = r'''
FRAME = struct.Struct(">cI")
PID1 = os.getpid() == 1
# sys.argv: [-c, SOCKET, OPTIONS]; OPTIONS (JSON): "runner" [uid, gid] the server becomes, "run" [uid,
# gid] each run becomes, "check" whether the server checks its own state before and after each run
OPTIONS = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
LIBC = ctypes.CDLL(None, use_errno=True)
CAPS = (1, 2, 3, 5, 6, 7)  # DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER (empty /tmp), KILL (what a run left), SETGID, SETUID


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def set_caps(bits):
    """Effective and permitted capabilities exactly `bits` (a subset of what the process holds),
    nothing inheritable or ambient."""
    low, high = bits & 0xFFFFFFFF, bits >> 32
    data = (CapData * 2)(CapData(low, low, 0), CapData(high, high, 0))
    if LIBC.capset(ctypes.byref(CapHeader(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    LIBC.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL


def become(ids, caps=0):
    """Switch every uid and gid to `ids` (uid, gid), keeping only `caps`."""
    uid, gid = ids
    if caps:
        LIBC.prctl(8, 1, 0, 0, 0)  # PR_SET_KEEPCAPS: through the uid change
    os.setgroups([gid])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    set_caps(caps)


def become_runner():
    """The runner's own uid, which no run has: a run then cannot change the runner's limits, priority,
    affinity or OOM score, signal it, trace it, read or write its /proc files, or connect to its
    socket (the kernel asks for the same uid or a capability the run lacks). Dumpable again after
    the change: its /proc files then belong to its uid, not to root (a run's uid under Docker)."""
    if OPTIONS.get("runner"):
        held = int(open("/proc/self/status").read().split("CapPrm:")[1].split()[0], 16)
        become(OPTIONS["runner"], sum(1 << c for c in CAPS) & held)
        LIBC.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE


# The kernel's key management calls by architecture (audit arch, add_key, request_key, keyctl): a
# user's keyrings belong to its uid in the runner's user namespace, so every run there shares them
# (a graded run left the hidden tests in a key, and a later episode's run read it). Docker's default
# seccomp profile refuses them too.
KEY_CALLS = {"x86_64": (0xC000003E, 248, 249, 250), "aarch64": (0xC00000B7, 217, 218, 219)}


def refuse_key_calls():
    """A seccomp filter: the key management calls fail with EPERM (and on x86_64 every x32 call,
    which would reach them under other numbers)."""
    arch, *calls = KEY_CALLS[os.uname().machine]
    x32 = 0x40000000 if arch == 0xC000003E else 0xFFFFFFFF
    allow, refuse = 0x7FFF0000, 0x00050000 | 1
    code = [(0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, allow), (0x20, 0, 0, 0), (0x35, 4, 0, x32),
            (0x15, 3, 0, calls[0]), (0x15, 2, 0, calls[1]), (0x15, 1, 0, calls[2]), (0x06, 0, 0, allow),
            (0x06, 0, 0, refuse)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(code))(*[Filter(*c) for c in code])
    if LIBC.prctl(22, 2, ctypes.byref(Program(len(code), filters)), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp failed")


def become_run_user():
    """In a forked child, before anything of the run: the run's uid and gid, no capability, and no
    keyring (what a run could leave there for the next)."""
    if OPTIONS.get("runner"):
        become(OPTIONS["run"])
        refuse_key_calls()


def process_state():
    """What a process of the same uid could change in this one from outside (limits, priority,
    affinity, scheduling, OOM score, timer slack) and what else it must keep (credentials,
    capabilities, cgroup, folder, descriptors). Compared before and after each run."""
    state = [tuple(resource.getrlimit(getattr(resource, n))) for n in sorted(dir(resource)) if n.startswith("RLIMIT_")]
    state += [os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0),
              os.sched_getparam(0).sched_priority, os.getcwd(), sorted(os.listdir("/proc/self/fd"))]
    for name in ("oom_score_adj", "timerslack_ns", "cgroup", "autogroup", "status"):
        try:
            with open("/proc/self/" + name) as f:
                text = f.read()
        except OSError:
            continue
        if name == "autogroup":  # "/autogroup-N nice K": the nice is what a run could change
            text = text.split()[-1]
        if name == "status":  # the credential, capability and policy lines, not the counters
            text = [l for l in text.splitlines() if l.split(":")[0] in (
                "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")]
        state.append((name, text))
    return state


def changed():
    """Whether the server's own state differs from what it started serving with (then it exits, and
    the host replaces it)."""
    return OPTIONS.get("check", False) and process_state() != STATE


def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def bound_under(tops):
    """(mount points under `tops`, their ancestors below `tops`): the folders the sandbox bound
    into /tmp (a virtualenv or workspace that lives under the host's /tmp), which no run made."""
    points, ancestors = set(), set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split()[4]
                for top in tops:
                    if point.startswith(top + "/"):
                        points.add(point)
                        parent = os.path.dirname(point)
                        while parent != top:
                            ancestors.add(parent)
                            parent = os.path.dirname(parent)
    except OSError:
        pass
    return points, ancestors


def wipe(folder, points=frozenset(), ancestors=frozenset()):
    """Empty a folder a run wrote to (a run may have made its folders unreadable: we own them),
    leaving the sandbox's own mounts (`points`, with the folders that lead to them). Whether
    everything else is gone."""
    try:
        entries = list(os.scandir(folder))
    except PermissionError:
        os.chmod(folder, 0o700)
        entries = list(os.scandir(folder))
    except OSError:
        return True
    clean = True
    for entry in entries:
        if entry.path in points:
            continue
        try:
            if entry.path in ancestors:
                clean = wipe(entry.path, points, ancestors) and clean
            elif entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)
                wipe(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            clean = False
    return clean


def dev_entries():
    """/dev's entries as the server found them at start: name -> (kind, link target)."""
    out = {}
    try:
        for entry in os.scandir("/dev"):
            st = entry.stat(follow_symlinks=False)
            out[entry.name] = (st.st_mode & 0o170000, os.readlink(entry.path) if entry.is_symlink() else None)
    except OSError:
        pass
    return out


def ipc_objects():
    """Whether a System V IPC object exists (a line past the header of /proc/sysvipc/*): only then is
    ipcrm forked, which most runs would pay for nothing. True when that cannot be read."""
    try:
        for kind in ("shm", "sem", "msg"):
            with open("/proc/sysvipc/" + kind) as f:
                if len(f.readlines()) > 1:
                    return True
        return False
    except OSError:
        return True


def wipe_dev(start):
    """Put /dev back as it was at start (a run may write there: on Docker's /dev it outlived the
    run, and a later episode in the pooled container read what a graded run had copied there),
    empty /dev/mqueue and remove System V IPC objects. Whether all of it went."""
    clean = True
    now = dev_entries()
    for name, (kind, target) in now.items():
        if start.get(name) == (kind, target) and kind in (0o020000, 0o060000, 0o120000):
            continue  # a device node or link as it was
        if name in start and start[name][0] == 0o040000 and kind == 0o040000:
            continue  # pts, shm (wiped on its own), mqueue (below)
        path = "/dev/" + name
        try:
            if kind == 0o040000:
                os.chmod(path, 0o700)
                wipe(path)
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            clean = False
    for name, (kind, target) in start.items():
        if target is not None and not os.path.islink("/dev/" + name):
            try:
                os.symlink(target, "/dev/" + name)
            except OSError:
                clean = False
    if os.path.isdir("/dev/mqueue"):
        clean = wipe("/dev/mqueue") and clean
    for ipcrm in ("/usr/bin/ipcrm", "/bin/ipcrm") if ipc_objects() else ():
        if os.path.exists(ipcrm):
            pid = os.fork()
            if pid == 0:
                try:
                    become_run_user()  # the objects are the run's: only their owner may remove them
                    null = os.open("/dev/null", os.O_RDWR)
                    os.dup2(null, 1)
                    os.dup2(null, 2)
                    os.execv(ipcrm, [ipcrm, "--all"])
                finally:
                    os._exit(127)
            os.waitpid(pid, 0)
            break
    return clean


def send(conn, kind, payload=b""):
    conn.sendall(FRAME.pack(kind, len(payload)) + payload)


def child(argv, cwd, env, w, records):
    SERVER.close()  # the listening socket: a run must not take the next request
    become_run_user()
    os.setsid()
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(w, 1)
    os.dup2(w, 2)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    code = 1
    try:
        code = run(argv, cwd, records)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(conn):
    req = json.loads(conn.makefile("rb").readline())
    cwd = req["cwd"]
    if declines(cwd):
        return send(conn, b"c")
    r, w = os.pipe()
    rr, rw = os.pipe() if req.get("records") else (None, None)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        conn.close()
        os.close(r)
        if rr is not None:
            os.close(rr)
        child(req["argv"], cwd, req["env"], w, (rw, req["records"]) if rw is not None else None)
    os.close(w)
    streams = {r: b"o"}
    if rr is not None:
        os.close(rw)
        streams[rr] = b"r"
    status = None
    while status is None:  # the output and the records as they come, until both end and the child is gone
        ready, _, _ = select.select([*streams, conn], [], [], 1.0 if streams else 0.1)
        if conn in ready:  # the host gave up (timeout) or went away
            os.killpg(pid, signal.SIGKILL)
            status = os.waitpid(pid, 0)[1]
            break
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                send(conn, streams[fd], data)
            else:
                del streams[fd]
        if not streams:
            done, status = os.waitpid(pid, os.WNOHANG)
            status = status if done else None
    os.close(r)
    if rr is not None:
        os.close(rr)
    code = os.waitstatus_to_exitcode(status)
    send(conn, b"x", json.dumps(code if code >= 0 else 128 - code).encode())


def main(path):
    global SERVER, STATE
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    os.chdir("/")
    become_runner()
    SERVER = srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for name in (path, path + ".new"):
        if os.path.exists(name):
            os.unlink(name)
    srv.bind(path + ".new")  # listening before the host can see it: a connect is never refused
    os.chmod(path + ".new", 0o600)  # the host's alone (root), never a run's
    srv.listen(8)
    STATE = process_state()
    os.rename(path + ".new", path)
    while True:
        ready, _, _ = select.select([srv], [], [], 0.5)
        reap()
        if not ready:
            continue
        if changed():  # a request waits: refused (reset), the host takes it to a fresh runner
            srv.close()
            sys.exit(1)
        conn, _ = srv.accept()
        try:
            serve(conn)
        except Exception:
            pass
        finally:
            conn.close()
            if PID1:
                try:
                    os.kill(-1, signal.SIGKILL)  # what the run left, setsid children included
                except ProcessLookupError:
                    pass
            reap()
            try:  # nothing a run wrote outside the workspace lasts
                clean = all([wipe(folder, *BOUND) for folder in ("/tmp", "/dev/shm")] + [wipe_dev(DEV)])
            except Exception:  # e.g. a tree too deep to walk
                clean = False
            if not clean or changed():  # the runner goes; the next run starts a fresh one, with a fresh /tmp
                srv.close()  # a run asked for from now on is refused, not left queued
                sys.exit(1)


BOUND = bound_under(("/tmp", "/dev/shm"))  # read at start: what the sandbox itself put there
DEV = dev_entries()
main(sys.argv[1])
'''


def server_program(part: str) -> str:
    """A warm server's program in Python: the protocol's server side and its duties (become the
    runner's uid and fork each run as the run's; reap orphans; as PID 1, kill what each run left;
    after each run empty /tmp and /dev/shm and put /dev back, and exit when that fails or when its
    own state changed) around the language's `part`, which defines `declines(cwd)` and
    `run(argv, cwd, records)` (above)."""
    return _SERVER_HEAD + part + _SERVER_TAIL

# Each run under another uid than its runner (`RUNNER_UID`, which nothing else on the host uses), and
# a runner that checks its own state before and after each run (it exits when that changed, and the
# host starts a fresh one). Tests turn either off to show what an attack gains without it.
ISOLATE_RUNS = True
CHECK_STATE = True
RUNNER_UID = 2_000_000_000
# what the runner keeps once it is RUNNER_UID (the server's CAPS): switch uids, kill and read what a run
# left, empty /tmp
RUNNER_CAPS = ("SETUID", "SETGID", "KILL", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER")


def defences() -> tuple[bool, bool]:
    """The settings a runner starts with: part of every pool key, so a runner serves only runs
    of its own settings."""
    return ISOLATE_RUNS, CHECK_STATE


def server_argv(server: WarmServer, runner_ids: tuple[int, int], run_ids: tuple[int, int]) -> list[str]:
    """The command line of `server` in a sandbox where the server starts with the `RUNNER_CAPS`
    capabilities and `runner_ids` (uid, gid) are the runner's own (with ISOLATE_RUNS), `run_ids` the runs'."""
    options = {"check": CHECK_STATE} | ({"runner": list(runner_ids), "run": list(run_ids)} if ISOLATE_RUNS else {})
    return [*server.interpreter, server.program, f"{CTL_DIR}/{SOCKET_NAME}", json.dumps(options)]


def warm_default() -> bool:
    """Warm runners are on unless CODE_GYM_WARM_RUNNER=0."""
    return os.environ.get("CODE_GYM_WARM_RUNNER", "1") != "0"


class RunnerGone(Exception):
    """The runner did not take the run (it is gone, or went away with the request still queued):
    start a fresh one and run it there, never cold (a patch that ends the runner must not choose a
    cold run for the next one)."""


@dataclass
class WarmRun:
    output: CappedOutput
    exit_code: int | None
    timed_out: bool
    records: bytes = b""  # what the run streamed on its results channel


def unreachable(cap: int, reason: str) -> WarmRun:
    """A run that no runner took, even a fresh one: a failed run (exit code 137), not a cold one."""
    output = CappedOutput(cap)
    output.feed(f"[code-gym: the warm test runner could not take the run: {reason}]\n".encode())
    return WarmRun(output, 137, False)


def run(socket_path: Path, argv: list[str], cwd: str, env: dict[str, str], timeout: float,
        cap: int, records: str | None = None) -> WarmRun | None:
    """One run through the server, or None: the server declined it (run it cold). `records`: the
    run's nonce, to get the server's reporter and its stream.
    Raises RunnerGone when the server did not take the run."""
    output = CappedOutput(cap)
    stream = bytearray()
    deadline = time.monotonic() + timeout
    try:  # the server's own socket, never a link (its folder is sealed: this is the second guard)
        if not stat.S_ISSOCK(os.lstat(socket_path).st_mode):
            raise RunnerGone(f"{socket_path} is not the warm runner's socket")
    except OSError as exc:
        raise RunnerGone(f"cannot reach the warm runner: {exc}") from None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(5)
        try:
            conn.connect(str(socket_path))
        except OSError as exc:
            raise RunnerGone(f"cannot reach the warm runner: {exc}") from None
        request = {"argv": argv, "cwd": cwd, "env": env} | ({"records": records} if records else {})
        try:
            conn.sendall(json.dumps(request).encode() + b"\n")
        except OSError as exc:  # the server is gone and took nothing
            raise RunnerGone(f"the warm runner went away: {exc}") from None
        buf = bytearray()
        answered = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:  # closing the connection makes the server kill the run
                return WarmRun(output, None, True, bytes(stream))
            if not select.select([conn], [], [], min(left, 0.5))[0]:
                continue
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                # reset, not closed: the server went away (a runner that could not empty /tmp exits
                # after its run) with this request still in its listen queue, never accepted, so the
                # run never started; a run the server took ends in a close (below) or frames
                if answered:
                    return WarmRun(output, 137, False, bytes(stream))
                raise RunnerGone("the warm runner went away before it took the run") from None
            if not chunk:  # the server died mid-run (e.g. the run blew the memory limit):
                return WarmRun(output, 137, False, bytes(stream))  # a failed run, never rerun
            answered = True
            buf += chunk
            while len(buf) >= _FRAME.size:
                kind, size = _FRAME.unpack(buf[:_FRAME.size])
                if len(buf) < _FRAME.size + size:
                    break
                payload = bytes(buf[_FRAME.size:_FRAME.size + size])
                del buf[:_FRAME.size + size]
                if kind == b"c":
                    return None
                if kind == b"x":
                    return WarmRun(output, int(json.loads(payload)), False, bytes(stream))
                if kind == b"r":
                    stream += payload
                else:
                    output.feed(payload)
    finally:
        conn.close()


def seal_socket_folder(ctl: Path, proc: subprocess.Popen | None = None, limit: float = 20.0) -> None:
    """Once the server listens in `ctl` (a slot, bound at CTL_DIR inside), make that folder read-only
    everywhere (`mounts.seal`), before any command or run of the sandbox. A run is the repository's
    code: with the folder writable it could leave files there (on the host, outside every quota and
    every wipe, for later runs and episodes to read) or swap the socket for a link, which the host
    would follow to another runner. Raises OSError when the server does not listen or the seal
    fails (the caller then runs nothing warm there)."""
    listening = wait_for_socket(ctl / SOCKET_NAME, proc, limit)
    mounts.seal(ctl)
    if not listening:
        raise OSError(f"the warm runner did not listen at {ctl / SOCKET_NAME} within {limit:.0f} s")


def wait_for_socket(path: Path, proc: subprocess.Popen | None = None, limit: float = 20.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


class Zygote:
    """One long-lived local sandbox running the server, with its slot folders."""

    def __init__(self, slot: Path, proc: subprocess.Popen, group):
        self.slot, self.proc, self.group = slot, proc, group

    @property
    def socket(self) -> Path:
        return self.slot / "ctl" / SOCKET_NAME

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if self.group is not None:
            self.group.remove()
        mounts.remove_slot(self.slot)


class LocalRunners:
    """Idle warm runners for the local bubblewrap backend, keyed by what the sandbox must look like
    (limits, masked folders, bind targets); at most `max_idle` in all, the least recently used
    stopped first."""

    def __init__(self, max_idle: int = 6):
        self.max_idle = max_idle
        self.idle: list[tuple[tuple, Zygote]] = []
        self.lock = threading.Lock()
        self.counter = itertools.count()

    def acquire(self, key: tuple, start) -> Zygote | None:
        stale = []
        found = None
        with self.lock:
            for i in range(len(self.idle) - 1, -1, -1):
                if self.idle[i][0] == key:
                    zygote = self.idle.pop(i)[1]
                    if zygote.alive():
                        found = zygote
                        break
                    stale.append(zygote)
        for zygote in stale:
            zygote.stop()
        return found or start(self.counter)

    def release(self, key: tuple, zygote: Zygote) -> None:
        evicted = []
        with self.lock:
            if zygote.alive():
                self.idle.append((key, zygote))
            else:
                evicted.append(zygote)
            while len(self.idle) > self.max_idle:
                evicted.append(self.idle.pop(0)[1])
        for old in evicted:
            old.stop()

    def close(self) -> None:
        with self.lock:
            zygotes = [z for _, z in self.idle]
            self.idle.clear()
        for zygote in zygotes:
            zygote.stop()


    def forget(self) -> None:
        """Drop the idle runners without stopping them: in a forked child they are the parent's
        (the child cannot wait on them, so they would look dead and be stopped, slot and all)."""
        self.idle = []
        self.lock = threading.Lock()


LOCAL_RUNNERS = LocalRunners()
atexit.register(LOCAL_RUNNERS.close)
os.register_at_fork(after_in_child=LOCAL_RUNNERS.forget)
