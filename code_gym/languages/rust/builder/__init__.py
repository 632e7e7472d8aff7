"""The task builder for Rust crates with tests (Debian librust-*-dev packages or crate folders):
tree-sitter mutations (`mutations`) and task statements from the failing tests' panic messages
(`statement`). Reached from outside through the adapter: `code_gym.languages.get("rust").builder`,
`.mutations`; `claims(source)` tells the command line that a librust-*-dev name is a Rust source."""
from code_gym.grading.builder import BuildError, BuildReport, Rejection
from code_gym.grading.gates import GATES
from code_gym.grading.revalidate import revalidate
from code_gym.languages.rust.builder.batch import build_many, expand_sources, read_as_folder_of_projects
from code_gym.languages.rust.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.rust.builder.project import EnvOptions
from code_gym.languages.rust.builder.project import is_debian_package as claims

__all__ = ["GATES", "BuildError", "BuildOptions", "BuildReport", "EnvOptions", "Rejection", "build_many", "build_tasks",
           "claims", "expand_sources", "read_as_folder_of_projects", "revalidate"]
