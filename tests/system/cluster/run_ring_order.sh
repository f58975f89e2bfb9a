#!/bin/bash
# The rings go around the ranks in node order (coll/algo/ring.h), so on a
# simulated cluster (cluster.sh) of 2 nodes x 2 ranks, zsh_bench's ring
# all-gather and reduce-scatter put the same bytes on each node's link with
# round-robin placement as with block placement: the minimum.
#
# The formula: with n ranks on K >= 2 nodes, a ring in node order has
# exactly one edge into each node, from the previous node's last rank, and
# every edge carries n - 1 blocks of Size / n per call (Size as zsh_bench
# counts it: the gathered buffer of an all-gather, the input of a
# reduce-scatter). So each node receives
#     (n - 1) * Size / n bytes per call
# (2 x 2: 3 blocks of Size / 4), which the link counters must show within
# 5% (headers and the bootstrap included). A flat ring over round-robin
# ranks enters each node on each of its ranks' edges: twice that on 2 x 2.
# Root only: elsewhere every case is skipped with the reason.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$top_builddir" && pwd)/perf/zsh_bench
. "$here/cluster.sh"
# shellcheck source=cases.sh
. "$here/cases.sh"
cases_begin ring_order
size=16777216
np=4
colls=(allgather reduce_scatter)
placements=(rr block)
results_expected=$((${#colls[@]} * ${#placements[@]}))

name_of() { echo "${1}_ring_puts_the_node_ordered_bytes_on_each_link/${2}_2x2"; }

if why=$(cluster_unsupported); then
    for coll in "${colls[@]}"; do
        for mode in "${placements[@]}"; do
            result_skip "$(name_of "$coll" "$mode")" "$why"
        done
    done
    results_end
    exit 77
fi

# ring_case COLL rr|block: 2 nodes x 2 ranks, COLL of $size bytes with the
# ring forced; each node's bytes in per call against the formula.
ring_case() {
    local coll=$1 mode=$2 name var before calls want n rx per errs=() nodes r
    name=$(name_of "$coll" "$mode")
    var=ZSH_$(echo "$coll" | tr '[:lower:]' '[:upper:]')_ALGO
    if [ "$mode" = rr ]; then nodes=(0 1 0 1); else nodes=(0 0 1 1); fi
    for n in 0 1; do before[n]=$(cluster_bytes "$n"); done
    rm -f "$log"/out.* "$log"/rc.*
    run=(env "$var=ring" "$bench" "$coll" -m "$size:$size" -i 4 -x 0 -f)
    launch_env "${nodes[@]}"
    calls=$(awk -v s=$size '$1 == s { print $5 }' "$log/out.0")
    want=$(((np - 1) * size / np))
    for n in 0 1; do
        # shellcheck disable=SC2046,SC2086 # four counts, split on purpose
        set -- ${before[n]} $(cluster_bytes "$n")
        rx=$(($3 - $1))
        per=$((rx / ${calls:-1}))
        echo "  $coll $mode node $n: $rx bytes in over ${calls:-?} calls, $per per call; formula $want (flat ring on round-robin: $((2 * want)))"
        if [ -z "$calls" ] || [ $((per * 100)) -lt $((want * 95)) ] || [ $((per * 100)) -gt $((want * 105)) ]; then
            errs+=("node $n: $per bytes in per call, not within 5% of $want")
        fi
    done
    for r in 0 1 2 3; do
        [ "$(cat "$log/rc.$r" 2>/dev/null)" = 0 ] || errs+=("rank $r exited $(cat "$log/rc.$r" 2>/dev/null): $(tail -3 "$log/out.$r")")
    done
    result "$name" "${errs[@]}"
}

if ! cluster_create 2 >"$log/create.out" 2>&1; then
    for coll in "${colls[@]}"; do
        for mode in "${placements[@]}"; do
            result_as FAILED "$(name_of "$coll" "$mode")" "cluster_create 2: $(cat "$log/create.out")"
        done
    done
    results_end
    exit 1
fi
for coll in "${colls[@]}"; do
    for mode in "${placements[@]}"; do
        ring_case "$coll" "$mode"
    done
done
cluster_destroy
results_end
