"""Applications built on the code-gym environment library: the `code-gym` command (cli), the
built-in learnable policy (policy) and its training (train), the demo and its HTML credit report
(demo), the OpenAI-compatible model client (client), the difficulty filter (difficulty) and
prompt data for trainers (dataset).

They import the library (`code_gym`) and `credit`; the library imports nothing from here
(tests/test_layout.py checks it), so `import code_gym` stays light.
"""
