"""Rollouts out to other tools: `code-gym export sft` (chat-message JSON lines for fine-tuning)
and `code-gym export predictions` (the SWE-bench harness's predictions file).

SFT: each kept trajectory becomes one line `{"messages", "tools", "metadata"}` in the format
Hugging Face chat templates (`tokenizer.apply_chat_template(messages, tools=tools)`) and TRL's
SFTTrainer (a conversational dataset with a `tools` column) read: the task's prompt as the first
`user` message; each step's response as an `assistant` message whose Hermes `<tool_call>` blocks
become `tool_calls` (`{"id", "type": "function", "function": {"name", "arguments": an object}}`)
and whose other text is its `content`; the step's results as one `tool` message per call
(`tool_call_id`, `name`, the call's output), as the model client sent them. When a step's
observation does not split into its calls' outputs (a format error among them, a response
without tool calls, a fenced bash block), the whole observation follows as a `user` message, as
the client sends it then. A context note the client left is part of what the model read, so it
stays. `tools` is `code_gym.TOOL_SCHEMAS`.

Predictions: the final patch of an episode is its step diffs applied in turn (`git apply`) to a
copy of the task's repository, rendered as the environment renders `info["patch"]`; step diffs in
git's format chain exactly (tests/test_patch_roundtrip.py), so rollouts need not carry the patch.
"""
from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import credit
from code_gym.actions.parse import parse_action
from code_gym.actions.tools import TOOL_SCHEMAS
from code_gym.apps.records import CONTEXT_NOTE, Rollouts
from code_gym.tasks.task import MANIFEST, Task
from code_gym.workspace.diffs import render
from code_gym.workspace.working_copy import Workspace

_STEPS_LEFT = re.compile(r"\n\n\(\d+ steps? left\)\Z")


@dataclass(frozen=True)
class SftFilter:
    """Which episodes become training data. `resolved` and `pass_band` need episode records."""
    resolved: bool = False  # only episodes that resolved their task
    min_reward: float | None = None  # only episodes with at least this outcome reward
    pass_band: tuple[float, float] | None = None  # only tasks whose resolve rate in the file lies in [low, high]


def kept(rollouts: Rollouts, keep: SftFilter) -> list[int]:
    """The indices of the episodes `keep` lets through (ValueError, saying what to do, when a filter
    needs records the file lacks)."""
    trajectories = rollouts.trajectories
    resolved = rollouts.resolved() if keep.resolved or keep.pass_band else [False] * len(trajectories)
    rates = _resolve_rates(trajectories, resolved)
    out = []
    for i, trajectory in enumerate(trajectories):
        if keep.resolved and not resolved[i]:
            continue
        if keep.min_reward is not None and trajectory.reward < keep.min_reward:
            continue
        if keep.pass_band and not keep.pass_band[0] <= rates[trajectory.task_id] <= keep.pass_band[1]:
            continue
        out.append(i)
    return out


def _resolve_rates(trajectories: Sequence[credit.Trajectory], resolved: Sequence[bool]) -> dict:
    totals: dict = {}
    for trajectory, ok in zip(trajectories, resolved):
        done, seen = totals.get(trajectory.task_id, (0, 0))
        totals[trajectory.task_id] = (done + ok, seen + 1)
    return {task: done / seen for task, (done, seen) in totals.items()}


def assistant_message(action: str, step: int) -> dict:
    """A response as an assistant message: Hermes `<tool_call>` blocks become `tool_calls`, the
    rest of the text its content (a response without such blocks is all content)."""
    calls = [c for c in parse_action(action).calls if c.span is not None] if "<tool_call>" in action else []
    if not calls:
        return {"role": "assistant", "content": action}
    pieces, last = [], 0
    for call in calls:
        pieces.append(action[last:call.span[0]])
        last = call.span[1]
    pieces.append(action[last:])
    content = "\n".join(p.strip() for p in pieces if p.strip())
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{step}_{k}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for k, c in enumerate(calls)]}


def call_outputs(observation: str, names: Sequence[str]) -> list[str] | None:
    """The outputs of calls `names` from a step's observation (the environment writes one
    "[name]" or "[name error]" block per call, then the steps-left line; a context note may
    follow, and goes with the last output), or None when it does not split into exactly those."""
    body, _, note = observation.partition(f"\n\n{CONTEXT_NOTE}")
    body = _STEPS_LEFT.sub("", body, count=1) if _STEPS_LEFT.search(body) else None
    if body is None or not names:
        return None
    outputs, position = [], 0
    for k, name in enumerate(names):
        header = re.compile(("\n\n" if k else "") + rf"\[{re.escape(name)}(?: error)?\]\n")
        found = header.search(body, position) if k else header.match(body)
        if found is None:
            return None
        if k:
            outputs.append(body[position:found.start()])
        position = found.end()
    outputs.append(body[position:] + (f"\n\n{CONTEXT_NOTE}{note}" if note else ""))
    return outputs


