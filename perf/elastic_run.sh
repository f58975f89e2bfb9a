#!/bin/bash
# The time a lost rank costs: zsh_train --stage 3 at 4 ranks under zshrun
# --max-restarts 1 --min-ranks 3, once with snapshots in node memory every 5
# steps (--snapshot-every 5, no disk checkpoint before the end) and once with
# checkpoints on disk every 5 steps (--ckpt-dir DIR --ckpt-every 5). In each,
# a rank is killed with kill -9 once step --kill-at has been printed, and
# the script prints the milliseconds from the kill to the first step the job
# prints at 3 ranks, and on the way to the restart's start, to the end of its
# restore or load; with the step it resumed from and the job's own lines on
# the snapshot or save (its size and seconds). Files and snapshot
# directories are removed at the end.
#
#   bash perf/elastic_run.sh [--params N] [--kill-at K] [--dir DIR] [--build DIR]
# Defaults: 2e7 parameters, step 7, /var/tmp/zsh-elastic-run, ./build.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
params=2e7 kill_at=7 dir=/var/tmp/zsh-elastic-run build=$top/build
while [ $# -gt 0 ]; do
    case $1 in
        --params) params=$2 ;; --kill-at) kill_at=$2 ;; --dir) dir=$2 ;; --build) build=$2 ;;
        *) echo "usage: $0 [--params N] [--kill-at K] [--dir DIR] [--build DIR]" >&2; exit 2 ;;
    esac
    shift 2
done
train=$build/tools/zsh_train zshrun=$build/tools/zshrun
for p in "$train" "$zshrun"; do
    [ -x "$p" ] || { echo "$p is not built (make -C $build)" >&2; exit 1; }
done
. "$top/tests/harness/poll.sh"
mkdir -p "$dir"
trap 'rm -rf "$dir/ck" "$dir/out" "$dir/err"' EXIT
# shellcheck disable=SC2016
line='[ "$RANK" = 0 ] && echo "start $ZSH_RESTART_COUNT"
exec "$0" "$@" $([ -e "$CK/latest" ] || [ -e "$ZSH_SNAPSHOT_DIR/latest" ] && echo --resume)'
steps=$((kill_at + 8))

# Each line of the job's output behind the wall clock in milliseconds.
stamp() {
    local l t
    while IFS= read -r l; do
        t=${EPOCHREALTIME//[.,]/}
        printf '%s %s\n' $((t / 1000)) "$l"
    done
}

at() { # I PATTERN: the time of the first line of PATTERN after rank 0's "start I"
    awk -v i="$1" -v p="$2" '$3 == "start" && $4 == i { s = 1 } s && $0 ~ p { print $1; exit }' \
        "$dir/out"
}
after() { [ -e "$dir/out" ] && [ -n "$(at "$@")" ]; } # out appears once the job writes

run() { # NAME ARGS...: one job, one kill
    local name=$1 pid t0 ms victim
    shift
    rm -rf "$dir/ck"
    CK="$dir/ck" "$zshrun" -n 4 --max-restarts 1 --min-ranks 3 sh -c "$line" "$train" \
        --stage 3 --params "$params" --steps $steps "$@" > >(stamp >"$dir/out") 2>"$dir/err" &
    pid=$!
    poll 600 after 0 "\\] step $kill_at loss" || { echo "$name: step $kill_at not reached"; kill $pid; return; }
    victim=$(pgrep -P $pid | sed -n 2p)
    t0=$(now_ms)
    kill -9 "$victim"
    poll 600 after 1 "\\] step [0-9]+ loss" || { echo "$name: no step after the kill"; kill $pid; return; }
    ms=$(($(now_ms) - t0))
    wait $pid || echo "$name: the job exited $?"
    sleep 0.2 # the relay's last lines
    echo "$name: kill after step $kill_at, $(grep -o 'resumed from .* at step [0-9]*' "$dir/out" | head -1); first step at 3 ranks $ms ms after the kill (restart started after $(($(at 1 start) - t0)) ms, restored after $(($(at 1 resumed) - t0)) ms)"
    grep -E '^[0-9]+ \[0\] (snapshot|checkpoint) [0-9]+:' "$dir/out" | head -2 | cut -d' ' -f2- |
        sed "s/^/$name:   /"
}

echo "zsh_train --stage 3 --params $params, 4 ranks, one killed"
run snapshot --snapshot-every 5 --ckpt-dir "$dir/ck" --ckpt-every $steps
run disk --ckpt-dir "$dir/ck" --ckpt-every 5
