"""Python: everything code-gym knows about Python projects, behind the `Language` protocol
(`adapter.PYTHON`, registered as "python" in `code_gym.languages.REGISTRY`).

- `adapter`: the protocol's implementation; the only name code outside this folder reaches.
- `files`: the files the grader owns (conftest, pytest configuration, start-up hooks).
- `audit`, `constfold`, `source`: the ast code rules of the integrity audit.
- `records_plugin`, `junit`, `canary`: pytest's side of a graded run (the records reporter, the
  runner's own report, the canary tests).
- `probes`, `probe_child`, `probe_replay`: behavioural probes.
- `environments`: a virtualenv per requirement set, built once and cached.
- `builder`: Python projects with a pytest suite -> validated tasks (body removal, AST mutations).
"""
from code_gym.languages.python.adapter import PYTHON

__all__ = ["PYTHON"]
