"""Rust: everything code-gym knows about Rust crates, behind the `Language` protocol
(`adapter.RUST`, registered as "rust" in `code_gym.languages.REGISTRY`).

- `adapter`: the protocol's implementation; the only name code outside this folder reaches.
- `environments`: a cargo directory source made of the Debian librust-*-dev packages a task names
  (offline, read-only) and the per-task target cache built in a sandbox.
- `files`: the files the grader owns (Cargo.toml, Cargo.lock, build.rs, .cargo/, tests/, benches/).
- `runner`, `reader/cargotest.py`, `canary`: `cargo test` runs whose per-test records come from the
  grader's reader inside the sandbox (cargo's JSON messages, libtest's JSON events); canaries as an
  integration test of their own.
- `audit`, `source`: the tree-sitter code rules of the integrity audit; enclosing definitions and
  the static check.
- `builder`: Debian crates -> validated tasks.

The package imports nothing itself: the registry loads `adapter` on first use.
"""
