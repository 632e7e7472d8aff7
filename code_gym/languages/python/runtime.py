"""The Python Runtime (`code_gym.sandbox.Runtime`): what a sandbox needs to run a Python task's
commands and tests.

With a task environment (a virtualenv, environments/build.py), backends bind its folder read-only
at its own path with the installation its interpreter comes from (unless that is the system's /usr,
which every sandbox has), put its bin/ first on PATH, set VIRTUAL_ENV, and load its pytest plugins
through PYTEST_PLUGINS. Without one, commands use the interpreter the backend provides: code-gym's
own locally (the local backend shows its own installation), the image's in a container. Either way
pytest's plugin autoloading is off (only plugins a task declares with -p or its environment holds
load), the grader's plugin reports records (reporter.py), and `python -m pytest` goes to a warm
server run by the tests' own interpreter (warm.py).
"""
from __future__ import annotations

from pathlib import Path

from code_gym.languages.python.reporter import PytestReporter
from code_gym.languages.python.warm import warm_server
from code_gym.sandbox.base import Runtime

_AUTOLOAD_OFF = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
PACKAGES = ("python3", "python-is-python3", "python3-pytest")  # what a container image needs (Debian)


def python_runtime(prefix: Path | None = None, base_prefix: Path | None = None,
                   pytest_plugins: tuple[str, ...] = ()) -> Runtime:
    """The runtime of the virtualenv at `prefix`, made from the installation at `base_prefix`, whose
    pytest11 entry points are `pytest_plugins`; None: no environment (the backend's interpreter)."""
    if prefix is None:
        return Runtime(env=(_AUTOLOAD_OFF,), reporter=PytestReporter(), warm=warm_server("python3"), packages=PACKAGES)
    base = Path(base_prefix) if base_prefix is not None else None
    system = base is None or base == Path("/usr") or Path("/usr") in base.parents
    env = [_AUTOLOAD_OFF, ("VIRTUAL_ENV", str(prefix))]
    if pytest_plugins:
        env.append(("PYTEST_PLUGINS", ",".join(pytest_plugins)))
    return Runtime(folders=(Path(prefix),) + (() if system else (base,)), path=(f"{prefix}/bin",), env=tuple(env),
                   reporter=PytestReporter(), warm=warm_server(f"{prefix}/bin/python"), packages=PACKAGES)
