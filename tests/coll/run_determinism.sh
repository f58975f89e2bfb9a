#!/bin/bash
# The deterministic mode across node layouts, without root: 4 ranks of one
# machine on one node, on 2 x 2 made-up nodes in blocks and round-robin
# (ZSH_NODE_NAME, tests/harness/fake_nodes.sh). Each job runs
# zsh_bench allreduce --check-determinism: every algorithm with three chunk
# sizes and depths on the same float inputs, each setting's bits compared in
# the mode (all alike: Pass) and without it (some differ: the comparison
# can fail). Across the jobs, the mode's digest of the results over the
# ranks must be the same: one node's direct copies and the nodes' ordered
# messages give the same bits (the chain's among them, in blocks). A job on
# 3 x 2 made-up nodes in blocks must pass as well. Then which
# algorithm the mode picks across nodes: rank 0 forces one and the others
# choose; in blocks every rank must fail naming chain (the others' choice),
# round-robin the chain gives way to ordered, so all agree. Ends with a
# GoogleTest-style summary.
set -u
top_builddir=${top_builddir:-.}
bench=$(cd "$top_builddir" && pwd)/perf/zsh_bench
# shellcheck source=../harness/results.sh
. "$(dirname "$0")/../harness/results.sh"
results_begin coll_determinism 7
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# shellcheck source=../harness/fake_nodes.sh
. "$(dirname "$0")/../harness/fake_nodes.sh"

# The row of the 64 KiB size in rank 0's output, after a job; empty if none.
row() {
    awk '$1 == "65536" && NF == 7 { print; exit }' "$log/out.0"
}

declare -A digest
for nodes in aaaa aabb abab; do
    fake_nodes_job "$nodes" 120 "$bench" allreduce --check-determinism -m 64k:64k -i 2 -x 1
    msg=""
    for r in 0 1 2 3; do
        rc=$(cat "$log/rc.$r" 2>/dev/null)
        [ "$rc" = 0 ] || msg+="rank $r exited '$rc': $(tail -n 3 "$log/out.$r")"$'\n'
    done
    line=$(row)
    # shellcheck disable=SC2086 # the row's fields
    set -- $line
    [ "${7:-}" = Pass ] || msg+="no passing 64 KiB row on $nodes: '$line'"$'\n'
    [ "${2:-0}" -ge 15 ] || msg+="only '${2:-}' settings ran on $nodes: '$line'"$'\n'
    digest[$nodes]=${6:-none}
    if [ "$nodes" = aaaa ]; then
        [ "${5:-0}" -gt 0 ] || msg+="without the mode no setting differed on one node: '$line'"$'\n'
    fi
    result "every_setting_gives_the_same_bits_in_the_mode_on_$nodes" "$msg"
done
msg=""
[ "${digest[aaaa]}" = "${digest[aabb]}" ] && [ "${digest[aaaa]}" = "${digest[abab]}" ] ||
    msg="digests differ: one node ${digest[aaaa]}, blocks ${digest[aabb]}, round-robin ${digest[abab]}"
result one_node_and_two_made_up_nodes_in_blocks_or_round_robin_give_the_same_bits "$msg"

# 3 ranks a node: the node's step of the chain folds three inputs, where
# an order of its own would show (with two, either order gives one sum).
fake_nodes_job aaabbb 120 "$bench" allreduce --check-determinism -m 64k:64k -i 2 -x 1
line=$(row)
# shellcheck disable=SC2086 # the row's fields
set -- $line
msg=""
[ "${7:-}" = Pass ] || msg="no passing 64 KiB row on aaabbb: '$line' $(grep -m 2 ERROR "$log/out.0")"
result every_setting_gives_the_same_bits_in_the_mode_on_3x2_made_up_nodes_in_blocks "$msg"

# rank_zero_forces NODES COLL ALGO: a job of 64 KiB calls in the mode, rank 0
# alone with ZSH_<COLL>_ALGO=ALGO (zsh_bench makes all-reduces of its own,
# so COLL is reduce_scatter).
rank_zero_forces() {
    local var
    var="ZSH_$(echo "$2" | tr '[:lower:]' '[:upper:]')_ALGO"
    # shellcheck disable=SC2016 # expanded by the rank's shell
    fake_nodes_job "$1" 120 env ZSH_TIMEOUT=20 ZSH_DETERMINISTIC=1 sh -c \
        '[ "$RANK" = 0 ] && export "$1"; exec "$0" "$2" -m 64k:64k -i 2 -x 0' \
        "$bench" "$var=$3" "$2"
}

rank_zero_forces aabb reduce_scatter ordered
msg=""
for r in 0 1 2 3; do
    grep -q "as \(chain\|ordered\) but rank [0-9] as \(chain\|ordered\)" "$log/out.$r" ||
        msg+="rank $r does not name chain and ordered: $(grep -m 2 ERROR "$log/out.$r")"$'\n'
done
result in_blocks_the_mode_runs_the_chain_across_nodes "$msg"

rank_zero_forces abab reduce_scatter chain
msg=""
for r in 0 1 2 3; do
    rc=$(cat "$log/rc.$r" 2>/dev/null)
    [ "$rc" = 0 ] || msg+="rank $r exited '$rc': $(grep -m 2 ERROR "$log/out.$r")"$'\n'
done
result round_robin_the_chain_gives_way_to_ordered "$msg"
results_end
