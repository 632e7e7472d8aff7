"""The task builder: any Python project with a pytest suite becomes tasks (CodeMidas's idea: the
source code is the only task-specific input). See docs/tasks.md, "The builder". Reached from
outside through the adapter: `code_gym.languages.get("python").builder`."""
from code_gym.languages.python.builder.batch import build_many, expand_sources, read_as_folder_of_projects
from code_gym.grading.gates import GATES
from code_gym.languages.python.builder.pipeline import BuildOptions, BuildReport, Rejection, build_tasks
from code_gym.languages.python.builder.project import BuildError, EnvOptions
from code_gym.languages.python.builder.revalidate import revalidate

__all__ = ["GATES", "BuildError", "BuildOptions", "BuildReport", "EnvOptions", "Rejection", "build_many", "build_tasks",
           "expand_sources", "read_as_folder_of_projects", "revalidate"]
