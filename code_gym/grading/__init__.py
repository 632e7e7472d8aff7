"""Grading a final patch so that the patch cannot grade itself.

- `grade`: pristine copy + changes + hidden tests -> per-test outcomes (`GradeResult`), through the
  task's language adapter (`code_gym.languages`) for the test run itself.
- `records`: the per-test records a run streams on its results channel, read and cross-checked.
- `channel`: the writing end of that channel, for a reader that runs the tests inside the sandbox
  (standard library only: a language lays it beside its reader).
- `treesitter`: what the languages that read source with a tree-sitter grammar share (a thread's
  parser, where a tree does not parse, a node's text, a walk).
- `canary`: the canaries' check after a run (the language writes the canary tests).
- `file_policy`: the one home of "which paths the grader owns" and of applying changes.
- `audit`: the integrity audit (path rules here, code rules from the language) and `Finding`.
- `reference`: the reference solution's changes and test ids.
- `gates`: the gates a task passes before it is used for training (and the builder's `GATES`).
- `builder`, `multiregion`, `revalidate`: what every language's task builder shares (its reports,
  the grader's check, the batch loop over many sources, multi-region plans, re-validation).
"""
