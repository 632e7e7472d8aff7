"""Local sandbox: bubblewrap when installed, else `unshare`, else (only when asked) no isolation.

Under bubblewrap a command sees a read-only system, the Python installation, an empty /tmp and
the workspace at /repo, nothing else of the host; it has no network but loopback and its own PID
namespace, so every process it started dies with it (a `setsid` child included). It runs as uid
SANDBOX_UID in a user namespace of its own with no capabilities at all (so it cannot mount,
remount or unmount anything) and cannot create further user namespaces. That uid maps to the host
uid that started bubblewrap (root here): files it creates in the workspace belong to the host-side
editor tools and the grader like their own, and the read-only mounts hold because nothing inside
has CAP_SYS_ADMIN. Where a cgroup is ours to use (code_gym.sandbox.cgroup), each command also runs
in its own group with a process-count and a total-memory limit, and the group is emptied and
removed when the command ends. Commands also see the runtime's folders (read-only) and variables;
under bubblewrap as root, a command its warm server takes goes to a warm runner
(code_gym.sandbox.runner).
"""
from __future__ import annotations

import fcntl
import os
import resource
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from code_gym.sandbox import cgroup, leftovers, mounts, runner
from code_gym.sandbox.records import INSIDE as RECORDS_INSIDE, ReporterFolder
from code_gym.sandbox.base import CappedOutput, ExecResult, Limits, Runtime, check_records, oversized
from code_gym.util.hostfs import TEMP_PREFIX, disk_full

WORKDIR = "/repo"
SANDBOX_UID = 1000  # the uid and gid commands run as (inside their user namespace)
_BWRAP = shutil.which("bwrap") or "bwrap"
# every namespace, a non-root uid, no capabilities, no nested user namespaces (bubblewrap >= 0.8)
_BWRAP_PRIVILEGES = ("--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID),
                     "--gid", str(SANDBOX_UID), "--cap-drop", "ALL", "--die-with-parent", "--new-session")
_SYSTEM_DIRS = ("/usr", "/opt/code-gym-none")
# bubblewrap's root is a tmpfs: made read-only last, once every mount point on it is made. In the
# long-lived runner sandbox a file left there (a /pytest.ini and /conftest.py above /repo) was read
# by every later run, of other episodes too (the red team carried a fix over to empty patches)
_ROOT_READ_ONLY = ("--remount-ro", "/dev", "--remount-ro", "/")  # /dev too (device nodes still work; /dev/shm is its own tmpfs)
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf",
              "localtime", "alternatives", "ssl", "mime.types", "hosts")
_TOP_LINKS = ("bin", "lib", "lib64", "lib32", "sbin")
# what a sandbox with the network keeps of the host's environment: proxies and certificate bundles
_NETWORK_VARIABLES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
                                "REQUESTS_CA_BUNDLE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT"})


def available_isolation() -> list[str]:
    """Isolation kinds that work on this machine, strongest first."""
    kinds = []
    if shutil.which("bwrap") and _probe([_BWRAP, "--ro-bind", "/", "/", *_BWRAP_PRIVILEGES, "true"]):
        kinds.append("bwrap")
    if shutil.which("unshare") and shutil.which("setpriv") and _probe(
            ["unshare", "--user", f"--map-user={SANDBOX_UID}", "--keep-caps", "--mount", "--net", "--pid", "--fork",
             "true"]):
        kinds.append("unshare")
    return kinds + ["none"]


_PROBES: dict[tuple[str, ...], bool] = {}
_PROBE_ERRORS: dict[tuple[str, ...], str] = {}  # the last failure of each probe, for the warning
# a probe that runs out of time is tried again with more: creating namespaces can stall for seconds
# while the kernel tears down many network namespaces (a loaded test run), and a slow answer must not
# settle `auto` on a weaker sandbox for the life of the process (CI once got `unshare` that way)
_PROBE_TIMEOUTS = (10.0, 30.0, 60.0)


def _probe(cmd: list[str]) -> bool:
    """Whether `cmd` exits 0. Only an answer is remembered, and a failure only once it repeats; a
    probe that ran out of every timeout fails this call and is asked again by the next."""
    key = tuple(cmd)
    if key in _PROBES:
        return _PROBES[key]
    failures = 0
    for timeout in _PROBE_TIMEOUTS:
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            _PROBE_ERRORS[key] = f"no answer in {timeout:g} s"
            continue
        except OSError as e:
            _PROBE_ERRORS[key] = str(e)
            _PROBES[key] = False
            return False
        if done.returncode == 0:
            _PROBES[key] = True
            return True
        _PROBE_ERRORS[key] = done.stderr.decode(errors="replace").strip()[-300:] or f"exit {done.returncode}"
        failures += 1
        if failures == 2:
            _PROBES[key] = False
            return False
        time.sleep(0.2)
    return False


