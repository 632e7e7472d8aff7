"""Go: test-graded tasks from Debian's Go library packages behind the `Language` protocol
(`adapter.GO`, registered as "go" in `code_gym.languages.REGISTRY`).

- `adapter`: the protocol's implementation; the only name code outside this folder reaches.
- `environments`: the Debian packages of a task's dependencies unpacked once per set (GOPATH mode),
  and a build cache per task warmed in a sandbox.
- `runner`, `reader/`: `go test -json` runs; the reader runs go inside the sandbox and streams one
  record per top-level test (compile errors as collect records of the package's test files).
- `files`, `canary`: the files the grader owns; canary tests in the package of the task's tests.
- `audit`, `source`: the tree-sitter code rules of the integrity audit; enclosing definitions and
  the static check.
- `builder`: Debian's golang-*-dev packages -> validated tasks (tree-sitter mutations, statements).

The package imports nothing itself: the registry loads `adapter` on first use.
"""
