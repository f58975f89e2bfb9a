#!/bin/bash
# Collectives across the nodes of a simulated cluster (cluster.sh): on
# 2 nodes x 2 ranks, 3 nodes with 1 + 2 + 2 (the smaller node first, so a
# larger node's extra ranks have rails that miss it) and 2 nodes x 1, with block and
# round-robin placement, launched torchrun-style (MASTER_ADDR is node 0's
# address on the bridge) and by mpirun (its rsh agent enters a node's
# namespaces), coll_check runs every collective, dtype and op and checks the
# results; each rank must also see its own node's host name and as many
# local ranks as the placement put there. Then two cases count the bytes on
# the nodes' links to show that traffic between nodes crosses them.
# Root only: elsewhere every case is skipped with the reason.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
prog=$(cd "$top_builddir" && pwd)/tests/system/cluster/coll_check
bench=$(cd "$top_builddir" && pwd)/perf/zsh_bench
MPIRUN=${MPIRUN:-mpirun}
. "$here/cluster.sh"
# shellcheck source=cases.sh
. "$here/cases.sh"
cases_begin cluster
launch_vars=(ZSH_LOG_LEVEL=debug)
shapes=("2 2" "1 2 2" "1 1")
# Per shape: 2 placements x 2 launchers under the automatic choice (across
# even nodes the hierarchical algorithms past ZSH_SMALL_MSG_SIZE, the flat
# ones below it and on uneven nodes), and the hierarchical algorithms forced
# at every size, the barrier's included, under the env bootstrap (on uneven
# nodes they give way to the automatic choice); then the two transport
# cases and the rate limit.
hier_env=(ZSH_ALLGATHER_ALGO=hier ZSH_REDUCE_SCATTER_ALGO=hier ZSH_ALLREDUCE_ALGO=hier
    ZSH_BROADCAST_ALGO=hier ZSH_BARRIER_ALGO=hier)
