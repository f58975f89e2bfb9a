#!/bin/bash
# A node's link cut in the middle of a collective (cluster.sh's
# cluster_link I down, which is "ip link set ... down" on both ends of the
# node's veth pair): every rank, on both sides of the partition, must fail
# with ZSH_ERR_PEER_FAILED or ZSH_ERR_TIMEOUT within the configured bound,
# and exit; none may hang.
#
# Each trial makes a fresh cluster (links at 1 Gbit/s, so that a call of a
# few MiB lasts long enough to be cut), launches link_fault torchrun-style
# with ZSH_TIMEOUT=$bound, waits until every rank has finished a few rounds
# of its loop of collectives, waits a random 0 to 1 s more and takes the
# last node's link down. It then prints the seconds from the cut to each
# rank's report and to its exit. A rank must report within the bound plus
# $slack s and exit within $exit_cap s of the cut; one still alive
# $hard_cap s after the cut is killed and counted as hung. Once every rank
# has reported, the link comes back up, which must change nothing, and no
# process but the node's holder may be left in any node.
# Shapes: 2 nodes x 2 ranks, and 3 nodes with 2 + 1 + 1 ranks.
# LINK_FAULT_KEEP=DIR keeps each trial's rank outputs in DIR/<trial>/.
# Root only: elsewhere every case is skipped with the reason.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
prog=$(cd "$top_builddir" && pwd)/tests/system/cluster/link_fault
# shellcheck source=cluster.sh
. "$here/cluster.sh"
# shellcheck source=cases.sh
. "$here/cases.sh"
cases_begin cluster