def bwrap_problem() -> str | None:
    """Why bubblewrap did not pass its probe on this machine (None: it passed, or was never probed)."""
    return next((why for key, why in _PROBE_ERRORS.items() if key[0] == _BWRAP and not _PROBES.get(key, False)),
                None)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _shipped_tasks() -> list[str]:
    """The task pool shipped inside the installed package (a wheel puts it in site-packages, which
    every sandbox sees): masked like the current task's own folder."""
    return [str(Path(__file__).resolve().parent.parent / "bundled_tasks")]


def _own_installation() -> list[str]:
    """The installation code-gym runs from (its interpreter and packages) where /usr does not hold
    it: part of what this backend shows commands, read-only, like /usr."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return sorted(d for d in dirs if d and not d.startswith("/usr"))


class LocalSandbox:
    """Runs commands on this machine with the workspace as the current directory."""

    def __init__(self, workspace: str | Path, isolation: str = "auto", limits: Limits = Limits(),
                 mask: tuple[str | Path, ...] = (), warm: bool | None = None, runtime: Runtime | None = None,
                 network: bool = False):
        leftovers.reap_on_start()
        self.runtime = runtime
        # the network (bubblewrap only): for installing an environment's sdists, never for agents or tests
        self.network = network
        self.root = Path(workspace).resolve()
        self.limits = limits
        self.mask = tuple(str(Path(m).resolve()) for m in mask)
        kinds = available_isolation()
        if isolation == "auto":
            isolation = kinds[0]
            if isolation == "none":
                raise RuntimeError(
                    "no sandbox is available: install bubblewrap (apt-get install bubblewrap) or allow "
                    "user namespaces; to run untrusted commands without isolation pass isolation='none'")
            if isolation != "bwrap" and shutil.which("bwrap"):
                warnings.warn(f"code-gym: bubblewrap is installed but failed its probe ({bwrap_problem()}); "
                              f"using the weaker {isolation!r} sandbox. Pass isolation='bwrap' to refuse "
                              "anything else.", stacklevel=2)
        elif isolation not in ("bwrap", "unshare", "none"):
            raise ValueError(f"isolation must be 'auto', 'bwrap', 'unshare' or 'none', got {isolation!r}")
        elif isolation not in kinds:
            raise RuntimeError(f"isolation {isolation!r} does not work on this machine; available: {kinds}")
        if isolation == "none":
            warnings.warn("code-gym: running agent commands WITHOUT a sandbox (isolation='none')", stacklevel=2)
        self.name = isolation
        self.workdir = WORKDIR if isolation == "bwrap" else str(self.root)
        if network and isolation != "bwrap":
            raise RuntimeError(f"a sandbox with the network needs bubblewrap, not {isolation!r}")
        # the runtime's warm server: bubblewrap only (it needs the slot mounts: root)
        self.warm = (runner.warm_default() if warm is None else warm) and isolation == "bwrap" and os.geteuid() == 0 \
            and not network and runtime is not None and runtime.warm is not None

    def _read_only_dirs(self) -> list[str]:
        """What commands see read-only besides the system: code-gym's own installation and the
        runtime's folders."""
        dirs = _own_installation()
        if self.runtime is not None:
            dirs += [str(d) for d in self.runtime.folders if str(d) not in dirs and not _under(str(d), "/usr")]
        return dirs

    def _env(self) -> dict[str, str]:
        path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        return {
            "PATH": path,
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "TERM": "dumb",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            **(self.runtime.variables(path) if self.runtime is not None else {}),
            **({k: v for k, v in os.environ.items() if k.upper() in _NETWORK_VARIABLES or k.startswith("UV_")}
               if self.network else {}),
        }

    def _argv(self, command: str, binds: dict[Path, str], env: dict[str, str],
              read_only: dict[Path, str] | None = None) -> list[str]:
        """`read_only`: host folders bound like `binds`, but read-only (not with isolation 'none')."""
        shell = ["bash", "-c", command]
        if self.name == "none":
            return shell
        if self.name == "unshare":
            return self._unshare(command, binds, read_only or {})
        return self._bwrap(self.root, binds, env=env, read_only=read_only) + shell

    def _unshare(self, command: str, binds: dict[Path, str], read_only: dict[Path, str]) -> list[str]:
        """The fallback: its own user (uid SANDBOX_UID, mapped to the host uid that starts it), mount,
        network and PID namespaces. Capabilities in the new namespace (kept for the set-up only) put a
        fresh tmpfs on /tmp (the folders it would hide, the workspace first, are bound back through a
        descriptor opened before), make the system and Python folders read-only and mask the task; the
        command then runs with none (an empty bounding set) and no new privileges. The rest of the
        file system is the host's."""
        q = shlex.quote
        sealed = [str(Path(h).resolve()) for h in read_only]
        keep = [p for p in dict.fromkeys([str(self.root), *(str(Path(h).resolve()) for h in binds), *sealed,
                                          *self._read_only_dirs()])
                if _under(p, "/tmp") and Path(p).is_dir()][:7]  # descriptors 3-9
        setup = [f"exec {3 + i}<{q(p)}" for i, p in enumerate(keep)]
        setup.append(f"mount -t tmpfs -o size={self.limits.file_size_bytes},nosuid,nodev code-gym /tmp")
        setup += [f"mkdir -p {q(p)} && mount --no-canonicalize --bind /proc/self/fd/{3 + i} {q(p)} && exec {3 + i}<&-"
                  for i, p in enumerate(keep)]
        setup += [f"mount --bind {q(d)} {q(d)} && mount -o remount,bind,ro {q(d)}"
                  for d in ("/usr", "/etc", *self._read_only_dirs(), *sealed) if Path(d).is_dir()]
        setup += [f"mount -t tmpfs none {q(m)}" for m in self.mask if Path(m).is_dir()  # what /tmp's tmpfs did not hide
                  and (not _under(m, "/tmp") or any(_under(m, k) for k in keep))]
        setup.append(f"cd {q(str(self.root))}")
        drop = "setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all"
        script = " && ".join(setup + [f"exec {drop} bash -c {q(command)}"])
        return ["unshare", "--user", f"--map-user={SANDBOX_UID}", f"--map-group={SANDBOX_UID}", "--keep-caps",
                "--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", "-c", script]

    def _bwrap(self, repo: Path, binds: dict[Path, str], flags: tuple[str, ...] = (),
               env: dict[str, str] | None = None, read_only: dict[Path, str] | None = None,
               privileges: tuple[str, ...] = _BWRAP_PRIVILEGES) -> list[str]:
        argv = [_BWRAP, *privileges, "--clearenv", *flags]
        if self.network:
            argv += ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        for d in _SYSTEM_DIRS:
            argv += ["--ro-bind-try", d, d]
        for name in _TOP_LINKS:
            top = Path("/") / name
            if top.is_symlink():
                argv += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                argv += ["--ro-bind", str(top), str(top)]
        for name in _ETC_FILES:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # /tmp first: an installation (a venv) or a workspace under /tmp is bound over it
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.limits.file_size_bytes), "--tmpfs", "/tmp",
                 "--size", str(self.limits.file_size_bytes), "--tmpfs", "/dev/shm"]
        visible = [*_SYSTEM_DIRS, *self._read_only_dirs()]
        for d in self._read_only_dirs():
            argv += ["--ro-bind-try", d, d]
        # a masked folder is covered only where a bound folder would show it: elsewhere it is not
        # there at all, and a tmpfs on its path would tell mountinfo where tasks live
        for m in (*self.mask, *_shipped_tasks()):
            if Path(m).is_dir() and any(_under(m, d) for d in visible):
                argv += ["--tmpfs", m]
        argv += ["--bind", str(repo), WORKDIR]
        for host, inside in binds.items():
            argv += ["--bind", str(host), inside]
        for host, inside in (read_only or {}).items():
            argv += ["--ro-bind", str(host), inside]
        for key, value in (env or self._env()).items():
            argv += ["--setenv", key, value]
        return argv + [*_ROOT_READ_ONLY, "--chdir", WORKDIR, "--"]

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.limits.memory_bytes, self.limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.limits.file_size_bytes, self.limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def inside(self, host_path: Path, binds: dict[Path, str]) -> str:
        """How a bound host path appears to commands."""
        return binds[host_path] if self.name == "bwrap" else str(host_path)

    def exec(self, command: str, *, timeout: float | None = None,
             binds: dict[Path, str] | None = None, records: str | None = None) -> ExecResult:
        check_records(self.runtime, records)
        binds = binds or {}
        timeout = self.limits.timeout if timeout is None else timeout
        started = time.monotonic()
        argv = self.runtime.warm.takes(command) if self.warm else None
        warm = self._warm_run(argv, binds, timeout, records) if argv is not None else None
        if warm is not None:
            return ExecResult(warm.output.text(), None if warm.timed_out else warm.exit_code, warm.timed_out,
                              warm.output.dropped > 0, time.monotonic() - started, disk_full(self.root),
                              warm.records if records else None)
        if not records:
            return self._cold(command, binds, timeout, started)
        folder = ReporterFolder(self.runtime.reporter)  # the results channel: the reporter's folder and a pipe
        read_end, first = os.pipe()
        write_end = fcntl.fcntl(first, fcntl.F_DUPFD, 10)  # above the fds the unshare set-up uses
        os.close(first)
        try:
            sealed = {folder.path: RECORDS_INSIDE}
            env = folder.env(self.inside(folder.path, sealed), write_end, records, self._env())
            return self._cold(command, binds, timeout, started, env, (read_end, write_end), sealed)
        finally:
            os.close(read_end)
            folder.close()

    def _cold(self, command: str, binds: dict[Path, str], timeout: float, started: float,
              env: dict[str, str] | None = None, channel: tuple[int, int] | None = None,
              read_only: dict[Path, str] | None = None) -> ExecResult:
        """Run `command` in a sandbox of its own; with `channel` (read end, write end), the command
        inherits the write end and the stream read from it comes back in `records`; `read_only`:
        host folders bound read-only (the reporter's)."""
        env = env or self._env()  # bubblewrap's own environment is what /proc/1/environ shows inside
        argv = self._argv(command, binds, env, read_only)
        refused = oversized(argv, command)
        if refused is not None:  # before anything starts (the kernel would refuse it: E2BIG)
            if channel:
                os.close(channel[1])
            return refused
        group = cgroup.CommandGroup(self.limits.processes, self.limits.memory_bytes) if cgroup.available() else None

        def enter_limits() -> None:
            self._limit()
            if group is not None:
                group.join()

        try:
            proc = subprocess.Popen(
                argv, cwd=self.root, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=enter_limits,
                pass_fds=channel[1:] if channel else (),
            )
            if channel:
                os.close(channel[1])
            stream = bytearray()
            output, timed_out = _read_capped(proc, started + timeout, self.limits.max_output,
                                             (channel[0], stream) if channel else None)
            if timed_out:
                _kill_group(proc)
            try:
                exit_code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                exit_code = proc.wait()
            _kill_group(proc)  # anything left in the session (no-isolation mode)
        finally:
            if group is not None:
                group.remove()  # a setsid child that left the session (no-isolation mode)
        return ExecResult(output.text(), None if timed_out else exit_code, timed_out, output.dropped > 0,
                          time.monotonic() - started, disk_full(self.root), bytes(stream) if channel else None)

    def _warm_run(self, argv: list[str], binds: dict[Path, str], timeout: float, records: str | None):
        """Run `argv` through a warm runner sandbox (None: run it cold). A runner that does not take
        the run (a run before it ended it) is stopped and the run goes to a fresh one; if that fails
        too, the run fails."""
        key = (self.limits, self.mask, tuple(binds.values()), self.runtime, runner.defences())
        start = lambda counter: self._start_runner(counter, list(binds.values()))  # noqa: E731
        reason = ""
        for fresh in (False, True):
            zygote = start(runner.LOCAL_RUNNERS.counter) if fresh else runner.LOCAL_RUNNERS.acquire(key, start)
            if zygote is None:  # no runner starts here: cold (same results channel), never after one went
                return runner.unreachable(self.limits.max_output, reason) if fresh else None
            attached = [(self.root, zygote.slot / "repo")] + [
                (Path(host).resolve(), zygote.slot / f"bind{i}") for i, host in enumerate(binds)]
            gone = False
            try:
                for source, target in attached:
                    mounts.attach(source, target)
                return runner.run(zygote.socket, argv, WORKDIR, self._env(), timeout, self.limits.max_output, records)
            except runner.RunnerGone as exc:
                gone, reason = True, str(exc)
            finally:
                for _, target in attached:
                    mounts.detach(target)
                if gone:
                    zygote.stop()
                else:
                    runner.LOCAL_RUNNERS.release(key, zygote)
        return runner.unreachable(self.limits.max_output, reason)

    def _start_runner(self, counter, insides: list[str]):
        slot = Path(f"/tmp/{TEMP_PREFIX}runner-{os.getpid()}-{next(counter)}")
        folders = {slot / "repo": WORKDIR} | {slot / f"bind{i}": inside for i, inside in enumerate(insides)}
        for folder in [*folders, slot / "ctl"]:  # ctl: shared too, so that its seal reaches the runner
            mounts.shared_folder(folder)
        binds = {f: i for f, i in folders.items() if i != WORKDIR} | {slot / "ctl": runner.CTL_DIR}
        group = cgroup.CommandGroup(self.limits.processes, self.limits.memory_bytes) if cgroup.available() else None

        def enter_limits() -> None:
            self._limit()
            if group is not None:
                group.join()

        try:  # the runner's uid is one no run has (runner.ISOLATE_RUNS)
            userns = _runner_user_namespace() if runner.ISOLATE_RUNS else None
        except OSError:
            if group is not None:
                group.remove()
            mounts.remove_slot(slot)
            return None
        privileges = _BWRAP_PRIVILEGES if userns is None else _runner_privileges(userns)
        ids = (SANDBOX_UID, SANDBOX_UID)
        argv = self._bwrap(slot / "repo", binds, ("--as-pid-1",), privileges=privileges) + runner.server_argv(
            self.runtime.warm, (0, 0), ids)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=enter_limits,
                                    env=self._env(), pass_fds=() if userns is None else (userns,))
        finally:
            if userns is not None:
                os.close(userns)
        zygote = runner.Zygote(slot, proc, group)
        try:  # listening: its folder goes read-only before any run (runner.seal_socket_folder)
            runner.seal_socket_folder(slot / "ctl", proc)
        except OSError:
            zygote.stop()
            return None
        return zygote

    def close(self) -> None:
        pass