def result_messages(assistant: dict, observation: str) -> list[dict]:
    """What follows an assistant message: its calls' outputs as `tool` messages, or (when they do
    not split out) placeholder tool messages and the whole observation as a user message."""
    calls = assistant.get("tool_calls") or []
    outputs = call_outputs(observation, [c["function"]["name"] for c in calls])
    if outputs is not None:
        return [{"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": out}
                for c, out in zip(calls, outputs)]
    return [{"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
             "content": "(results in the next message)"} for c in calls] + [{"role": "user", "content": observation}]


def chat_messages(trajectory: credit.Trajectory) -> list[dict]:
    """The episode as chat messages: the prompt, then each response and the results that followed."""
    messages: list[dict] = []
    for t, step in enumerate(trajectory.steps):
        if t == 0:
            messages.append({"role": "user", "content": step.observation or ""})
        else:
            messages += result_messages(messages[-1], step.observation or "")
        messages.append(assistant_message(step.action, t))
    return messages


def sft_example(rollouts: Rollouts, index: int) -> dict:
    trajectory = rollouts.trajectories[index]
    metadata = {"task_id": trajectory.task_id, "reward": trajectory.reward}
    if rollouts.records is not None:
        record = rollouts.records[index]
        metadata.update(sample=record.sample, resolved=record.resolved)
    return {"messages": chat_messages(trajectory), "tools": TOOL_SCHEMAS, "metadata": metadata}


def write_sft(rollouts: Rollouts, keep: SftFilter, out: Path) -> int:
    """The kept episodes as SFT JSON lines in `out`; how many."""
    indices = kept(rollouts, keep)
    _write_jsonl((sft_example(rollouts, i) for i in indices), out)
    return len(indices)


def _write_jsonl(rows: Iterable[dict], out: Path) -> None:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def final_patch(task: Task, trajectory: credit.Trajectory) -> str:
    """The episode's final patch: its step diffs applied in turn to a copy of the task's repository
    (ValueError naming the step whose diff does not apply: the rollout was not made on this task)."""
    ws = Workspace(task.repo)
    try:
        for t, step in enumerate(trajectory.steps):
            if not step.diff:
                continue
            done = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=ws.root,
                                  input=step.diff.encode("utf-8", "surrogateescape"), capture_output=True)
            if done.returncode != 0:
                raise ValueError(f"step {t}'s diff does not apply to task {task.id}'s repository "
                                 f"({done.stderr.decode(errors='replace').strip()}): were these rollouts made on "
                                 "this task?")
        ws.scan_changes()
        return render(ws.patch())
    finally:
        ws.close()


def instance_id(task: Task) -> str | None:
    """The SWE-bench instance id a task was made from (task.toml's [source] instance_id)."""
    if task.root is None or not (task.root / MANIFEST).is_file():
        return None
    with open(task.root / MANIFEST, "rb") as f:
        source = tomllib.load(f).get("source") or {}
    value = source.get("instance_id") if isinstance(source, dict) else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Predictions:
    rows: list[dict]  # instance_id, model_patch, model_name_or_path
    missing: list[str]  # task ids without the chosen episode
    empty: int  # predictions whose patch is empty (the harness counts them unresolved)


def predictions(rollouts: Rollouts, tasks: Sequence[Task], model: str, sample: int = 0) -> Predictions:
    """One prediction per task: its episode with sample number `sample` (the records' numbers,
    else the order of the task's episodes in the file). Every task must be SWE-bench-style
    (ValueError naming the first that is not)."""
    ids = {}
    for task in tasks:
        ids[task.id] = instance_id(task)
        if ids[task.id] is None:
            raise ValueError(f"task {task.id} has no SWE-bench instance id ([source] instance_id in its task.toml): "
                             "give the SWE-bench-style .jsonl file (or the task folders made from it) the rollouts "
                             "were made on")
    chosen = _episode_per_task(rollouts, sample)
    by_id = {t.id: t for t in tasks}
    rows, missing = [], []
    for task_id in ids:
        if task_id not in chosen:
            missing.append(task_id)
            continue
        patch = final_patch(by_id[task_id], rollouts.trajectories[chosen[task_id]])
        rows.append({"instance_id": ids[task_id], "model_patch": patch, "model_name_or_path": model})
    return Predictions(rows, missing, sum(not r["model_patch"] for r in rows))


def _episode_per_task(rollouts: Rollouts, sample: int) -> dict:
    """task id -> the index of its episode number `sample`."""
    chosen, seen = {}, {}
    for i, trajectory in enumerate(rollouts.trajectories):
        task = trajectory.task_id
        number = rollouts.records[i].sample if rollouts.records is not None else seen.get(task, 0)
        seen[task] = seen.get(task, 0) + 1
        if number == sample:
            chosen.setdefault(task, i)
    return chosen


def write_predictions(found: Predictions, out: Path) -> Path:
    _write_jsonl(found.rows, out)
    return Path(out)
