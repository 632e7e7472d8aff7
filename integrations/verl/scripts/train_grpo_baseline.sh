#!/usr/bin/env bash
# The GRPO baseline of train_didpo.sh: the same run with verl's own GRPO estimator (its options and
# arguments are train_didpo.sh's; see `train_didpo.sh --help`).
set -euo pipefail
ESTIMATOR=grpo exec bash "$(dirname "${BASH_SOURCE[0]}")/train_didpo.sh" "$@"
