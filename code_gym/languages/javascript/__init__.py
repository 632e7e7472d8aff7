"""JavaScript: everything code-gym knows about JavaScript projects, behind the `Language` protocol
(`adapter.JAVASCRIPT`, registered as "javascript" in `code_gym.languages.REGISTRY`).

- `adapter`: the protocol's implementation; the only name code outside this folder reaches.
- `environments`: node_modules per dependency set (npm, install scripts off), cached, bound read-only.
- `files`: the files the grader owns (package.json's test fields, runner configuration, node_modules).
- `runners`, `reporters/`, `canary`: node:test, mocha, jest and tape runs streaming one record per
  test from a reporter or driver the grader lays; canaries in each runner's syntax.
- `audit`: the tree-sitter code rules of the integrity audit.
- `source`: parsing, enclosing definitions, the static check.
- `builder`: npm packages with tests -> validated tasks (tree-sitter mutations, statements).

The package imports nothing itself: the registry loads `adapter` on first use.
"""
