#!/bin/bash
# zsh_bench across a simulated cluster (tests/system/cluster/cluster.sh), as
# a user would run it on a real one: busbw of ZeroShard and of Open MPI on
# the same buffers under mpirun (--baseline mpi: alternating rounds, medians),
# or of ZeroShard alone launched torchrun-style (--launcher env: RANK,
# WORLD_SIZE and MASTER_ADDR, node 0's address, set per rank),
# and the bytes that crossed the link of the node with the fewest ranks
# (the first such) per ZeroShard call, read from the link's counters around
# a run of that size alone, beside what the algorithm must move. Root only;
# everything it creates is removed on exit.
#
#   perf/cluster_bench.sh [BUILD_DIR] [-k NODES] [-r RANKS_PER_NODE[,...]] [--rate RATE]
#                         [--placement block|rr] [--launcher mpirun|env] [-c COLLS]
#                         [-m SIZES] [-i ITERS]
#
# Defaults: 2 nodes x 2 ranks, 1gbit links, round-robin placement,
# allgather,reduce_scatter, sizes 1m,4m,16m (total bytes per call as
# zsh_bench counts them), 8 timed calls after 2 untimed ones. -r 3,1 gives
# node 0 three ranks and node 1 one (uneven nodes); round-robin placement
# then deals ranks to the nodes in turn while they have slots left.
#
# The formula: across even nodes of more than one rank the automatic choice
# (or ZSH_<COLL>_ALGO=hier) is hierarchical, and only the rails cross: a node
# takes in what it lacks, Size (n - r) / n for n ranks, r of them its own,
# per all-gather or reduce-scatter, twice that per all-reduce; a broadcast
# (from rank 0) brings Size into every other node once. ZeroShard's rings
# (ZSH_<COLL>_ALGO=ring, one rank per node, or uneven nodes) go around the
# ranks node by node, so each node's link takes in (n - 1) blocks of
# Size / n, twice that per all-reduce (a reduce-scatter and an all-gather),
# whatever the placement.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
build=$(cd "$build" && pwd)
nodes=2 per=2 rate=1gbit placement=rr launcher=mpirun colls=allgather,reduce_scatter
sizes=1m,4m,16m iters=8
while [ $# -gt 0 ]; do
    case $1 in
    -k) nodes=$2; shift 2 ;;
    -r) per=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --placement) placement=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    -c) colls=$2; shift 2 ;;
    -m) sizes=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    *) echo "cluster_bench.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $placement in
block) map=slot ;;
rr) map=node ;;
*) echo "cluster_bench.sh: --placement takes block or rr, not '$placement'" >&2; exit 2 ;;
esac
case $launcher in
mpirun | env) ;;
*) echo "cluster_bench.sh: --launcher takes mpirun or env, not '$launcher'" >&2; exit 2 ;;
esac
# shellcheck source=../tests/system/cluster/cluster.sh
. "$here/../tests/system/cluster/cluster.sh"
if why=$(cluster_unsupported); then
    echo "cluster_bench.sh: $why" >&2
    exit 1
