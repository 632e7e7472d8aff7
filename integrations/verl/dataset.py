"""Prompt data for verl: `python -m integrations.verl.dataset PROMPTS.jsonl --out VERL.jsonl`.

Reads the prompt file of `code-gym openrlhf dataset` (one JSON line per task: input, label,
datasource; `code_gym.apps.dataset` is the one home of task labels) and writes the columns verl's
`RLHFDataset` reads (it reads .jsonl as well as .parquet), one row per task:

  data_source   for verl's per-source metrics (code_gym)
  prompt        the task statement as one user message, for verl's logs and prompt-length filter;
                the agent loop shows the model the environment's own first observation
  agent_name    code_gym: the agent loop of agent_loop.yaml
  extra_info    {"task": label, "index": row}: the task the agent loop resets to
  reward_model  {"style": "rule", "ground_truth": label}: read by verl's validation metrics; the
                reward itself is the agent loop's graded outcome
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterable, Sequence

from integrations.verl import AGENT_NAME, TASK_KEY


def verl_rows(prompt_rows: Iterable[dict]) -> list[dict]:
    """verl's rows for the rows of `code_gym.apps.dataset.prompt_rows`."""
    return [{"data_source": row["datasource"], "prompt": [{"role": "user", "content": row["input"]}],
             "agent_name": AGENT_NAME, "extra_info": {TASK_KEY: row["label"], "index": index},
             "reward_model": {"style": "rule", "ground_truth": row["label"]}}
            for index, row in enumerate(prompt_rows)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m integrations.verl.dataset", description=__doc__.split("\n")[0])
    parser.add_argument("prompts", type=Path, help="the .jsonl file of `code-gym openrlhf dataset`")
    parser.add_argument("--out", type=Path, required=True, help="the .jsonl file for verl's data.train_files")
    args = parser.parse_args(argv)
    lines = args.prompts.read_text(encoding="utf-8").splitlines()
    rows = verl_rows(json.loads(line) for line in lines if line.strip())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"{len(rows)} prompts -> {args.out} (verl: data.train_files={args.out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
