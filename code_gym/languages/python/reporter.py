"""The records reporter of a cold pytest run (`Runtime.reporter`): the grader's plugin
(records_plugin.py) laid as a module under a name drawn per run, in the folder the backend binds
read-only into the sandbox, and named in the command's environment: the folder first on PYTHONPATH,
the module first in PYTEST_PLUGINS (which pytest reads with plugin autoloading off, before any
conftest or test module), and the channel's descriptor and nonce in CODE_GYM_RECORDS. A warm run
gets the same plugin from its server (warm.py)."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

ENV = "CODE_GYM_RECORDS"
PLUGIN_SOURCE = (Path(__file__).resolve().parent / "records_plugin.py").read_text()


@dataclass(frozen=True)
class PytestReporter:
    """The plugin as module `code_gym_records_<random>` (a module of the repository cannot be named
    like it: sys.path[0] is the repository). A task environment's own PYTEST_PLUGINS and a
    PYTHONPATH stay after the plugin's."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        module = f"code_gym_records_{secrets.token_hex(8)}"
        path = ":".join(p for p in (inside, env.get("PYTHONPATH", "")) if p)
        plugins = ",".join(p for p in (module, env.get("PYTEST_PLUGINS", "")) if p)
        return {f"{module}.py": PLUGIN_SOURCE}, env | {"PYTHONPATH": path, "PYTEST_PLUGINS": plugins,
                                                       ENV: f"{fd} {nonce}"}
