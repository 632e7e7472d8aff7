#!/usr/bin/env bash
# DiDPO on CodeRepo-v0 with OpenRLHF on one node of 8 GPUs: vLLM engines, actor and reference model
# colocated on every GPU (OpenRLHF's hybrid engine: vLLM sleeps while DeepSpeed trains).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: train_didpo.sh [--dry-run] [-h|--help] [OpenRLHF arguments...]

Trains a Qwen2.5-Coder-7B-Instruct-class model on CodeRepo-v0 episodes with
`python -m integrations.openrlhf.train` (OpenRLHF's train_ppo_ray plus the didpo/gigpo
estimators). Writes the prompt data first when $DATA is missing. Extra arguments are appended to
OpenRLHF's (the last occurrence of a flag wins), e.g. --credit.options '{"lambda_": 0.5}'.

  --dry-run   print the commands instead of running them (Ray is not started)

Environment (defaults in common.sh): MODEL, DATA, TASKS, OUT, ESTIMATOR (didpo, the paper's rules;
didpo-split, the rule measured best; any preset of credit.PRESETS; gigpo; any OpenRLHF
estimator), GPUS_PER_NODE (8), VLLM_TP (1), SAMPLES_PER_PROMPT (8), PROMPTS_PER_STEP (16),
MAX_LEN (32768), MAX_NEW_TOKENS (4096), CODE_GYM_AGENT (the executor's JSON settings), PYTHON.
train_grpo_baseline.sh runs this script with ESTIMATOR=group_norm (OpenRLHF's GRPO).
USAGE
}

DRY_RUN=0
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) EXTRA+=("$1") ;;
  esac
  shift
done

source "$(dirname "$0")/common.sh"
NODES=1
openrlhf_args
dataset_cmd
CMD=(env "CODE_GYM_AGENT=$CODE_GYM_AGENT" "$PYTHON" -m integrations.openrlhf.train "${ARGS[@]}" "${EXTRA[@]}")

if [ "$DRY_RUN" = 1 ]; then
  [ -f "$DATA" ] || show "${DATASET_CMD[@]}"
  show "${CMD[@]}"
  exit 0
fi
[ -f "$DATA" ] || "${DATASET_CMD[@]}"
exec "${CMD[@]}"
