"""Tasks: the `Task` model and manifest loader (`task`), loaders from other formats (`loaders`:
SWE-bench-style JSONL, HumanEval) and the builder that turns real projects into validated tasks
(`builder`)."""
