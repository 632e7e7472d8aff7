"""The text an agent sees at reset and after each step."""
from __future__ import annotations

import json

from code_gym.actions.parse import FORMAT_HELP, ToolCall
from code_gym import languages
from code_gym.tasks.task import Task
from code_gym.actions.tools import TOOL_SCHEMAS, ToolResult, describe_tools
from code_gym.workspace.diffs import quote_path

MAX_TREE_ENTRIES = 200


def repo_tree(files: list[str], limit: int = MAX_TREE_ENTRIES) -> str:
    """The repository's files, one a line, each name quoted as git quotes it (a name holding a
    newline would otherwise show as two files)."""
    shown = sorted(f for f in files if not any(part.startswith(".") for part in f.split("/")))
    more = f"\n... and {len(shown) - limit} more files" if len(shown) > limit else ""
    return "\n".join(quote_path(f) for f in shown[:limit]) + more


def initial_prompt(task: Task, files: list[str], workdir: str, tool_schemas: bool = True) -> str:
    parts = [
        "You are working in a Python repository. Fix the issue below by editing the code, then call `submit`.",
        f"The repository is at {workdir} (the current directory of every command).",
        f"## Issue\n{task.statement}",
        f"## Repository files\n{repo_tree(files)}",
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


def integrity_note(task: Task) -> str:
    """The rules, for the agent's prompt: what fails the audit."""
    protected = ", ".join(sorted(set(task.protected_paths) | set(task.visible_tests)))
    return ("## Grading rules\nThe task's own tests (and hidden ones) decide the reward, run on a fresh copy of the "
            f"repository. Leave the tests alone: changes to {protected}, {languages.of(task).grading_rules} fail "
            "the integrity audit, which outranks the tests. Put scratch scripts outside those paths.")