bound=${LINK_FAULT_BOUND:-5}
slack=2
exit_cap=$((bound + slack + 12))
hard_cap=$((exit_cap + 20))
# "NODES_OF_RANKS:TRIALS": the node of each rank, and how many trials.
shapes=("0 0 1 1:${LINK_FAULT_TRIALS:-5}" "0 0 1 2:${LINK_FAULT_TRIALS_3:-2}")
for s in "${shapes[@]}"; do results_expected=$((results_expected + ${s#*:})); done

name_of() {
    local nodes=$1 trial=$2 k counts
    k=$(($(tr ' ' '\n' <<<"$nodes" | sort -u | wc -l)))
    counts=$(tr ' ' '\n' <<<"$nodes" | sort -n | uniq -c | awk '{ printf "%s%s", s, $1; s = "_" }')
    echo "link_cut_mid_collective_fails_every_rank_within_the_bound/${k}_nodes_${counts}_trial_$trial"
}

if why=$(cluster_unsupported); then
    for s in "${shapes[@]}"; do
        for ((t = 1; t <= ${s#*:}; t++)); do
            result_skip "$(name_of "${s%:*}" "$t")" "$why"
        done
    done
    results_end
    exit 77
fi

now() { date +%s.%N; }
# elapsed FROM [TO]: seconds between two epoch times, 2 decimals.
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
# le A B: A <= B for decimals.
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# Processes in node I's namespaces other than its holder.
node_procs() {
    ip netns pids "${CLUSTER_HOSTS[$1]}" 2>/dev/null | grep -vx "${CLUSTER_PIDS[$1]}"
}

# trial NAME NODES...: one trial; rank r runs on node NODES[r]; the last
# node loses its link.
trial() {
    local name=$1 np r n p cut t0 done_ranks k victim line at local_rank errs=() times=()
    shift
    local -a nodes=("$@")
    local -A seen=()
    np=${#nodes[@]}
    k=$(($(printf '%s\n' "${nodes[@]}" | sort -u | wc -l)))
    victim=$((k - 1))
    if ! cluster_create "$k" 1gbit >"$log/create.out" 2>&1; then
        result_as FAILED "$name" "cluster_create $k: $(cat "$log/create.out")"
        return
    fi
    rm -f "$log"/out.* "$log"/rc.* "$log"/end.*
    p=$((20000 + RANDOM % 20000))
    for ((r = 0; r < np; r++)); do
        n=${nodes[r]}
        local_rank=${seen[$n]:-0}
        seen[$n]=$((local_rank + 1))
        (
            cluster_exec "$n" env RANK=$r WORLD_SIZE="$np" LOCAL_RANK="$local_rank" \
                LOCAL_WORLD_SIZE="$(printf '%s\n' "${nodes[@]}" | grep -cx "$n")" GROUP_RANK="$n" \
                MASTER_ADDR="${CLUSTER_ADDRS[0]}" MASTER_PORT="$p" ZSH_TIMEOUT="$bound" \
                LINK_FAULT_SECONDS=60 "$prog" >"$log/out.$r" 2>&1
            echo $? >"$log/rc.$r"
            now >"$log/end.$r"
        ) &
    done
    # Every rank a few rounds into its loop (or gone, or 30 s).
    t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 30 ]; do
        done_ranks=0
        for ((r = 0; r < np; r++)); do
            if grep -q "^rank $r iter 2$" "$log/out.$r" 2>/dev/null || [ -f "$log/rc.$r" ]; then
                done_ranks=$((done_ranks + 1))
            fi
        done
        [ $done_ranks = "$np" ] && break
        sleep 0.1
    done
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", r / 32768 }')"
    for ((r = 0; r < np; r++)); do
        if [ -f "$log/rc.$r" ] || ! grep -q "^rank $r iter " "$log/out.$r"; then
            errs+=("rank $r was not running its loop when the link went down: $(tail -3 "$log/out.$r")")
        fi
    done
    cut=$(now)
    cluster_link "$victim" down
    # Wait for every rank to report; then the link comes back, and every rank
    # must exit; past the hard cap, what is left is killed.
    local up=0
    while :; do
        done_ranks=0
        for ((r = 0; r < np; r++)); do
            [ -f "$log/rc.$r" ] && done_ranks=$((done_ranks + 1))
        done
        [ $done_ranks = "$np" ] && break
        if [ $up = 0 ] && [ "$(grep -l ' failed at ' "$log"/out.* 2>/dev/null | wc -l)" = "$np" ]; then
            cluster_link "$victim" up
            up=1
        fi
        if ! le "$(elapsed "$cut")" "$hard_cap"; then
            for ((n = 0; n < k; n++)); do
                # shellcheck disable=SC2046 # a list of pids
                kill -KILL $(node_procs "$n") 2>/dev/null
            done
            errs+=("ranks still alive ${hard_cap} s after the cut were killed (hung)")
            break
        fi
        sleep 0.1
    done
    wait
    [ $up = 0 ] && cluster_link "$victim" up
    for ((r = 0; r < np; r++)); do
        line=$(grep -m1 ' failed at ' "$log/out.$r")
        at=$(sed -n 's/^rank [0-9]*: [a-z_]* failed at \([0-9.]*\): .*/\1/p' <<<"$line")
        times+=("rank $r (node ${nodes[r]}): reported $( [ -n "$at" ] && elapsed "$cut" "$at" || echo -) s, exited $( [ -f "$log/end.$r" ] && elapsed "$cut" "$(cat "$log/end.$r")" || echo -) s after the cut, status $(cat "$log/rc.$r" 2>/dev/null || echo -): ${line#*: }")
        if [ -z "$at" ]; then
            errs+=("rank $r never reported a failure: $(grep -v ' iter ' "$log/out.$r" | tail -3)")
        elif ! grep -qE ': (ZSH_ERR_PEER_FAILED|ZSH_ERR_TIMEOUT) \(' <<<"$line"; then
            errs+=("rank $r failed with something else: $line")
        elif ! le "$(elapsed "$cut" "$at")" $((bound + slack)); then
            errs+=("rank $r reported $(elapsed "$cut" "$at") s after the cut, past $bound + $slack s")
        fi
        if [ "$(cat "$log/rc.$r" 2>/dev/null)" != 0 ]; then
            errs+=("rank $r exited $(cat "$log/rc.$r" 2>/dev/null || echo '(killed)'): $(grep -v ' iter ' "$log/out.$r" | tail -3)")
        elif ! le "$(elapsed "$cut" "$(cat "$log/end.$r")")" "$exit_cap"; then
            errs+=("rank $r exited $(elapsed "$cut" "$(cat "$log/end.$r")") s after the cut, past $exit_cap s")
        fi
    done
    for ((n = 0; n < k; n++)); do
        if [ -n "$(node_procs "$n")" ]; then
            errs+=("node $n still runs: $(node_procs "$n" | xargs -r ps -o pid=,args= -p)")
        fi
    done
    printf '  %s\n' "${times[@]}"
    if [ -n "${LINK_FAULT_KEEP:-}" ]; then
        mkdir -p "$LINK_FAULT_KEEP/${name##*/}" && cp "$log"/out.* "$LINK_FAULT_KEEP/${name##*/}/"
    fi
    result "$name" "${errs[@]}"
    cluster_destroy
}

for s in "${shapes[@]}"; do
    for ((t = 1; t <= ${s#*:}; t++)); do
        # shellcheck disable=SC2086 # the nodes, split on purpose
        trial "$(name_of "${s%:*}" "$t")" ${s%:*}
    done
done
results_end
