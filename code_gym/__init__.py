"""code-gym: repository-editing tasks as multi-turn Gymnasium environments.

`import code_gym` registers "CodeRepo-v0"; `gym.make("code_gym:CodeRepo-v0")` imports it for you.
"""
from __future__ import annotations

import gymnasium as gym

from code_gym.actions.parse import ToolCall, parse_action
from code_gym.env.environment import CodeRepoEnv
from code_gym.env.spaces import AnyText
from code_gym.tasks.task import Task, TaskError, bundled_tasks, load_task, load_task_dir
from code_gym.actions.tools import TOOL_NAMES, TOOL_SCHEMAS

ENV_ID = "CodeRepo-v0"

__all__ = ["AnyText", "CodeRepoEnv", "ENV_ID", "TOOL_NAMES", "TOOL_SCHEMAS", "Task", "TaskError", "ToolCall",
           "bundled_tasks", "load_task", "load_task_dir", "parse_action", "register_envs"]


def register_envs() -> None:
    """Register CodeRepo-v0 with Gymnasium (idempotent)."""
    if ENV_ID not in gym.registry:
        agreement = gym.envs.registration.WrapperSpec("TimeLimitAgreement", "code_gym.env.environment:TimeLimitAgreement", {})
        gym.register(id=ENV_ID, entry_point="code_gym.env.environment:CodeRepoEnv", nondeterministic=True,
                     disable_env_checker=False, additional_wrappers=(agreement,))


register_envs()
