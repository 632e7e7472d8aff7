"""Docker sandbox: commands run in a container that sees the episode's host workspace at /repo.

The workspace stays a host folder (diffs and editor tools are the same as with the local
backend). A container does not get the workspace as a plain bind mount, which would tie it to
one episode: it gets a "slot", a host folder made a shared mount and bound at /repo with slave
propagation. Attaching an episode bind-mounts its workspace onto the slot on the host, and the
mount propagates into the running container. So one warm container serves episode after
episode; reset costs two mount(2) calls and a clean-up `docker exec`, not a container start.
Folders passed as `binds` (grading's results folder) are attached the same way under
/mnt/code-gym.

Each container: no network, a read-only root file system (writable: the workspace, a size-capped
/tmp and the binds), memory, CPU and pids limits from `Limits`, file-size ulimit, all
capabilities dropped, no-new-privileges. Each command runs under `timeout` inside and a host
deadline outside (docker-py has no per-call timeout), and ends by killing every process it left
(`kill -9 -1`: a `setsid` child cannot outlive its command). PID 1 is the runtime's warm server
(code_gym.sandbox.runner), which also reaps orphans, or without one a shell that only reaps them.
The runtime's folders are bound read-only at their own paths. Everything created carries the
label `code-gym` and the creating process's id; `reap()` removes what a crashed process left.
Needs root on the host (mount(2)); Docker access is root-equivalent anyway.
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import select
import socket
import struct
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from code_gym.sandbox import leftovers, mounts, runner
from code_gym.sandbox.records import ReporterFolder
from code_gym.sandbox.images import DEFAULT_IMAGE, LABEL, image_packages
from code_gym.sandbox.base import CappedOutput, ExecResult, Limits, Runtime, check_records, oversized
from code_gym.sandbox.cgroup import pid_alive
from code_gym.util.hostfs import TEMP_PREFIX, disk_full

WORKDIR = "/repo"
BINDS_DIR = "/mnt/code-gym"
OWNER_LABEL = f"{LABEL}.owner"
SLOT_LABEL = f"{LABEL}.slot"
_HOST_GRACE = 5.0  # seconds past the in-container timeout before the host gives up on an exec
_START_SLOTS = threading.BoundedSemaphore(4)  # parallel container starts (dockerd serializes much of it)
_COUNTER = itertools.count()
# the binds folder read-only inside (what the host attaches there propagates in with its own
# flags): a link a command put there made the host mount a bind over any host folder it named
_BINDS_READ_ONLY = True
_HOST = socket.gethostname()

# Runs each command: the timeout kills its process group, `kill -9 -1` everything else it left, and
# /tmp and /dev/shm are emptied (a folder the command made unreadable is made readable first: the
# command owns what it left there).
_FIND = "find /tmp /dev/shm -mindepth 1 -delete 2>/dev/null"
_WIPE = f"{_FIND} || {{ chmod -R u+rwX /tmp /dev/shm 2>/dev/null; {_FIND}; }}"
# /dev as the container started (Docker's /dev is a writable tmpfs that outlives commands and
# episodes in a pooled container: the red team read hidden tests a graded run had copied there),
# /dev/mqueue empty, no System V IPC object left
_DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
              "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}
_DEV_WIPE = ("find /dev -mindepth 1 -maxdepth 1 ! -type c ! -name pts ! -name shm ! -name mqueue -exec rm -rf {} + "
             "2>/dev/null; " + "; ".join(f"ln -s {t} /dev/{n} 2>/dev/null" for n, t in _DEV_LINKS.items())
             + "; find /dev/mqueue -mindepth 1 -delete 2>/dev/null; ipcrm --all 2>/dev/null")
_WIPE += "; " + _DEV_WIPE
_WRAPPER = f'timeout -k 1 "$1" bash -c "$2" </dev/null; rc=$?; kill -9 -1 2>/dev/null; {_WIPE}; exit $rc'
# With a results channel: the command's stderr joins its stdout, and fd 3 is the exec's stderr
# stream, which carries nothing but what the runtime's reporter writes to it.
_RECORDS_WRAPPER = _WRAPPER.replace("</dev/null;", "</dev/null 3>&2 2>&1;", 1)
# A container whose warm server runs as its own uid holds the capabilities it starts with
# (runner.RUNNER_CAPS, and SETPCAP for this): a command drops every one before it starts (with
# no-new-privileges, nothing it runs gets any back), so it can neither become the runner's uid nor
# act on processes or files beyond its own uid's
_DROP_CAPS = "setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all "
_ENV = {"HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
        "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "PATH": "/usr/local/bin:/usr/bin:/bin"}
_CLEAN = f"kill -9 -1 2>/dev/null; {_WIPE}; true"
# PID 1 of a container whose runtime has no warm server: it reaps the orphans that commands leave (a
# `kill -9 -1` spares PID 1, so only its `sleep` dies, and the loop starts another)
_REAPER = ["bash", "-c", "trap '' TERM INT HUP; while :; do sleep 3600 & wait $!; done"]


def docker_unavailable() -> str | None:
    """Why the Docker backend cannot run here (None when it can)."""
    try:
        import docker
    except ImportError:
        return "the docker Python package is missing: pip install 'code-gym[docker]'"
    if os.geteuid() != 0:
        return "the Docker backend needs root (it mounts workspaces into running containers)"
    try:
        docker.from_env(timeout=10).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable daemon
        return f"no Docker daemon answers ({type(exc).__name__}); start dockerd"
    return None


_CLIENT = None
_CLIENT_LOCK = threading.Lock()


def client():
    """One shared client: API calls time out after 120 s; exec output is read with our own deadline."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            import docker

            _CLIENT = docker.from_env(timeout=120, max_pool_size=64)
        return _CLIENT


