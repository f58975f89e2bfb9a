#!/bin/bash
# The main job: zsh_train, a character-level language model trained through
# the ZeRO optimizer layer at stage 3 on 4 ranks under mpirun. It prints the
# loss of every step, then the model-state bytes and the traffic per rank,
# and fails unless the loss fell. Run contrib/debian-setup.sh first (it
# builds into ./build). Extra arguments go to zsh_train (see --help).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
mpirun --oversubscribe -np "${ZSH_DEMO_RANKS:-4}" "$build/tools/zsh_train" --stage 3 "$@" |
    tee "$out"
first=$(awk '$1 == "step" { print $4; exit }' "$out")
last=$(awk '$1 == "step" { v = $4 } END { print v }' "$out")
grep -q '^model-state bytes per rank: [0-9]' "$out"
grep -q '^comm bytes per rank per step: [0-9]' "$out"
if awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'; then
    echo "loss fell from $first to $last"
else
    echo "FAILED: the loss did not fall ($first -> $last)" >&2
    exit 1
fi
