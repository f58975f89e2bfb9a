#!/bin/bash
# ZeroShard against bare NCCL on device buffers: zsh_bench --device cuda for
# allgather, reduce_scatter, allreduce and broadcast, 8 B to 1 GiB, at one
# rank, and at N ranks (one GPU each, through zshrun) when N > 1 GPUs are
# visible. Every table goes to OUT, one after the other; the CSV rows to
# OUT.csv.
#   bash perf/device_bench.sh OUT [BUILD_DIR]     (BUILD_DIR: default ./build)
# ZSH_BENCH_TYPE (default fp32), ZSH_BENCH_SIZES (default 8:1g) and
# ZSH_BENCH_ARGS (more zsh_bench options, e.g. "-i 50 -c") change the run.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 OUT [BUILD_DIR]" >&2
    exit 2
fi
out=$1
build=${2:-build}
bench=$build/perf/zsh_bench
zshrun=$build/tools/zshrun
dtype=${ZSH_BENCH_TYPE:-fp32}
sizes=${ZSH_BENCH_SIZES:-8:1g}
[ -x "$bench" ] || { echo "$0: no $bench (build first)" >&2; exit 1; }
[ -x "$zshrun" ] || { echo "$0: no $zshrun (build first)" >&2; exit 1; }

gpus=0
if command -v nvidia-smi >/dev/null; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
[ "$gpus" -gt 0 ] || { echo "$0: no GPU visible (nvidia-smi -L lists none)" >&2; exit 1; }

: >"$out"
rm -f "$out.csv"
status=0
run() { # NP COLL
    local np=$1 coll=$2 csv
    csv=$(mktemp)
    {
        echo "## zsh_bench $coll --device cuda, $np rank(s), $dtype, $(date -u +%FT%TZ)"
        # shellcheck disable=SC2086
        if ! "$zshrun" -n "$np" "$bench" "$coll" --device cuda -m "$sizes" -T "$dtype" -f \
            --csv "$csv" ${ZSH_BENCH_ARGS:-} 2>&1 | sed 's/^\[0\] //'; then
            echo "## FAILED: zsh_bench $coll at $np rank(s)"
            status=1
        fi
        echo
    } >>"$out"
    if [ -s "$csv" ]; then
        if [ -s "$out.csv" ]; then tail -n +2 "$csv" >>"$out.csv"; else cp "$csv" "$out.csv"; fi
    fi
    rm -f "$csv"
}

# zshrun gives every rank LOCAL_RANK, and zsh_bench takes GPU LOCAL_RANK
# modulo the GPUs visible: one GPU per rank while N <= GPUs.
nps=1
[ "$gpus" -gt 1 ] && nps="1 $gpus"
for np in $nps; do
    for coll in allgather reduce_scatter allreduce broadcast; do
        run "$np" "$coll"
    done
done
echo "$0: tables in $out, rows in $out.csv"
exit $status