fi
bench=$build/perf/zsh_bench
# Ranks on each node: one count for all, or one per node.
IFS=, read -r -a slots <<<"$per"
if [ ${#slots[@]} = 1 ]; then
    for ((i = 1; i < nodes; i++)); do slots[i]=$per; done
elif [ ${#slots[@]} != "$nodes" ]; then
    echo "cluster_bench.sh: -r $per names ${#slots[@]} nodes' ranks, not $nodes (-k)" >&2
    exit 2
fi
np=0 small=0 even=1
for ((i = 0; i < nodes; i++)); do
    np=$((np + slots[i]))
    [ "${slots[i]}" -lt "${slots[small]}" ] && small=$i
    [ "${slots[i]}" = "${slots[0]}" ] || even=0
done
# node_of R: rank R's node under the placement: in blocks, or dealt to the
# nodes in turn, skipping those whose slots are taken.
node_of() {
    local r=$1 n=0 i left=("${slots[@]}")
    for ((i = 0; i <= r; i++)); do
        if [ "$placement" = block ]; then
            while [ "${left[n]}" = 0 ]; do n=$((n + 1)); done
        else
            while [ "${left[n]}" = 0 ]; do n=$(((n + 1) % nodes)); done
        fi
        left[n]=$((left[n] - 1))
        [ $i = "$r" ] && break
        [ "$placement" = block ] || n=$(((n + 1) % nodes))
    done
    echo $n
}
warm=2
tmp=$(mktemp -d)
# cluster.sh reads it: the traps below remove the cluster.
# shellcheck disable=SC2034
CLUSTER_TRAPS=0
trap 'cluster_destroy; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_create "$nodes" "$rate" >"$tmp/create.out" 2>&1 || { cat "$tmp/create.out" >&2; exit 1; }
: >"$tmp/hostfile"
for ((i = 0; i < nodes; i++)); do
    echo "${CLUSTER_HOSTS[i]} slots=${slots[i]}" >>"$tmp/hostfile"
done

# mpirun inside node 0 (the cluster's addresses exist only in the nodes),
# with the caller's algorithm overrides (ZSH_<COLL>_ALGO=hier, say).
algos=()
for v in $(compgen -e | grep -E '^ZSH_[A-Z_]+_ALGO$'); do algos+=(-x "$v=${!v}"); done
mpi() {
    cluster_exec 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 600 "${MPIRUN:-mpirun}" --oversubscribe -np "$np" --hostfile "$tmp/hostfile" \
        --map-by "$map" --mca plm_rsh_agent "$CLUSTER_AGENT" -x PATH -x ZSH_TIMEOUT=120 \
        "${algos[@]}" "$@"
}

# torchrun-style: rank r on node_of r; rank 0's output is what the caller
# reads.
envrun() {
    local r n lr port=$((20000 + RANDOM % 20000)) pids=() rc=0 seen=()
    for ((r = 0; r < np; r++)); do
        n=$(node_of $r)
        lr=${seen[n]:-0}
        seen[n]=$((lr + 1))
        cluster_exec "$n" env RANK=$r WORLD_SIZE=$np LOCAL_RANK=$lr \
            MASTER_ADDR="${CLUSTER_ADDRS[0]}" MASTER_PORT=$port ZSH_TIMEOUT=120 \
            timeout 600 "$@" >"$tmp/env.$r" 2>&1 &
        pids+=($!)
    done
    for r in "${!pids[@]}"; do
        wait "${pids[r]}" || rc=1
    done
    cat "$tmp/env.0"
    [ $rc = 0 ] || { tail -3 "$tmp"/env.* >&2; return 1; }
}

launch() {
    if [ "$launcher" = env ]; then envrun "$@"; else mpi "$@"; fi
}

bytes_of() { # SIZE: k/m/g suffixes, 2^10 steps
    local s=$1 m=1
    case $s in *k) m=1024 ;; *m) m=$((1 << 20)) ;; *g) m=$((1 << 30)) ;; esac
    echo $((${s%[kmg]} * m))
}

echo "# ZeroShard$([ "$launcher" = mpirun ] && echo " and Open MPI") on $nodes simulated nodes x" \
     "$per ranks, $placement placement, links of $rate, launched by $launcher; busbw in GB/s" \
     "(zsh_bench$([ "$launcher" = mpirun ] && echo ", medians of alternating rounds"))"
echo "# link bytes: into node $small (${slots[small]} of $np ranks) per ZeroShard call, from" \
     "its link's counters around a run of that size alone ($iters + $warm calls, a fifth" \
     "above 1 MiB), against the formula"
printf '%-15s %10s %12s %12s %8s %14s %14s %8s\n' "# collective" "size" "zsh busbw" "MPI busbw" \
    "zsh/MPI" "link B/call" "formula B" "ratio"
IFS=, read -r -a coll_list <<<"$colls"
IFS=, read -r -a size_list <<<"$sizes"
for coll in "${coll_list[@]}"; do
    for size in "${size_list[@]}"; do
        total=$(bytes_of "$size")
        baseline=()
        [ "$launcher" = mpirun ] && baseline=(--baseline mpi)
        if ! launch "$bench" "$coll" -m "$total:$total" -i "$iters" -x "$warm" "${baseline[@]}" \
            >"$tmp/out" 2>&1; then
            echo "cluster_bench.sh: $coll $size under $launcher failed:" >&2
            tail -5 "$tmp/out" >&2
            exit 1
        fi
        # The one size row (zsh_bench rounds a size its ranks cannot split evenly).
        read -r zbw mbw ratio < <(awk '$1 ~ /^[0-9]+$/ { print $4, ($5 == "" ? "-" : $5), ($6 == "" ? "-" : $6); exit }' "$tmp/out")
        before=$(cluster_bytes $small)
        if ! launch "$bench" "$coll" -m "$total:$total" -i "$iters" -x "$warm" >"$tmp/out" 2>&1; then
            echo "cluster_bench.sh: $coll $size (link count) failed:" >&2
            tail -5 "$tmp/out" >&2
            exit 1
        fi
        after=$(cluster_bytes $small)
        calls=$((iters + warm))
        if [ "$total" -gt $((1 << 20)) ]; then # zsh_bench runs a fifth above 1 MiB, as OSU does
            calls=$(( (iters + 4) / 5 + (warm + 4) / 5 ))
        fi
        in=$(( ($(echo "$after" | cut -d' ' -f1) - $(echo "$before" | cut -d' ' -f1)) / calls ))
        algo_var=ZSH_$(echo "$coll" | tr '[:lower:]' '[:upper:]')_ALGO
        if [ "$coll" = broadcast ]; then
            formula=$total
            [ $small = 0 ] && formula=0 # rank 0, the root, is on node 0
        elif [[ "${!algo_var:-auto}" =~ ^(auto|hier)$ ]] && [ "$np" -gt "$nodes" ] &&
            [ $even = 1 ]; then
            formula=$(( (np - slots[small]) * total / np ))
        else
            formula=$(( (np - 1) * total / np ))
        fi
        [ "$coll" = allreduce ] && formula=$((2 * formula))
        [ "$nodes" -lt 2 ] && formula=0
        printf '%-15s %10s %12s %12s %8s %14d %14d %8s\n' "$coll" "$size" "${zbw:-?}" "${mbw:-?}" \
            "${ratio:-?}" "$in" "$formula" \
            "$(awk -v a="$in" -v b="$formula" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')"
    done
done
