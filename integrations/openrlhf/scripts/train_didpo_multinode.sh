#!/usr/bin/env bash
# DiDPO on CodeRepo-v0 with OpenRLHF over a Ray cluster of NODES nodes with 8 GPUs each.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: train_didpo_multinode.sh head|worker|submit [--head-address IP] [--dry-run] [-h|--help]
                                [OpenRLHF arguments...]

  head     on the head node:        ray start --head (GCS on port 6379, dashboard on 8265)
  worker   on each other node:      ray start --address IP:6379
  submit   once all nodes joined:   ray job submit to the dashboard, running
           `python -m integrations.openrlhf.train` with the settings of common.sh on all nodes
           (writes the prompt data first when $DATA is missing)

  --head-address IP   the head node's address (default: $HEAD_ADDRESS, else this host's first address)
  --dry-run           print the commands instead of running them (Ray is not started)

Every node needs the same software (pip install code-gym, OpenRLHF, vLLM), the task folders the
prompt labels name, and $DATA at the same path (shared storage): OpenRLHF's trainer actor, which
reads it, may run on any node. Environment: as train_didpo.sh, and NODES (default 2); submit
sets CODE_GYM_PREFLIGHT_NODES to NODES (the preflight waits for that many nodes).
USAGE
}

ROLE=""
DRY_RUN=0
HEAD=${HEAD_ADDRESS:-}
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    head|worker|submit) if [ -z "$ROLE" ]; then ROLE=$1; else EXTRA+=("$1"); fi ;;
    --head-address) HEAD=$2; shift ;;
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) EXTRA+=("$1") ;;
  esac
  shift
done
if [ -z "$ROLE" ]; then usage >&2; exit 2; fi

NODES=${NODES:-2}
source "$(dirname "$0")/common.sh"
HEAD=${HEAD:-$(hostname -I 2>/dev/null | awk '{print $1}')}
if [ -z "$HEAD" ]; then echo "train_didpo_multinode.sh: pass --head-address IP" >&2; exit 2; fi

case "$ROLE" in
  head) CMD=(ray start --head --node-ip-address "$HEAD" --port 6379 --dashboard-host 0.0.0.0
             --num-gpus "$GPUS_PER_NODE") ;;
  worker) CMD=(ray start --address "$HEAD:6379" --num-gpus "$GPUS_PER_NODE") ;;
  submit)
    openrlhf_args
    dataset_cmd
    # the preflight waits for every node before checking them (integrations/openrlhf/preflight.py)
    export CODE_GYM_PREFLIGHT_NODES=${CODE_GYM_PREFLIGHT_NODES:-$NODES}
    RUNTIME_ENV=$("$PYTHON" -c 'import json, os; print(json.dumps({"env_vars": {k: v for k, v in os.environ.items() if k.startswith("CODE_GYM_")}}))')
    CMD=(ray job submit --address "http://$HEAD:8265" --runtime-env-json "$RUNTIME_ENV" --
         "$PYTHON" -m integrations.openrlhf.train "${ARGS[@]}" "${EXTRA[@]}") ;;
esac

if [ "$DRY_RUN" = 1 ]; then
  if [ "$ROLE" = submit ] && [ ! -f "$DATA" ]; then show "${DATASET_CMD[@]}"; fi
  show "${CMD[@]}"
  exit 0
fi
if [ "$ROLE" = submit ] && [ ! -f "$DATA" ]; then "${DATASET_CMD[@]}"; fi
exec "${CMD[@]}"
