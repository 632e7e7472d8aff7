"""The environment and its episode loop.

- `environment`: `CodeRepoEnv` ("CodeRepo-v0"): reset draws a task and builds its workspace,
  sandbox and tools; step runs the tools and reports the diff they made; the end grades.
- `episode`: the one episode loop (`run_episode`, `EpisodeRun`, `Scripted`).
- `trajectory`: the `RecordTrajectory` wrapper, episode -> `credit.Trajectory`.
- `spaces`, `prompt`, `hints`: the text spaces, what the agent reads, hint-conditioned prompts.
"""
from code_gym.env.environment import CodeRepoEnv, TimeLimitAgreement

__all__ = ["CodeRepoEnv", "TimeLimitAgreement"]
