"""Prompt data for trainers, one row per task: OpenRLHF's (`code-gym openrlhf dataset`) and verl's
(`code-gym verl dataset`), both JSON lines.

OpenRLHF's PromptDataset reads `prompt_rows` with `--data.input_key input --data.label_key label`:
`label` names the task for the executor (`integrations.openrlhf.agent`): a bundled task's id, or the
absolute path of the task folder (which must exist on every node that runs vLLM engines). `input`
is the task statement, for OpenRLHF's logs; the executor shows the model the environment's own
first observation. `datasource` groups evaluation metrics (eval_code_gym_pass1).

verl's RLHFDataset reads `verl_rows` (it reads .jsonl as well as .parquet):

  data_source   for verl's per-source metrics (code_gym)
  prompt        the task statement as one user message, for verl's logs and prompt-length filter;
                the agent loop shows the model the environment's own first observation
  agent_name    AGENT_NAME: the agent loop of integrations/verl/agent_loop.yaml
  extra_info    {TASK_KEY: label, "index": row}: the task the agent loop resets to
  reward_model  {"style": "rule", "ground_truth": label}: read by verl's validation metrics; the
                reward itself is the agent loop's graded outcome
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from code_gym.tasks.task import Task, TaskError, bundled_tasks_dir

DATASOURCE = "code_gym"
AGENT_NAME = "code_gym"  # the verl agent loop's name in verl's registry (integrations/verl/agent_loop.yaml)
TASK_KEY = "task"  # the key of a verl row's extra_info that names its task


def task_label(task: Task) -> str:
    """What `env.reset(options={"task": label})` resolves back to `task` on any node."""
    if task.root is None:
        raise TaskError(f"task {task.id!r} has no folder: write it to disk (code_gym.tasks.loaders.folder) first")
    root = Path(task.root).resolve()
    return task.id if root.parent == bundled_tasks_dir().resolve() else str(root)


def prompt_rows(tasks: Iterable[Task]) -> list[dict[str, str]]:
    """OpenRLHF's rows."""
    return [{"input": task.statement, "label": task_label(task), "datasource": DATASOURCE} for task in tasks]


def verl_rows(tasks: Iterable[Task]) -> list[dict]:
    """verl's rows."""
    return [{"data_source": row["datasource"], "prompt": [{"role": "user", "content": row["input"]}],
             "agent_name": AGENT_NAME, "extra_info": {TASK_KEY: row["label"], "index": index},
             "reward_model": {"style": "rule", "ground_truth": row["label"]}}
            for index, row in enumerate(prompt_rows(tasks))]


def write_dataset(tasks: Iterable[Task], out: str | Path,
                  rows: Callable[[Iterable[Task]], list[dict]] = prompt_rows) -> int:
    """Write the JSON lines of `rows(tasks)` to `out`; returns how many."""
    lines = rows(tasks)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lines), encoding="utf-8")
    return len(lines)
