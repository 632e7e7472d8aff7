"""Puts the flash-attn stand-in of this folder on the path, only where flash-attn is missing (README.md)."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

SHIM = Path(__file__).resolve().parent


def use_shim_if_needed() -> bool:
    """Add SHIM to sys.path and to PYTHONPATH (for Ray workers and subprocesses) unless flash-attn
    is installed; whether it was added."""
    if importlib.util.find_spec("flash_attn") is not None and str(SHIM) not in sys.path:
        return False
    if str(SHIM) not in sys.path:
        sys.path.insert(0, str(SHIM))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(SHIM) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SHIM), *paths])
    return True
