#!/usr/bin/env bash
# The GRPO baseline of train_didpo.sh: the same settings, OpenRLHF's own GRPO estimator
# (group_norm: (r - mean) / std over the samples of a prompt) instead of DiDPO.
# Same arguments as train_didpo.sh (--dry-run, --help, extra OpenRLHF arguments).
set -euo pipefail
ESTIMATOR=group_norm exec bash "$(dirname "$0")/train_didpo.sh" "$@"
