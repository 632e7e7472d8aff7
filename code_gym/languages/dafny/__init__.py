"""Dafny: verifier-graded tasks behind the `Language` protocol (`adapter.DAFNY`, registered as
"dafny" in `code_gym.languages.REGISTRY`). docs/dafny.md describes the task format, the records,
the reward and the audit.

- `adapter`: the protocol's implementation; the only name code outside this folder reaches.
- `source`: the tokenizer and brace-level parser every other part reads Dafny with (stdlib only:
  the reader lays it beside itself in the sandbox).
- `runner`, `reader/`: verification runs; the reader runs the verifier inside the sandbox and turns
  its diagnostics into one record per member and per postcondition of a member.
- `audit`: what lets a program verify without a proof (specification changes, `assume`, axioms,
  verification switched off ...), against the task's starting version.
- `canary`, `files`: lemmas that must fail and must verify in every graded run; the grader owns no file.
- `probes`: the reference proof's own annotations checked against the candidate.
- `spec`: the hidden specification check of a task (the builder writes it).

The package imports nothing itself: the registry loads `adapter` on first use.
"""