@dataclass
class _Container:
    """A started container and its host-side slot folders."""
    id: str
    key: tuple
    slot: Path  # slot/repo is bound at /repo, slot/binds at /mnt/code-gym
    execs: int = 0
    dirty: bool = False  # an exec was abandoned: processes may be left
    caps: bool = False  # it holds capabilities (for its warm server): commands drop them first

    @property
    def repo(self) -> Path:
        return self.slot / "repo"

    @property
    def binds(self) -> Path:
        return self.slot / "binds"


@dataclass
class _Pool:
    """Idle warm containers per (image, limits) key."""
    idle: dict[tuple, list[_Container]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class DockerBackend:
    """Makes Docker sandboxes. `pool`: keep containers warm and reuse them (False: a fresh container
    per sandbox, removed at close). `image`: used for tasks that name none."""

    def __init__(self, image: str = DEFAULT_IMAGE, pool: bool = True, max_idle: int = 16, warm: bool | None = None):
        reason = docker_unavailable()
        if reason:
            raise RuntimeError(f"Docker backend unavailable: {reason}")
        self.image = image
        self.pool = pool
        self.max_idle = max_idle
        self.warm_runner = warm  # the runtime's warm server for the commands it takes; None: CODE_GYM_WARM_RUNNER decides
        self._pool = _Pool()
        self.name = "docker" if pool else "docker-fresh"
        leftovers.reap_on_start()
        reap()
        _BACKENDS.add(self)

    def sandbox(self, workspace: Path, limits: Limits, mask: tuple = (), image: str | None = None,
                runtime: Runtime | None = None) -> "DockerSandbox":
        return DockerSandbox(self, Path(workspace), limits, image or self.image, runtime)

    def _key(self, image: str, limits: Limits, runtime: Runtime | None = None) -> tuple:
        return (image, limits.memory_bytes, limits.processes, limits.cpus, limits.file_size_bytes, runtime,
                runner.defences())

    def acquire(self, image: str, limits: Limits, runtime: Runtime | None = None) -> _Container:
        key = self._key(image, limits, runtime)
        while True:
            with self._pool.lock:
                idle = self._pool.idle.get(key, [])
                box = idle.pop() if idle else None
            if box is None:
                return _create(key, image, limits, runtime)
            if _running(box.id):
                return box
            # its PID 1 (the warm server) ended after the container was given back, e.g. a run left a
            # /tmp it could not empty: remove it and take another
            _remove(box)

    def release(self, box: _Container) -> None:
        """Detach the episode; return the container to the pool clean, or remove it."""
        mounts.detach(box.repo)
        for sub in list(box.binds.iterdir()) if box.binds.exists() else []:
            if sub.is_symlink() or not sub.is_dir():
                sub.unlink()
                continue
            mounts.detach(sub, keep=0)
            sub.rmdir()
        if self.pool and not box.dirty:
            try:
                _exec_simple(box.id, _CLEAN)
            except Exception:  # noqa: BLE001 - a broken container is removed below
                box.dirty = True
        with self._pool.lock:
            if self.pool and not box.dirty and len(self._pool.idle.get(box.key, [])) < self.max_idle:
                self._pool.idle.setdefault(box.key, []).append(box)
                return
        _remove(box)

    def warm(self, count: int, image: str | None = None, limits: Limits = Limits(),
             runtime: Runtime | None = None) -> None:
        """Start `count` containers for sandboxes with `runtime` now so the first episodes do not
        wait for them."""
        boxes = [self.acquire(image or self.image, limits, runtime) for _ in range(count)]
        for box in boxes:
            self.release(box)

    def close(self) -> None:
        """Remove every idle container (sandboxes still open remove theirs when closed)."""
        with self._pool.lock:
            boxes = [b for idle in self._pool.idle.values() for b in idle]
            self._pool.idle.clear()
        for box in boxes:
            _remove(box)


_BACKENDS: "weakref.WeakSet[DockerBackend]" = weakref.WeakSet()


@atexit.register
def _close_backends() -> None:
    for backend in list(_BACKENDS):
        backend.close()


def _forget_pools() -> None:
    """In a forked child (an AsyncVectorEnv worker) the idle containers are the parent's: start
    with empty pools, so the child neither hands them out twice nor removes them at exit."""
    for backend in list(_BACKENDS):
        backend._pool = _Pool()


os.register_at_fork(after_in_child=_forget_pools)


def _runtime_mounts(runtime: Runtime | None) -> list:
    """The runtime's folders bound read-only at their own paths. (A runtime leaves out what the image
    has: the default image is the same Debian release as the machines it is built on, so its /usr
    holds the same builds as the host's.)"""
    from docker.types import Mount

    folders = runtime.folders if runtime is not None else ()
    return [Mount(str(d), str(d), type="bind", read_only=True) for d in folders]


def _env_variables(runtime: Runtime | None) -> dict[str, str]:
    return _ENV | (runtime.variables(_ENV["PATH"]) if runtime is not None else {})


def _running(container_id: str) -> bool:
    try:
        return bool(client().api.inspect_container(container_id)["State"]["Running"])
    except Exception:  # noqa: BLE001 - gone or unreadable: not usable
        return False


def _create(key: tuple, image: str, limits: Limits, runtime: Runtime | None = None) -> _Container:
    from docker.types import Mount, Ulimit

    _require_image(image, runtime)
    warm = runtime.warm if runtime is not None else None
    slot = Path(f"/tmp/{TEMP_PREFIX}docker-{os.getpid()}-{next(_COUNTER)}")
    mounts.shared_folder(slot / "repo")
    mounts.shared_folder(slot / "binds")
    labels = {LABEL: "container", OWNER_LABEL: f"{_HOST}:{os.getpid()}", SLOT_LABEL: str(slot)}
    volumes = [Mount(WORKDIR, str(slot / "repo"), type="bind", propagation="rslave"),
               Mount(BINDS_DIR, str(slot / "binds"), type="bind", propagation="rslave", read_only=_BINDS_READ_ONLY),
               *_runtime_mounts(runtime)]
    if warm is not None:  # the server's socket folder: shared, so that its seal reaches the container
        mounts.shared_folder(slot / "ctl")
        volumes.append(Mount(runner.CTL_DIR, str(slot / "ctl"), type="bind", propagation="rslave"))
    fsize = limits.file_size_bytes
    ids = (os.getuid(), os.getgid())
    pid1 = runner.server_argv(warm, (runner.RUNNER_UID, runner.RUNNER_UID), ids) if warm is not None else _REAPER
    # the warm server becomes a uid of its own (runner.ISOLATE_RUNS): it needs the capabilities to
    # switch and keep its duties; commands drop them (_DROP_CAPS)
    caps = [*runner.RUNNER_CAPS, "SETPCAP"] if warm is not None and runner.ISOLATE_RUNS else []
    container = None
    try:
        with _START_SLOTS:
            container = client().containers.create(
                image, pid1, name=slot.name, labels=labels, network_mode="none", read_only=True, mounts=volumes, working_dir=WORKDIR,
                tmpfs={"/tmp": f"size={fsize},mode=1777,exec"},
                mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes,
                pids_limit=limits.processes, nano_cpus=int(limits.cpus * 1e9),
                ulimits=[Ulimit(name="fsize", soft=fsize, hard=fsize), Ulimit(name="core", soft=0, hard=0)],
                cap_drop=["ALL"], cap_add=caps, security_opt=["no-new-privileges"], user="{}:{}".format(*ids),
                stop_signal="SIGKILL")
            container.start()
        # before any command: the runner's socket folder read-only (runner.seal_socket_folder); a
        # runner that never listens fails its runs (RunnerGone), the folder sealed all the same
        try:
            if warm is not None:
                runner.seal_socket_folder(slot / "ctl")
        except OSError:
            if not mounts.mounts_at(slot / "ctl") > 1:
                raise
    except BaseException:
        if container is not None:
            container.remove(force=True)
        mounts.remove_slot(slot)
        raise
    return _Container(container.id, key, slot, caps=bool(caps))


def _require_image(image: str, runtime: Runtime | None) -> None:
    """Never pull (no registry is assumed reachable): a missing image is the user's to build or load.
    An image code-gym built (it lists its packages) must hold the runtime's packages."""
    held = image_packages(client(), image)
    if held is None:
        hint = "build it with `code-gym image build`" if image == DEFAULT_IMAGE else "load or build it first"
        raise RuntimeError(f"Docker image {image!r} is not on this machine: {hint}")
    missing = sorted(set(runtime.packages if runtime else ()) - held) if held else []
    if missing:
        raise RuntimeError(f"Docker image {image!r} lacks {', '.join(missing)}, which this task's commands need: "
                           "build it again with `code-gym image build` (it adds every language's packages)")


def _remove(box: _Container) -> None:
    import docker.errors

    try:
        client().api.remove_container(box.id, force=True)
    except docker.errors.NotFound:
        pass
    mounts.remove_slot(box.slot)


def _exec_simple(container_id: str, script: str) -> None:
    api = client().api
    exec_id = api.exec_create(container_id, ["bash", "-c", script], user="0:0")["Id"]
    api.exec_start(exec_id)


def _reap_leftovers(container_id: str) -> None:
    """Kill what a command left and empty /tmp and /dev/shm, from an exec of its own: a command can
    kill its wrapper shell (exit 137) before the wrapper's own `kill -9 -1` runs, and a process it
    started then outlives it into the next steps (the red team raced the host's editor writes
    from one). Run whenever the wrapper did not end by itself."""
    try:
        _exec_simple(container_id, _CLEAN)
    except Exception:  # noqa: BLE001 - a container gone meanwhile has nothing left to kill
        pass


def _run_exec(container_id: str, command: str, timeout: float, limits: Limits, env: dict[str, str] | None = None,
              records: bytearray | None = None, drop_caps: bool = False) -> tuple[CappedOutput, int | None, bool]:
    """Run one command; returns (output, exit code, abandoned: the host deadline passed). With
    `records`, the exec's stderr stream is the results channel and is collected there; `drop_caps`:
    the container holds capabilities, which the command must not."""
    api = client().api
    wrapper = _WRAPPER if records is None else _RECORDS_WRAPPER
    if drop_caps:
        wrapper = wrapper.replace('"$1" bash -c', f'"$1" {_DROP_CAPS}bash -c', 1)
    exec_id = api.exec_create(container_id, ["bash", "-c", wrapper, "code-gym", f"{timeout:g}", command],
                              environment=env or _ENV, workdir=WORKDIR, user=f"{os.getuid()}:{os.getgid()}")["Id"]
    sock = api.exec_start(exec_id, socket=True)
    raw = getattr(sock, "_sock", sock)
    output = CappedOutput(limits.max_output)
    deadline = time.monotonic() + timeout + _HOST_GRACE
    abandoned = not _read_frames(raw, output, deadline, records)
    try:
        raw.close()
    except OSError:
        pass
    if abandoned:
        return output, None, True
    for _ in range(50):  # the exit code can lag the end of the stream by a moment
        info = api.exec_inspect(exec_id)
        if not info["Running"]:
            return output, info["ExitCode"], False
        time.sleep(0.01)
    return output, None, True


def _read_frames(raw, output: CappedOutput, deadline: float, records: bytearray | None = None) -> bool:
    """Demultiplex Docker's stream frames (8-byte header: stream, 0, 0, 0, size) until EOF (True) or
    the deadline; stderr frames (stream 2) go to `records` when given."""
    buf = bytearray()
    fd = raw.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return True
        buf += chunk
        while len(buf) >= 8:
            size = struct.unpack(">I", buf[4:8])[0]
            if len(buf) < 8 + size:
                break
            if records is not None and buf[0] == 2:
                records += buf[8:8 + size]
            else:
                output.feed(bytes(buf[8:8 + size]))
            del buf[:8 + size]


def _bind_target(folder: Path) -> Path:
    """`folder` as a folder made here, to attach a bind onto: never through what stands there (a
    link would make mount(2) cover whatever host folder it names)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(exist_ok=True)
    return folder


def _release(backend: DockerBackend, holder: list) -> None:
    if holder:
        backend.release(holder.pop())


class DockerSandbox:
    """One episode's (or one grading run's) hold on a container."""

    def __init__(self, backend: DockerBackend, workspace: Path, limits: Limits, image: str,
                 runtime: Runtime | None = None):
        self.name = backend.name
        self.workdir = WORKDIR
        self.root = workspace.resolve()
        self.limits = limits
        self.image = image
        self.runtime = runtime
        self.env = _env_variables(runtime)
        # read per sandbox, as the local backend does (the shared backend outlives a setting)
        self.warm = (runner.warm_default() if backend.warm_runner is None else backend.warm_runner) \
            and runtime is not None and runtime.warm is not None
        self._backend = backend
        self._holder: list[_Container] = [backend.acquire(image, limits, runtime)]
        # grading and other callers may drop a sandbox without close(): give the container back then too
        self._finalizer = weakref.finalize(self, _release, backend, self._holder)
        try:
            mounts.attach(self.root, self._box.repo)
        except OSError:
            self.close()
            raise

    @property
    def _box(self) -> _Container:
        if not self._holder:
            raise RuntimeError("this sandbox is closed")
        return self._holder[0]

    def inside(self, host_path: Path, binds: dict[Path, str]) -> str:
        return f"{BINDS_DIR}/{list(binds).index(host_path)}"

    def exec(self, command: str, *, timeout: float | None = None,
             binds: dict[Path, str] | None = None, records: str | None = None) -> ExecResult:
        check_records(self.runtime, records)
        timeout = self.limits.timeout if timeout is None else timeout
        started = time.monotonic()
        argv = self.runtime.warm.takes(command) if self.warm else None
        warm = self._warm_run(argv, binds or {}, timeout, records) if argv is not None else None
        if warm is not None:  # the server killed a run that timed out (the host closed the connection)
            return ExecResult(warm.output.text(), warm.exit_code, warm.timed_out, warm.output.dropped > 0,
                              time.monotonic() - started, disk_full(self.root), warm.records if records else None)
        refused = oversized(["bash", "-c", _RECORDS_WRAPPER, "code-gym", f"{timeout:g}", command], command)
        if refused is not None:
            return refused
        folder = ReporterFolder(self.runtime.reporter) if records else None
        binds = {**(binds or {}), **({folder.path: ""} if folder else {})}
        stream = bytearray() if records else None
        box = self._box
        try:
            with self._attached(box, binds, frozenset({folder.path} if folder else ())):
                env = folder.env(self.inside(folder.path, binds), 3, records, self.env) if folder else self.env
                output, exit_code, abandoned = _run_exec(box.id, command, timeout, self.limits, env, stream, box.caps)
        finally:
            if folder:
                folder.close()
        duration = time.monotonic() - started
        if abandoned:
            box.dirty = True
        if abandoned or exit_code is None or exit_code >= 128:  # the wrapper may have died before its kill -9 -1
            _reap_leftovers(box.id)
        timed_out = abandoned or exit_code == 124 or (exit_code == 137 and duration >= timeout)
        return ExecResult(output.text(), None if timed_out else exit_code, timed_out, output.dropped > 0, duration,
                          disk_full(self.root), bytes(stream) if records else None)

    @contextlib.contextmanager
    def _attached(self, box: _Container, binds: dict[Path, str], read_only: frozenset[Path] = frozenset()):
        """`binds` attached under the container's binds folder for the duration; those in `read_only`
        sealed read-only (`mounts.seal`: the copy propagates in read-only)."""
        attached = []
        try:
            for i, host in enumerate(binds):
                target = _bind_target(box.binds / str(i))
                mounts.attach(Path(host).resolve(), target)
                attached.append(target)
                if host in read_only:
                    mounts.seal(target)
            yield
        finally:
            for target in attached:
                mounts.detach(target, keep=0)
                target.rmdir()

    def _warm_run(self, argv: list[str], binds: dict[Path, str], timeout: float, records: str | None):
        """Run `argv` through the container's warm server (None: run it cold). A runner that does not
        take the run has ended its container (it is PID 1): the sandbox moves to a fresh container
        and runs it there."""
        reason = ""
        for _ in range(2):
            box = self._box
            socket_path = box.slot / "ctl" / runner.SOCKET_NAME
            runner.wait_for_socket(socket_path)  # a container just started may not listen yet
            try:
                with self._attached(box, binds):
                    return runner.run(socket_path, argv, WORKDIR, self.env, timeout,
                                      self.limits.max_output, records)
            except runner.RunnerGone as exc:
                reason = str(exc)
                self._replace_box()
        return runner.unreachable(self.limits.max_output, reason)

    def _replace_box(self) -> None:
        """Give the container back as broken (it is removed) and attach the workspace to a new one
        (not one from the pool: an idle container may have lost its runner the same way)."""
        box = self._holder.pop()
        box.dirty = True
        self._backend.release(box)
        fresh = _create(self._backend._key(self.image, self.limits, self.runtime), self.image, self.limits,
                        self.runtime)
        self._holder.append(fresh)
        mounts.attach(self.root, fresh.repo)

    def close(self) -> None:
        self._finalizer()


def orphans() -> list:
    """Containers labelled by code-gym processes of this host that are gone."""
    found = []
    for container in client().containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(OWNER_LABEL, "")
        host, _, pid = owner.rpartition(":")
        if host == _HOST and pid.isdigit() and not pid_alive(int(pid)):
            found.append(container)
    return found


def reap() -> int:
    """Remove containers and slot folders left by crashed code-gym processes. Returns how many containers."""
    import docker.errors

    gone = orphans()
    for container in gone:
        slot = Path(container.labels.get(SLOT_LABEL, ""))
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
        if slot.name.startswith(f"{TEMP_PREFIX}docker-"):
            mounts.remove_slot(slot)
    for slot in Path("/tmp").glob(f"{TEMP_PREFIX}docker-*"):
        pid = slot.name.split("-")[-2]
        if pid.isdigit() and not pid_alive(int(pid)):
            mounts.remove_slot(slot)
    return len(gone)
