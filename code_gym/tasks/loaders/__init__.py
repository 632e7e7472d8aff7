"""Task loaders: datasets in other formats become task folders in the bundled format, written to a
cache, so the env, validation and grading read them like any hand-written task."""
from __future__ import annotations

from code_gym.util.hostfs import cache_root
from code_gym.tasks.loaders.folder import write_task
from code_gym.tasks.loaders.humaneval import load_humaneval
from code_gym.tasks.loaders.swebench import load_swebench
from code_gym.tasks.task import Task

__all__ = ["cache_root", "load_dataset", "load_humaneval", "load_swebench", "write_task"]


def load_dataset(spec: str) -> list[Task] | None:
    """The tasks of a dataset named on the command line: "humaneval", or a SWE-bench-family .jsonl
    file (clones under $CODE_GYM_REPOS, else beside the file). None when `spec` is neither."""
    if spec == "humaneval":
        return load_humaneval()
    if spec.endswith(".jsonl"):
        return load_swebench(spec)
    return None
