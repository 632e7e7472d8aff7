"""Ray's `worker_process_setup_hook` for credit's estimators in verl (docs/verl.md, "Launch").

verl computes advantages inside its `TaskRunner` Ray actor, where registrations made in the driver
do not exist. Passed as
`+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=integrations.verl.hook.install`, Ray
runs `install` at the start of every worker process of the job; it acts in a process when that
process imports verl's estimator registry (`estimator.register`) or its v1 trainer
(`estimator.patch_trainer`), and leaves every other process (vLLM servers, model shards) as it was.
Standard library only: this runs everywhere.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

SETUP_HOOK = "integrations.verl.hook.install"
CORE_ALGOS = "verl.trainer.ppo.core_algos"
TRAINER = "verl.trainer.ppo.v1.trainer_base"


def install() -> None:
    """Register the estimators and patch the v1 trainer in this process, now for the verl modules
    already imported and on import for the others (idempotent)."""
    for name in (CORE_ALGOS, TRAINER):
        if name in sys.modules:
            _apply(sys.modules[name])
    if not any(isinstance(finder, _ApplyOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ApplyOnImport())


def _apply(module) -> None:
    estimator = importlib.import_module("integrations.verl.estimator")
    if module.__name__ == CORE_ALGOS:
        estimator.register()
    else:
        estimator.patch_trainer(module)


class _ApplyOnImport(importlib.abc.MetaPathFinder):
    """Finds verl's two modules as the path finder would, and applies `_apply` right after each runs."""

    def find_spec(self, name, path, target=None):
        if name not in (CORE_ALGOS, TRAINER):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def run_and_apply(module):
            run_module(module)
            _apply(module)

        spec.loader.exec_module = run_and_apply
        return spec
