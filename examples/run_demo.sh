#!/bin/bash
# The main job: the 4-rank all-gather / reduce-scatter demo under mpirun.
# Run contrib/debian-setup.sh first (it builds into ./build).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
exec mpirun --oversubscribe -np "${ZSH_DEMO_RANKS:-4}" "$build/examples/zsh_demo" "$@"
