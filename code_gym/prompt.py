"""The text an agent sees at reset and after each step."""
from __future__ import annotations

import json
from pathlib import Path

from code_gym.actions import FORMAT_HELP
from code_gym.task import Task
from code_gym.tools import TOOL_SCHEMAS, ToolResult, describe_tools
from code_gym.actions import ToolCall

MAX_TREE_ENTRIES = 200


def repo_tree(root: Path, limit: int = MAX_TREE_ENTRIES) -> str:
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and not any(s.startswith(".") for s in p.relative_to(root).parts))
    shown = files[:limit]
    more = f"\n... and {len(files) - limit} more files" if len(files) > limit else ""
    return "\n".join(shown) + more


def initial_prompt(task: Task, root: Path, workdir: str, tool_schemas: bool = True) -> str:
    parts = [
        "You are working in a Python repository. Fix the issue below by editing the code, then call `submit`.",
        f"The repository is at {workdir} (the current directory of every command).",
        f"## Issue\n{task.statement}",
        f"## Repository files\n{repo_tree(root)}",
        f"## Tools\n{describe_tools()}",
        f"## How to call tools\n{FORMAT_HELP}",
    ]
    if tool_schemas:
        parts.append("## Tool schemas (JSON)\n" + "\n".join(json.dumps(s) for s in TOOL_SCHEMAS))
    return "\n\n".join(parts)


def step_observation(pairs: list[tuple[ToolCall | None, ToolResult]], steps_left: int) -> str:
    blocks = []
    for call, result in pairs:
        title = call.name if call else "format"
        blocks.append(f"[{title}{' error' if result.error else ''}]\n{result.output}")
    blocks.append(f"({steps_left} steps left)")
    return "\n\n".join(blocks)
