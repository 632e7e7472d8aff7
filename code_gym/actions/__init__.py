"""Actions and tools: what an agent's response turns into, and what it can do.

- `parse`: a policy's response text (Hermes/Qwen `<tool_call>` JSON, OpenAI function-call dicts, a
  fenced bash block) -> `ToolCall`s, with the character offsets of their string arguments.
- `tools`: the tool registry; each tool's name, JSON schema and implementation declared together.
- `provenance`: which call of a step made each changed line, and which characters wrote it.
- `replay`: a unified diff -> the editor tool calls an agent would make to write it.
"""
