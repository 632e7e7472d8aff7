#!/usr/bin/env bash
# DiDPO on CodeRepo-v0 with verl on one node of 8 GPUs: verl's v1 PPO trainer (FSDP actor and
# reference, vLLM rollout servers) with the code_gym agent loop and credit's estimators.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: train_didpo.sh [--dry-run] [-h|--help] [verl overrides...]

Trains a Qwen2.5-Coder-7B-Instruct-class model on CodeRepo-v0 episodes with verl's own entry point,
`python -m verl.trainer.main_ppo`, and the overrides that wire code-gym in (docs/verl.md):
algorithm.adv_estimator, the code_gym agent loop (agent_loop.yaml) and Ray's
worker_process_setup_hook (integrations.verl.hook.install, which registers the estimators in
verl's trainer process). Writes the prompt data first when $DATA is missing. Extra arguments are
hydra overrides appended to the script's (the last one of a key wins), e.g.
+algorithm.credit_options.lambda_=0.5 (credit's options: docs/credit.md).

  --dry-run   print the commands instead of running them (Ray is not started)

Environment: MODEL, DATA (verl's .jsonl, written by `code-gym verl dataset` when missing), TASKS
(task folders for it; default the bundled suite), OUT, ESTIMATOR (didpo, the paper's rules;
didpo-split, the rule measured best; didpo-contrast; gigpo; credit-grpo, credit-rloo, dr_grpo; or
any of verl's own, such as grpo), GPUS_PER_NODE (8), VLLM_TP (1), SAMPLES_PER_PROMPT (8),
PROMPTS_PER_STEP (16), PROMPT_LENGTH (4096: the task's first observation), RESPONSE_LENGTH (28672:
every action and tool output of an episode), PYTHON.
train_grpo_baseline.sh runs this script with ESTIMATOR=grpo (verl's GRPO).
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

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python}
MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
DATA=${DATA:-$PWD/code_gym_verl.jsonl}
TASKS=${TASKS:-}
OUT=${OUT:-$PWD/ckpt}
ESTIMATOR=${ESTIMATOR:-didpo}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
VLLM_TP=${VLLM_TP:-1}
SAMPLES_PER_PROMPT=${SAMPLES_PER_PROMPT:-8}
PROMPTS_PER_STEP=${PROMPTS_PER_STEP:-16}
PROMPT_LENGTH=${PROMPT_LENGTH:-4096}
RESPONSE_LENGTH=${RESPONSE_LENGTH:-28672}
RUN="code-gym-${ESTIMATOR}-$(basename "$MODEL")"

OVERRIDES=(
  algorithm.adv_estimator="$ESTIMATOR"
  algorithm.use_kl_in_reward=False
  data.train_files="$DATA" data.val_files="$DATA"
  data.train_batch_size="$PROMPTS_PER_STEP"
  data.max_prompt_length="$PROMPT_LENGTH" data.max_response_length="$RESPONSE_LENGTH"
  actor_rollout_ref.model.path="$MODEL"
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.ppo_mini_batch_size="$PROMPTS_PER_STEP"
  actor_rollout_ref.actor.use_dynamic_bsz=True
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$((PROMPT_LENGTH + RESPONSE_LENGTH))
  actor_rollout_ref.actor.use_kl_loss=True
  actor_rollout_ref.actor.kl_loss_coef=0.001
  actor_rollout_ref.actor.kl_loss_type=low_var_kl
  actor_rollout_ref.rollout.name=vllm
  actor_rollout_ref.rollout.n="$SAMPLES_PER_PROMPT"
  actor_rollout_ref.rollout.tensor_model_parallel_size="$VLLM_TP"
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$(dirname "$HERE")/agent_loop.yaml"
  actor_rollout_ref.rollout.agent.default_agent_loop=code_gym
  trainer.nnodes=1 trainer.n_gpus_per_node="$GPUS_PER_NODE"
  trainer.project_name=code_gym trainer.experiment_name="$RUN"
  trainer.default_local_dir="$OUT/$RUN"
  trainer.total_epochs=4 trainer.save_freq=20 trainer.test_freq=-1 trainer.val_before_train=False
  +ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=integrations.verl.hook.install
)
if [ -n "${CODE_GYM_TASKS:-}" ]; then  # the pool that task ids resolve in, on every worker
  OVERRIDES+=(+ray_kwargs.ray_init.runtime_env.env_vars.CODE_GYM_TASKS="$CODE_GYM_TASKS")
fi
# shellcheck disable=SC2206  # TASKS is a list of folders
DATA_CMD=("$PYTHON" -m code_gym.apps.cli verl dataset --out "$DATA" ${TASKS:+--tasks $TASKS})
CMD=("$PYTHON" -m verl.trainer.main_ppo "${OVERRIDES[@]}" "${EXTRA[@]}")

show() { printf '%q ' "$@" | sed 's/ $//'; echo; }
if [ "$DRY_RUN" = 1 ]; then
  [ -f "$DATA" ] || show "${DATA_CMD[@]}"
  show "${CMD[@]}"
  exit 0
fi
[ -f "$DATA" ] || "${DATA_CMD[@]}"
exec "${CMD[@]}"
