#!/bin/bash
# The automatic choice across nodes, without root: 4, 5 or 9 ranks of one machine
# placed by ZSH_NODE_NAME on made-up nodes (tests/harness/fake_nodes.sh),
# so that the rank map, the transports and the selection rule treat them
# as nodes. coll_check runs every collective, dtype and op and the barrier
# on 2 x 2 in blocks and round-robin (hierarchical by default past
# ZSH_SMALL_MSG_SIZE), on 1 + 3 and 3 + 2 (uneven: hierarchical broadcasts,
# from the root's rail or through the node leaders, and node-ordered rings;
# 1 + 3 puts the smaller node first, so the rails of the larger node's extra
# ranks miss node 0),
# on 3 + 1 with the hierarchical algorithms forced (the broadcast and the
# barrier run them, the others give way), and on 2 x 2 with the flat
# algorithms forced and with the hierarchical ones forced at every size, the
# barrier's included. Then one rank runs the barrier flat while the others
# run it hierarchically, on 3 + 1 one rank runs its broadcasts binomial
# while the others choose, and on 5 + 4 one rank runs its barrier by
# dissemination while the others choose: every rank must fail with the mismatch naming
# hier (so the choice was hier), and none crash (a hierarchical call
# failing mid-step cancels its step, which the progress loop must not then
# advance). Ends with a GoogleTest-style summary that tests/run_all.sh
# counts.
set -u
top_builddir=${top_builddir:-.}
check=$(cd "$top_builddir" && pwd)/tests/system/cluster/coll_check
# shellcheck source=../harness/results.sh
. "$(dirname "$0")/../harness/results.sh"
results_begin coll_hier 10
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# shellcheck source=../harness/fake_nodes.sh
. "$(dirname "$0")/../harness/fake_nodes.sh"

# every_rank_ok [N]: each of N ranks (4) exited 0 and said so.
every_rank_ok() {
    local r n=${1:-4}
    for ((r = 0; r < n; r++)); do
        if [ "$(cat "$log/rc.$r" 2>/dev/null)" != 0 ] || ! grep -q "^rank $r of $n .*: ok" "$log/out.$r"; then
            echo "rank $r exited $(cat "$log/rc.$r" 2>/dev/null): $(tail -n 3 "$log/out.$r")"
        fi
    done
}

fake_nodes_job aabb 300 "$check"
result every_collective_is_right_on_2x2_made_up_nodes_in_blocks "$(every_rank_ok)"
fake_nodes_job abab 300 "$check"
result every_collective_is_right_on_2x2_made_up_nodes_round_robin "$(every_rank_ok)"
fake_nodes_job abbb 300 "$check"
result every_collective_is_right_on_uneven_made_up_nodes "$(every_rank_ok)"
fake_nodes_job aabab 300 "$check"
result every_collective_is_right_on_3_plus_2_made_up_nodes "$(every_rank_ok 5)"
fake_nodes_job abab 300 env ZSH_ALLGATHER_ALGO=ring ZSH_REDUCE_SCATTER_ALGO=ring \
    ZSH_ALLREDUCE_ALGO=ring ZSH_BROADCAST_ALGO=binomial ZSH_BARRIER_ALGO=dissemination "$check"
result every_collective_is_right_on_2x2_made_up_nodes_with_the_flat_algorithms_forced \
    "$(every_rank_ok)"
hier=(ZSH_ALLGATHER_ALGO=hier ZSH_REDUCE_SCATTER_ALGO=hier ZSH_ALLREDUCE_ALGO=hier
    ZSH_BROADCAST_ALGO=hier ZSH_BARRIER_ALGO=hier)
fake_nodes_job abab 300 env "${hier[@]}" "$check"
result every_collective_is_right_on_2x2_made_up_nodes_with_the_hierarchical_algorithms_forced \
    "$(every_rank_ok)"
fake_nodes_job abaa 300 env "${hier[@]}" "$check"
result every_collective_is_right_on_uneven_made_up_nodes_with_the_hierarchical_algorithms_forced \
    "$(every_rank_ok)"

# mismatch_everywhere NAME WHAT ALGO_A ALGO_B: after a job in which rank 0
# ran a collective WHAT (its name in the mismatch message) as one algorithm
# and the others as another, every rank failed its checks (exit 1, no
# crash) naming the two.
mismatch_everywhere() {
    local name=$1 what=$2 a=$3 b=$4 r rc msg=""
    for r in $(seq 0 $(($(ls "$log"/rc.* | wc -l) - 1))); do
        rc=$(cat "$log/rc.$r" 2>/dev/null)
        [ "$rc" = 1 ] || msg+="rank $r exited '$rc', expected 1 (checks failed, no crash): $(tail -n 3 "$log/out.$r")"$'\n'
        grep -q "ran $what([^)]*) as \($a\|$b\) but rank [0-9] as \($a\|$b\)" "$log/out.$r" ||
            msg+="rank $r does not name the two: $(grep -m 2 ERROR "$log/out.$r")"$'\n'
    done
    result "$name" "$msg"
}

# Rank 0 alone runs the dissemination barrier, the others the hierarchical one.
# shellcheck disable=SC2016 # expanded by the rank's shell
fake_nodes_job abab 120 env ZSH_TIMEOUT=20 ZSH_BARRIER_ALGO=hier sh -c \
    '[ "$RANK" = 0 ] && export ZSH_BARRIER_ALGO=dissemination; exec "$0"' "$check"
mismatch_everywhere a_rank_running_another_barrier_fails_every_rank_with_the_mismatch_and_none_crashes \
    barrier hier dissemination

# On 3 + 1 rank 0 alone runs its broadcasts binomial: the others' choice for
# a 64 KiB broadcast (zsh_bench's, past ZSH_SMALL_MSG_SIZE) is hierarchical.
# shellcheck disable=SC2016 # expanded by the rank's shell
fake_nodes_job abaa 120 env ZSH_TIMEOUT=20 sh -c \
    '[ "$RANK" = 0 ] && export ZSH_BROADCAST_ALGO=binomial; exec "$0" broadcast -m 65536:65536 -i 2 -x 0' \
    "$(cd "$top_builddir" && pwd)/perf/zsh_bench"
mismatch_everywhere on_uneven_nodes_the_automatic_broadcast_past_the_small_sizes_is_hierarchical \
    broadcast hier binomial

# 9 ranks on 5 + 4 nodes, rank 0 alone running the dissemination barrier:
# past the eager barrier's 8 ranks the others' choice is hierarchical.
# shellcheck disable=SC2016 # expanded by the rank's shell
fake_nodes_job ababababa 120 env ZSH_TIMEOUT=20 sh -c \
    '[ "$RANK" = 0 ] && export ZSH_BARRIER_ALGO=dissemination; exec "$0" barrier -i 2 -x 0' \
    "$(cd "$top_builddir" && pwd)/perf/zsh_bench"
mismatch_everywhere past_8_ranks_across_nodes_the_automatic_barrier_is_hierarchical \
    barrier hier dissemination

results_end
