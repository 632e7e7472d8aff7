"""Per-project environments: the requirements a project declares (requirements.py, read statically)
and the cached virtualenv built from them (build.py). docs/tasks.md, "Environments"."""
from code_gym.languages.python.environments.build import (Environment, EnvironmentBuildError, build_environment, default_python,
                                         environment_spec, environments_dir, explain_failure, project_environment,
                                         task_runtime)
from code_gym.languages.python.environments.requirements import Requirements, project_requirements, pytest_config
from code_gym.languages.python.environments.spec import BASE_REQUIREMENTS, EnvSpec, read_environment

__all__ = ["BASE_REQUIREMENTS", "EnvSpec", "read_environment", "Environment", "EnvironmentBuildError", "Requirements",
           "build_environment", "default_python", "environment_spec", "environments_dir", "explain_failure",
           "project_environment", "project_requirements", "pytest_config", "task_runtime"]
