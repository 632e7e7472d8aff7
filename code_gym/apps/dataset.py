"""Prompt data for trainers that read prompts as JSON lines, one per task (`code-gym openrlhf
dataset`; OpenRLHF's PromptDataset reads it with `--data.input_key input --data.label_key label`).

`label` names the task for the executor (`integrations.openrlhf.agent`): a bundled task's id, or the absolute path of
the task folder (which must exist on every node that runs vLLM engines). `input` is the task
statement, for OpenRLHF's logs; the executor shows the model the environment's own first
observation. `datasource` groups evaluation metrics (eval_code_gym_pass1).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from code_gym.tasks.task import Task, TaskError, bundled_tasks_dir

DATASOURCE = "code_gym"


def task_label(task: Task) -> str:
    """What `env.reset(options={"task": label})` resolves back to `task` on any node."""
    if task.root is None:
        raise TaskError(f"task {task.id!r} has no folder: write it to disk (code_gym.tasks.loaders.folder) first")
    root = Path(task.root).resolve()
    return task.id if root.parent == bundled_tasks_dir().resolve() else str(root)


def prompt_rows(tasks: Iterable[Task]) -> list[dict[str, str]]:
    return [{"input": task.statement, "label": task_label(task), "datasource": DATASOURCE} for task in tasks]


def write_dataset(tasks: Iterable[Task], out: str | Path) -> int:
    """Write the JSON lines to `out`; returns how many."""
    rows = prompt_rows(tasks)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return len(rows)