# ZSH_CLUSTER_MPIRUN=0 leaves out the cases under mpirun (the
# AddressSanitizer stage: a process that calls MPI_Init unwinds malloc's
# stacks in full there, three times the CPU, and mpirun's bootstrap runs
# under that sanitizer in tests/system/mpi/run.sh).
with_mpirun=${ZSH_CLUSTER_MPIRUN:-1}
launchers="env_bootstrap mpirun hier_env_bootstrap"
[ "$with_mpirun" = 0 ] && launchers="env_bootstrap hier_env_bootstrap"
results_expected=$((${#shapes[@]} * 2 * $(wc -w <<<"$launchers") + 3))

if why=$(cluster_unsupported); then
    for shape in "${shapes[@]}"; do
        for mode in block rr; do
            for launch in $launchers; do
                result_skip "every_collective_across_nodes_under_$launch/${mode}_${shape// /_}" "$why"
            done
        done
    done
    for name in traffic_between_nodes_crosses_their_links node_local_shortcuts_follow_the_rank_map \
        links_are_rate_limited_in_both_directions; do
        result_skip "$name" "$why"
    done
    results_end
    exit 77
fi

# place COUNTS block|rr: the node of each rank, one per line.
place() {
    local -a left
    read -r -a left <<<"$1"
    local mode=$2 k=${#left[@]} n=0 total=0 c
    for c in "${left[@]}"; do total=$((total + c)); done
    while [ $total -gt 0 ]; do
        if [ "${left[n]}" -gt 0 ]; then
            echo $n
            left[n]=$((left[n] - 1))
            total=$((total - 1))
            [ "$mode" = rr ] && n=$(((n + 1) % k))
        else
            n=$(((n + 1) % k))
        fi
    done
}

# launch_mpi COUNTS block|rr NP: mpirun inside node 0, a hostfile of the
# nodes' host names with COUNTS slots, its rsh agent entering the nodes.
launch_mpi() {
    local -a counts
    read -r -a counts <<<"$1"
    local mode=$2 np=$3 i r map=slot
    [ "$mode" = rr ] && map=node
    : >"$log/hostfile"
    for ((i = 0; i < ${#counts[@]}; i++)); do
        echo "${CLUSTER_HOSTS[i]} slots=${counts[i]}" >>"$log/hostfile"
    done
    rm -rf "$log/mpi"
    cluster_exec 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 180 "$MPIRUN" --oversubscribe -np "$np" --hostfile "$log/hostfile" \
        --map-by "$map" --mca plm_rsh_agent "$CLUSTER_AGENT" --output-filename "$log/mpi" \
        -x ZSH_TIMEOUT=60 -x ZSH_LOG_LEVEL=debug -x PATH "${run[@]}" >"$log/mpirun.out" 2>&1
    echo $? >"$log/rc.mpirun"
    for ((r = 0; r < np; r++)); do
        cat "$log"/mpi/1/rank.$r/stdout "$log"/mpi/1/rank.$r/stderr >"$log/out.$r" 2>/dev/null
        cat "$log/rc.mpirun" >"$log/rc.$r"
    done
}

# check NAME NODES...: rank r ran on node NODES[r], passed every check, and
# counted as many ranks on its node as NODES puts there.
check() {
    local name=$1 r n want_local errs=()
    shift
    local -a nodes=("$@")
    for ((r = 0; r < ${#nodes[@]}; r++)); do
        n=${nodes[r]}
        want_local=$(printf '%s\n' "${nodes[@]}" | grep -cx "$n")
        if [ "$(cat "$log/rc.$r" 2>/dev/null)" != 0 ]; then
            errs+=("rank $r exited $(cat "$log/rc.$r" 2>/dev/null): $(grep -v DEBUG "$log/out.$r" | tail -5)")
        elif ! grep -q "^rank $r of ${#nodes[@]} on ${CLUSTER_HOSTS[n]}: ok" "$log/out.$r"; then
            errs+=("rank $r: not ok on ${CLUSTER_HOSTS[n]}: $(grep -v DEBUG "$log/out.$r" | tail -3)")
        elif ! grep -q "DEBUG $want_local rank(s) on a node" "$log/out.$r"; then
            errs+=("rank $r: expected $want_local rank(s) on its node: $(grep 'rank(s) on a node' "$log/out.$r")")
        fi
    done
    if [ ${#errs[@]} -gt 0 ] && [ -s "$log/mpirun.out" ]; then
        errs+=("mpirun: $(tail -5 "$log/mpirun.out")")
    fi
    result "$name" "${errs[@]}"
}

for shape in "${shapes[@]}"; do
    set -- $shape
    k=$#
    tag=$(echo "$shape" | tr ' ' '_')
    if ! cluster_create "$k" >"$log/create.out" 2>&1; then
        for mode in block rr; do
            for launch in $launchers; do
                result_as FAILED "every_collective_across_nodes_under_$launch/${mode}_$tag" \
                    "cluster_create $k: $(cat "$log/create.out")"
            done
        done
        continue
    fi
    run=("$prog")
    for mode in block rr; do
        mapfile -t nodes < <(place "$shape" "$mode")
        rm -f "$log"/out.* "$log"/rc.* "$log/mpirun.out"
        launch_env "${nodes[@]}"
        check "every_collective_across_nodes_under_env_bootstrap/${mode}_$tag" "${nodes[@]}"
        rm -f "$log"/out.* "$log"/rc.* "$log/mpirun.out"
        if [ "$with_mpirun" != 0 ]; then
            launch_mpi "$shape" "$mode" "${#nodes[@]}"
            check "every_collective_across_nodes_under_mpirun/${mode}_$tag" "${nodes[@]}"
            rm -f "$log"/out.* "$log"/rc.* "$log/mpirun.out"
        fi
        run=(env "${hier_env[@]}" "$prog")
        launch_env "${nodes[@]}"
        run=("$prog")
        check "every_collective_across_nodes_under_hier_env_bootstrap/${mode}_$tag" "${nodes[@]}"
    done
    cluster_destroy
done

# link_case NAME CLUSTER_IPC 'ENV...': 2 nodes x 2 ranks round-robin, an
# all-gather of 16 MiB in all; each node lacks half of it, so each node's
# link must carry at least that much in per call, whatever the algorithm,
# unless something reached the other node's memory without the network.
link_case() {
    local name=$1 ipc=$2 env=$3 before calls need n rx errs=()
    if ! CLUSTER_IPC=$ipc cluster_create 2 >"$log/create.out" 2>&1; then
        result_as FAILED "$name" "cluster_create 2: $(cat "$log/create.out")"
        return
    fi
    for n in 0 1; do before[n]=$(cluster_bytes "$n"); done
    rm -f "$log"/out.* "$log"/rc.*
    # shellcheck disable=SC2206
    run=(env $env "$bench" allgather -m 16m:16m -i 4 -x 0 -f)
    launch_env 0 1 0 1
    calls=$(awk '$1 == 16777216 { print $5 }' "$log/out.0")
    need=$((16777216 / 2))
    for n in 0 1; do
        # shellcheck disable=SC2046 # four counts, split on purpose
        set -- ${before[n]} $(cluster_bytes "$n")
        rx=$(($3 - $1))
        echo "  node $n: $rx bytes in, $(($4 - $2)) out over ${calls:-?} timed calls (at least $need in per call)"
        if [ -z "$calls" ] || [ "$rx" -lt $((need * calls)) ]; then
            errs+=("node $n received $rx bytes, less than $need x ${calls:-?} calls")
        fi
    done
    for r in 0 1 2 3; do
        [ "$(cat "$log/rc.$r")" = 0 ] || errs+=("rank $r exited $(cat "$log/rc.$r"): $(grep -v DEBUG "$log/out.$r" | tail -3)")
    done
    result "$name" "${errs[@]}"
    cluster_destroy
}

# Nodes as the cluster makes them (an IPC namespace each, as UCX tells
# machines apart by boot id and IPC namespace): UCX's shared memory stays
# within a node.
link_case "traffic_between_nodes_crosses_their_links" 1 ""
# Nodes that only a host name tells apart, UCX's shared memory off: the
# kernel would let cross-memory attach and memfd mailboxes reach the other
# node, so only the rank map keeps ZeroShard's own shortcuts within a node.
link_case "node_local_shortcuts_follow_the_rank_map" 0 "UCX_TLS=^sm ZSH_CMA=1 ZSH_SHM=1"

# Links limited to 100 Mbit/s (tc tbf both ways): an all-gather between 2
# nodes of one rank each moves half of 16 MiB into each node, which must take
# at least as long as the limit allows.
rate_case() {
    local name=links_are_rate_limited_in_both_directions before us n rx errs=()
    if ! cluster_create 2 100mbit >"$log/create.out" 2>&1; then
        result_as FAILED "$name" "cluster_create 2 100mbit: $(cat "$log/create.out")"
        return
    fi
    for n in 0 1; do before[n]=$(cluster_bytes "$n"); done
    rm -f "$log"/out.* "$log"/rc.*
    run=("$bench" allgather -m 16m:16m -i 1 -x 0 -f)
    launch_env 0 1
    us=$(awk '$1 == 16777216 && $5 == 1 { printf "%d", $2 }' "$log/out.0")
    for n in 0 1; do
        # shellcheck disable=SC2046 # four counts, split on purpose
        set -- ${before[n]} $(cluster_bytes "$n")
        rx=$(($3 - $1))
        # 100 Mbit/s is 12.5 bytes per microsecond; allow 10% for tbf's burst.
        echo "  node $n: $rx bytes in during a call of ${us:-?} us"
        if [ -z "$us" ] || [ "$((rx * 10 / 11))" -gt "$((us * 25 / 2))" ] || [ "$rx" -lt 8388608 ]; then
            errs+=("node $n: $rx bytes in ${us:-?} us is faster than 100 Mbit/s, or too few bytes")
        fi
    done
    for r in 0 1; do
        [ "$(cat "$log/rc.$r")" = 0 ] || errs+=("rank $r exited $(cat "$log/rc.$r"): $(grep -v DEBUG "$log/out.$r" | tail -3)")
    done
    result "$name" "${errs[@]}"
    cluster_destroy
}
rate_case

results_end