# Makes a user namespace (keeping the capabilities its creator holds there) and, once the host has
# written its maps, sets its limit of nested user namespaces to 0; lives until its stdin ends.
_USERNS_HELPER = ["unshare", "--user", "--keep-caps", "--", "sh", "-c",
                  "echo; read go; echo 0 > /proc/sys/user/max_user_namespaces && echo ok; read done"]


def _runner_user_namespace() -> int:
    """A descriptor of a new user namespace for a warm runner: SANDBOX_UID (uid and gid) maps to the
    host's own, as in every sandbox here (the runs are that uid), and 0 to runner.RUNNER_UID, the
    runner's own, which no run has; no user namespace can be made inside it (max_user_namespaces 0,
    what --disable-userns does for a plain sandbox)."""
    with subprocess.Popen(_USERNS_HELPER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as helper:
        try:
            helper.stdout.readline()  # unshared
            for kind, host in (("uid", os.getuid()), ("gid", os.getgid())):
                Path(f"/proc/{helper.pid}/{kind}_map").write_text(f"0 {runner.RUNNER_UID} 1\n{SANDBOX_UID} {host} 1\n")
            helper.stdin.write("go\n")
            helper.stdin.flush()
            if helper.stdout.readline() != "ok\n":
                raise OSError("could not close the warm runner's user namespace to nested ones")
            return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY)
        finally:
            helper.kill()


