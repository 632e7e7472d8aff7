"""credit's estimators and CodeRepo-v0 episodes inside verl (docs/verl.md).

  estimator.py       `algorithm.adv_estimator=didpo` (and every name of `estimator.NAMES`):
                     verl advantage estimators through `core_algos.register_adv_est`, computed by
                     `credit.token_advantages` as in the OpenRLHF integration
  hook.py            Ray's worker_process_setup_hook: registers them (and hands the step-level
                     ones their episode records) inside verl's trainer actor
  agent_loop.py      an `AgentLoopBase` that plays one CodeRepo-v0 episode per sample and leaves
                     its record (integrations/episodes.py, shared with the OpenRLHF integration) in
                     the row's extra_fields; agent_loop.yaml registers it with verl
  scripts/           launch scripts (verl's own CLI with the overrides that wire the above)

The prompt data (verl's RLHFDataset columns) is `code-gym verl dataset`'s (code_gym/apps/dataset.py).
Nothing here imports verl at package import time, nor OpenRLHF at all.
"""
