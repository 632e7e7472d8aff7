"""Languages: everything one language needs, behind one protocol (`code_gym.languages.base.Language`).

A language is a folder here plus one entry in `REGISTRY`. Code outside a language's folder reaches
it only through `get(name)` / `of(task)` and the protocol; it never imports the folder's modules.
A task names its language in task.toml (`language = "python"`, the default).
"""
from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from code_gym.languages.base import Language

# name -> "module:attribute" of its adapter, imported on first use (so `import code_gym` stays light)
REGISTRY: dict[str, str] = {
    "python": "code_gym.languages.python:PYTHON",
    "javascript": "code_gym.languages.javascript.adapter:JAVASCRIPT",
    "dafny": "code_gym.languages.dafny.adapter:DAFNY",
    "go": "code_gym.languages.go.adapter:GO",
    "rust": "code_gym.languages.rust.adapter:RUST",
}
NAMES = tuple(REGISTRY)


@cache
def get(name: str) -> Language:
    """The adapter of language `name`."""
    if name not in REGISTRY:
        raise ValueError(f"unknown language {name!r}; code-gym knows {', '.join(NAMES)} "
                         f"(a new language is a folder in code_gym/languages/ plus an entry in REGISTRY)")
    module, _, attribute = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def of(task: Any) -> Language:
    """The adapter of the language a `code_gym.tasks.task.Task` names."""
    return get(task.language)
