"""The file to pass as OpenRLHF's `--train.agent_func_path`: CodeRepo-v0 episodes (agent.py).

OpenRLHF loads this file by path inside each vLLM rollout actor and instantiates `AgentExecutor()`;
configure it with the CODE_GYM_AGENT environment variable (docs/openrlhf.md).
"""
from integrations.openrlhf.agent import AgentExecutor

__all__ = ["AgentExecutor"]
