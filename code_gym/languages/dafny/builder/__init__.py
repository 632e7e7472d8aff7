"""The task builder for verified Dafny programs: proof annotations taken out (`strip`), the
specification kept, the gates checked by the verifier through the grader (`pipeline`), many
programs in one run (`batch`). `corpus/` holds the verified programs this project wrote. Reached
from outside through the adapter: `code_gym.languages.get("dafny").builder`."""
from code_gym.grading.builder import BuildError, BuildReport, Rejection
from code_gym.grading.gates import GATES
from code_gym.grading.revalidate import revalidate
from code_gym.languages.dafny.builder.batch import CORPUS, build_many, expand_sources, read_as_folder_of_projects
from code_gym.languages.dafny.builder.pipeline import BuildOptions, EnvOptions, build_tasks

__all__ = ["CORPUS", "GATES", "BuildError", "BuildOptions", "BuildReport", "EnvOptions", "Rejection", "build_many",
           "build_tasks", "expand_sources", "read_as_folder_of_projects", "revalidate"]
