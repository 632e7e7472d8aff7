"""Where agent commands and tests run. `make_sandbox` is the one place that picks a backend."""
from code_gym.sandbox.base import Backend, ExecResult, Limits, Reporter, Runtime, Sandbox, WarmServer
from code_gym.sandbox.local import LocalSandbox, available_isolation

__all__ = ["Backend", "ExecResult", "ISOLATION_KINDS", "Limits", "Reporter", "Runtime", "Sandbox", "WarmServer",
           "LocalSandbox", "available_isolation", "make_sandbox", "backend"]

_SHARED: dict[str, Backend] = {}


def backend(kind: str) -> Backend | None:
    """The process-wide backend for 'docker' (warm pool), 'docker-fresh' (a container per sandbox) or
    'ray'; None for the local kinds."""
    if kind not in ("docker", "docker-fresh", "ray"):
        return None
    if kind not in _SHARED:
        if kind == "ray":
            from code_gym.sandbox.ray import RayBackend

            _SHARED[kind] = RayBackend()
        else:
            from code_gym.sandbox.docker import DockerBackend

            _SHARED[kind] = DockerBackend(pool=kind == "docker")
    return _SHARED[kind]


# the names `make_sandbox` takes for `kind` (besides a backend object)
ISOLATION_KINDS = ("auto", "bwrap", "unshare", "none", "docker", "docker-fresh", "ray")


def make_sandbox(kind, workspace, limits: Limits | None = None, mask=(), image: str | None = None,
                 runtime: Runtime | None = None) -> Sandbox:
    """A sandbox for `workspace`. `kind`: 'auto', 'bwrap', 'unshare', 'none' (no isolation: explicit
    opt-in only), 'docker', 'docker-fresh', 'ray', or a Backend object (e.g. DockerBackend(...)).
    `image` is the task's container image (container backends; None: the backend's default);
    `runtime` what the task's language gives its commands (`Language.runtime(task)`: folders bound
    read-only, variables, the records reporter, a warm server); None: a bare sandbox, whose commands
    cannot report records."""
    limits = limits or Limits()
    chosen = kind if hasattr(kind, "sandbox") else backend(kind)
    if chosen is not None:
        extra = {"runtime": runtime} if runtime is not None else {}
        return chosen.sandbox(workspace, limits, mask=tuple(mask), image=image, **extra)
    return LocalSandbox(workspace, isolation=kind, limits=limits, mask=mask, runtime=runtime)
