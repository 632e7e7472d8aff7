"""Ray backend: commands run on another node of a Ray cluster, so test execution can leave the GPU nodes.

Each sandbox is a Ray actor (`SandboxHost`) scheduled on a node with free CPUs (`resources` can pin
it to a labelled node pool). The actor keeps its own copy of the workspace and runs each command
in a sandbox of that node (bubblewrap or Docker: `kind`). The episode's workspace stays a host
folder here, so editor tools and diffs are unchanged: before each command the files changed here
since the last sync are sent over, and the files the command changed there come back (as tar
archives of the changed paths, deletions listed). Folders passed as `binds` (grading's results,
the probes' spec and their results) travel the same way: what the host folder holds goes over
before the command, what the command left there comes back.
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import warnings
from pathlib import Path

from code_gym.sandbox.base import ExecResult, Limits, Runtime, check_records
from code_gym.util.hostfs import StatKey, owned_prefix, stat_key, walk

Manifest = dict[str, StatKey]


def manifest(root: Path) -> Manifest:
    """The stat key of every file and symlink under root (ctime and inode with mtime, size and
    mode: a rewrite with its mtime set back still shows), caches skipped as the workspace does."""
    return {path: stat_key(st) for path, st in walk(root).items()}


def pack(root: Path, paths: list[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in paths:
            tar.add(root / path, arcname=path, recursive=False)
    return buf.getvalue()


def unpack(root: Path, data: bytes, deleted: list[str]) -> None:
    for path in deleted:
        target = root / path
        if target.is_symlink() or target.is_file():
            target.unlink()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            target = root / member.name
            if target.is_symlink() or target.is_file():
                target.unlink()
        tar.extractall(root, filter="tar")


def changes(root: Path, before: Manifest) -> tuple[Manifest, list[str], list[str]]:
    """The new manifest, the paths added or changed since `before`, and the paths deleted."""
    now = manifest(root)
    return now, [p for p, key in now.items() if before.get(p) != key], [p for p in before if p not in now]


class SandboxHost:
    """The remote side: a workspace copy and a sandbox of this node. A Ray actor."""

    def __init__(self, kind, archive: bytes, limits: Limits, mask_count: int, image: str | None,
                 runtime: Runtime | None = None):
        from code_gym.sandbox import make_sandbox

        self.base = Path(tempfile.mkdtemp(prefix=owned_prefix("ray")))
        self.root = self.base / "repo"
        self.root.mkdir()
        unpack(self.root, archive, [])
        self.known = manifest(self.root)
        # what making the sandbox warned of (a fall back from bubblewrap, say) goes to the driver:
        # a worker's own warnings stay in its log
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.sandbox = make_sandbox(kind, self.root, limits, image=image, runtime=runtime)
        self.warnings = [str(w.message) for w in caught]

    def describe(self) -> tuple[str, str, str, list[str]]:
        import socket

        return self.sandbox.name, self.sandbox.workdir, socket.gethostname(), self.warnings

    def inside(self, index: int, insides: list[str]) -> str:
        binds = {self.base / f"bind{i}": inside for i, inside in enumerate(insides)}
        return self.sandbox.inside(self.base / f"bind{index}", binds)

    def exec(self, command: str, timeout: float | None, data: bytes, deleted: list[str], insides: list[str],
             records: str | None = None, bound_in: list[bytes] | None = None):
        unpack(self.root, data, deleted)
        self.known = manifest(self.root)
        binds = {}
        for i, inside in enumerate(insides):
            folder = self.base / f"bind{i}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            if bound_in:
                unpack(folder, bound_in[i], [])
            binds[folder] = inside
        result = self.sandbox.exec(command, timeout=timeout, binds=binds, records=records)
        self.known, changed, gone = changes(self.root, self.known)
        bound = [pack(folder, list(manifest(folder))) for folder in binds]
        return result, pack(self.root, changed), gone, bound

    def close(self) -> None:
        self.sandbox.close()
        shutil.rmtree(self.base, ignore_errors=True)


class RayBackend:
    """Sandboxes as Ray actors. `kind`: the sandbox each node uses ('auto': bubblewrap; 'docker');
    `resources`: Ray resources each actor needs (e.g. {"sandbox": 1} for a node pool you label);
    `address`: the cluster ('auto' joins a running one; None starts a local instance if none is up)."""

    def __init__(self, kind: str = "auto", address: str | None = None, num_cpus: float = 1,
                 resources: dict[str, float] | None = None):
        import ray

        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"CODE_GYM_WARM_RUNNER": os.environ.get("CODE_GYM_WARM_RUNNER", "1")}})
        self.kind = kind
        self.actor_class = ray.remote(num_cpus=num_cpus, resources=resources or {}, max_restarts=0)(SandboxHost)
        self.name = "ray"

    def sandbox(self, workspace: Path, limits: Limits, mask: tuple = (), image: str | None = None,
                runtime: Runtime | None = None) -> "RaySandbox":
        """`runtime`: goes to the node by pickle; its folders must lie at the same paths on every node."""
        return RaySandbox(self, Path(workspace), limits, image, runtime)


class RaySandbox:
    """The host side of a remote sandbox: syncs the workspace around each command."""

    def __init__(self, backend: RayBackend, workspace: Path, limits: Limits, image: str | None,
                 runtime: Runtime | None = None):
        import ray

        self.runtime = runtime
        self.root = workspace.resolve()
        self.limits = limits
        self.known = manifest(self.root)
        self.actor = backend.actor_class.remote(backend.kind, pack(self.root, list(self.known)), limits, 0, image,
                                                runtime)
        kind, self.workdir, self.node, said = ray.get(self.actor.describe.remote())
        for message in said:
            warnings.warn(f"code-gym: the sandbox on Ray node {self.node}: {message}", stacklevel=3)
        self.name = f"ray:{kind}"

    def inside(self, host_path: Path, binds: dict[Path, str]) -> str:
        import ray

        return ray.get(self.actor.inside.remote(list(binds).index(host_path), list(binds.values())))

    def exec(self, command: str, *, timeout: float | None = None,
             binds: dict[Path, str] | None = None, records: str | None = None) -> ExecResult:
        import ray

        check_records(self.runtime, records)
        binds = binds or {}
        self.known, changed, gone = changes(self.root, self.known)
        bound_in = [pack(Path(folder), list(manifest(Path(folder)))) for folder in binds]
        call = self.actor.exec.remote(command, timeout, pack(self.root, changed), gone, list(binds.values()),
                                       records, bound_in)
        wait = (timeout or self.limits.timeout) + 60
        try:
            result, data, deleted, bound = ray.get(call, timeout=wait)
        except ray.exceptions.GetTimeoutError:
            ray.cancel(call, force=True)
            return ExecResult("[the remote sandbox did not answer]", None, timed_out=True, duration=wait)
        unpack(self.root, data, deleted)
        for folder, archive in zip(binds, bound):
            unpack(Path(folder), archive, [])
        self.known = manifest(self.root)
        return result

    def close(self) -> None:
        import ray

        if self.actor is not None:
            try:
                ray.get(self.actor.close.remote(), timeout=60)
            finally:
                ray.kill(self.actor)
                self.actor = None
