from code_gym.sandbox.base import ExecResult, Limits, Sandbox
from code_gym.sandbox.local import LocalSandbox, available_isolation

__all__ = ["ExecResult", "Limits", "Sandbox", "LocalSandbox", "available_isolation", "make_sandbox"]


def make_sandbox(kind: str, workspace, limits: Limits | None = None, mask=()) -> Sandbox:
    """A sandbox by name: 'auto', 'bwrap', 'unshare' or 'none' (no isolation: explicit opt-in only)."""
    return LocalSandbox(workspace, isolation=kind, limits=limits or Limits(), mask=mask)
