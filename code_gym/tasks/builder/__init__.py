"""The task builder: any Python project with a pytest suite becomes tasks (CodeMidas's idea: the
source code is the only task-specific input). See docs/tasks.md, "The builder"."""
from code_gym.tasks.builder.pipeline import GATES, BuildOptions, BuildReport, Rejection, build_tasks
from code_gym.tasks.builder.project import BuildError

__all__ = ["GATES", "BuildError", "BuildOptions", "BuildReport", "Rejection", "build_tasks"]
