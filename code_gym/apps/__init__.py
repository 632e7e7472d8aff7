"""Applications built on the code-gym environment library: the `code-gym` command (cli), the
built-in learnable policy (policy) and its training (train), the demo (demo) and the HTML credit
report for it and for any rollouts (report), the OpenAI-compatible model client (client) and what
its rollouts record (records), evaluation with pass@k (evaluate), exports for fine-tuning and the
SWE-bench harness (export), the difficulty filter (difficulty) and prompt data for trainers
(dataset).

They import the library (`code_gym`) and `credit`; the library imports nothing from here
(tests/test_layout.py checks it), so `import code_gym` stays light.
"""
