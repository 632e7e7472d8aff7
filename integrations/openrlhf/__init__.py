"""CodeRepo-v0 episodes and credit's estimators inside OpenRLHF (docs/openrlhf.md).

  agent_func.py   the file for `--train.agent_func_path`; the executor is in agent.py: one
                  CodeRepo-v0 episode per prompt, with a record of every step
                  (integrations/episodes.py, shared with the verl integration)
  estimator.py    `--algo.advantage.estimator didpo|gigpo`: the records, carried past OpenRLHF's
                  response filter, turned into per-token advantages by `credit`
  hook.py         applies estimator.py's patches inside OpenRLHF's Ray workers
  train.py        `python -m integrations.openrlhf.train`: OpenRLHF's PPO trainer with the above
  scripts/        launch scripts (one node, a Ray cluster, the GRPO baseline)

Nothing here imports OpenRLHF at package import time.
"""
import credit

# the estimators this integration adds to OpenRLHF: credit's step-level ones (OpenRLHF computes
# outcome-only advantages such as GRPO's group_norm itself)
ESTIMATORS = credit.STEP_LEVEL
