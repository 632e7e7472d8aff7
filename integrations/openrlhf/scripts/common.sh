# Settings shared by the launch scripts (sourced, not run). Every value can be overridden from the
# environment, and arguments after the script's own are appended to OpenRLHF's (the last
# occurrence of a flag wins), so the DiDPO run and its GRPO baseline differ only where asked.
# Sized for a Qwen2.5-Coder-7B-Instruct-class model on nodes of 8 GPUs with 80 GB or more
# (docs/openrlhf.md, "GPU memory").

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python}
MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
DATA=${DATA:-$PWD/code_gym_prompts.jsonl}     # written by `code-gym openrlhf dataset` when missing
TASKS=${TASKS:-}                              # task folders for the dataset (default: the bundled suite)
OUT=${OUT:-$PWD/ckpt}
ESTIMATOR=${ESTIMATOR:-didpo}
NODES=${NODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
VLLM_TP=${VLLM_TP:-1}
SAMPLES_PER_PROMPT=${SAMPLES_PER_PROMPT:-8}
PROMPTS_PER_STEP=${PROMPTS_PER_STEP:-16}
MAX_LEN=${MAX_LEN:-32768}                     # the whole episode: prompt, actions, tool outputs
MAX_NEW_TOKENS=${MAX_NEW_TOKENS:-4096}        # one action
# The executor's settings (integrations/episodes.py, AgentConfig); train.py forwards CODE_GYM_*
# variables to every Ray worker.
export CODE_GYM_AGENT=${CODE_GYM_AGENT:-'{"env": {"max_steps": 20}, "feedback_role": "tool", "template_tools": true}'}

run_name() { echo "code-gym-${ESTIMATOR}-$(basename "$MODEL")"; }

# The OpenRLHF arguments, into the array ARGS.
openrlhf_args() {
  local gpus=$((NODES * GPUS_PER_NODE))
  local episodes=$((PROMPTS_PER_STEP * SAMPLES_PER_PROMPT))
  ARGS=(
    --actor.model_name_or_path "$MODEL"
    --train.agent_func_path "$(dirname "$HERE")/agent_func.py"
    --data.prompt_dataset "$DATA" --data.input_key input --data.label_key label
    --algo.advantage.estimator "$ESTIMATOR"
    --rollout.n_samples_per_prompt "$SAMPLES_PER_PROMPT"
    --rollout.batch_size "$PROMPTS_PER_STEP"
    --train.batch_size "$episodes"
    --rollout.micro_batch_size 2 --train.micro_batch_size 1
    --data.max_len "$MAX_LEN" --rollout.max_new_tokens "$MAX_NEW_TOKENS"
    --rollout.temperature 1.0
    --actor.adam.lr 1e-6
    --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001
    --train.num_episodes 4 --train.max_epochs 1
    --actor.num_nodes "$NODES" --actor.num_gpus_per_node "$GPUS_PER_NODE"
    --ref.num_nodes "$NODES" --ref.num_gpus_per_node "$GPUS_PER_NODE"
    --vllm.num_engines $((gpus / VLLM_TP)) --vllm.tensor_parallel_size "$VLLM_TP"
    --vllm.gpu_memory_utilization 0.6 --vllm.enable_prefix_caching
    --train.colocate_all --vllm.enable_sleep --ds.enable_sleep
    --ds.zero_stage 3 --ds.param_dtype bf16 --actor.gradient_checkpointing_enable --ds.packing_samples
    --ckpt.output_dir "$OUT/$(run_name)" --ckpt.path "$OUT/$(run_name)/checkpoints"
    --ckpt.save_steps 20 --ckpt.save_hf
    --logger.tensorboard_dir "$OUT/tensorboard/$(run_name)"
    --train.seed 42
  )
}

# The dataset command, into the array DATASET_CMD.
dataset_cmd() {
  # shellcheck disable=SC2206  # TASKS is a list of folders
  DATASET_CMD=("$PYTHON" -m code_gym.apps.cli openrlhf dataset --out "$DATA")
  if [ -n "$TASKS" ]; then DATASET_CMD+=(--tasks $TASKS); fi
}

# Print a command so that a shell reads it back unchanged.
show() { printf '%q ' "$@" | sed 's/ $//'; echo; }
