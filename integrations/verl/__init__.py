"""credit's estimators and CodeRepo-v0 episodes inside verl (docs/verl.md).

  estimator.py       `algorithm.adv_estimator=didpo` (and every name of `estimator.NAMES`):
                     verl advantage estimators through `core_algos.register_adv_est`, computed by
                     `credit.token_advantages` as in the OpenRLHF integration
  hook.py            Ray's worker_process_setup_hook: registers them (and hands the step-level
                     ones their episode records) inside verl's trainer actor
  agent_loop.py      an `AgentLoopBase` that plays one CodeRepo-v0 episode per sample and leaves
                     its record in the row's extra_fields; agent_loop.yaml registers it with verl
  dataset.py         verl's prompt rows (RLHFDataset's columns) from `code-gym openrlhf dataset`'s
  scripts/           launch scripts (verl's own CLI with the overrides that wire the above)

Nothing here imports verl at package import time.
"""

AGENT_NAME = "code_gym"  # the agent loop's name in verl's registry (agent_loop.yaml, a row's agent_name)
TASK_KEY = "task"  # the key of a dataset row's extra_info that names its task
