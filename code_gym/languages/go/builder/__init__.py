"""The task builder for Go packages with tests (Debian's golang-*-dev source trees, or a folder
holding an import path's tree): tree-sitter mutations (`mutations`) and task statements from the
failing tests' messages (`statement`). Reached from outside through the adapter:
`code_gym.languages.get("go").builder`, `.mutations`; `claims(source)` tells the command line that
a source is Go's (a Debian golang-*-dev package name)."""
from code_gym.grading.builder import BuildError, BuildReport, Rejection
from code_gym.grading.gates import GATES
from code_gym.grading.revalidate import revalidate
from code_gym.languages.go.builder.batch import build_many, expand_sources, read_as_folder_of_projects
from code_gym.languages.go.builder.pipeline import BuildOptions, build_tasks
from code_gym.languages.go.builder.project import EnvOptions
from code_gym.languages.go.builder.project import is_debian_name as claims

__all__ = ["GATES", "BuildError", "BuildOptions", "BuildReport", "EnvOptions", "Rejection", "build_many", "build_tasks",
           "claims", "expand_sources", "read_as_folder_of_projects", "revalidate"]
