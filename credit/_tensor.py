"""numpy/torch interop that never imports torch unless a tensor was passed in.

A torch tensor can only exist if torch is already imported, so `sys.modules` tells us whether
to look at all: a numpy-only caller never pays for (or needs) `import torch`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def is_torch(x: Any) -> bool:
    """True when `x` is a torch.Tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def to_numpy(x: Any, dtype: Any = None) -> np.ndarray:
    """A numpy view/copy of an array-like or a (CPU or GPU) torch tensor."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def like(values: np.ndarray, reference: Any) -> Any:
    """`values` as the same kind of array as `reference`: a tensor on its device, else numpy.

    A floating reference tensor keeps its dtype; any other reference gets float32.
    """
    if not is_torch(reference):
        return values
    import torch

    dtype = reference.dtype if reference.is_floating_point() else torch.float32
    return torch.as_tensor(np.ascontiguousarray(values)).to(device=reference.device, dtype=dtype)
