"""Ray's `worker_process_setup_hook` for the didpo/gigpo estimators (train.py registers it).

OpenRLHF builds its samples generator and experience maker inside Ray actors, so patches made in
the driver would not reach them. Ray runs `install` at the start of every worker process of the
job; it patches the two OpenRLHF modules when that process imports them, and leaves every other
process (vLLM engines, model shards) as it was. Standard library only: this runs everywhere.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

SETUP_HOOK = "integrations.openrlhf.hook.install"
PATCHES = {
    "openrlhf.trainer.ppo_utils.samples_generator": "patch_samples_generator",
    "openrlhf.trainer.ppo_utils.experience_maker": "patch_experience_maker",
}


def install() -> None:
    """Patch the OpenRLHF modules already imported in this process and any imported later (idempotent)."""
    for name in PATCHES:
        if name in sys.modules:
            _patch(sys.modules[name])
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def _patch(module) -> None:
    estimator = importlib.import_module("integrations.openrlhf.estimator")
    getattr(estimator, PATCHES[module.__name__])(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the modules of `PATCHES` as the path finder would, and patches each right after it runs."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def run_and_patch(module):
            run_module(module)
            _patch(module)

        spec.loader.exec_module = run_and_patch
        return spec