def _runner_privileges(userns: int) -> tuple[str, ...]:
    """bubblewrap's flags for a runner in `userns`: every other namespace of its own, and the
    capabilities the server keeps once it is the runner's uid (it forks each run as SANDBOX_UID,
    with none)."""
    caps = [flag for cap in runner.RUNNER_CAPS for flag in ("--cap-add", f"CAP_{cap}")]
    return ("--userns", str(userns), "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--cap-drop", "ALL", *caps, "--die-with-parent", "--new-session")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(proc: subprocess.Popen, deadline: float, cap: int,
                 channel: tuple[int, bytearray] | None = None) -> tuple[CappedOutput, bool]:
    """Read stdout until EOF or the deadline (then True), keeping its head and tail; with `channel`
    (a pipe's read end, a buffer), collect what arrives on it too, until it ends."""
    output = CappedOutput(cap)
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    if channel:
        sel.register(channel[0], selectors.EVENT_READ)
    open_ = {fd} | ({channel[0]} if channel else set())
    try:
        while open_:
            left = deadline - time.monotonic()
            if left <= 0:
                return output, True
            for key, _ in sel.select(timeout=min(left, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    open_.discard(key.fd)
                elif key.fd == fd:
                    output.feed(chunk)
                else:
                    channel[1].extend(chunk)
        return output, False
    finally:
        sel.close()
        proc.stdout.close()
