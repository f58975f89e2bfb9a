#!/bin/bash
# zsh_info -t prints the rank map: of this process alone, and of a job of
# ranks launched torchrun-style whose ZSH_NODE_NAME places them on made-up
# nodes (block, round-robin, uneven); rank 0 alone prints it, and
# ZSH_LOG_LEVEL=info prints it on one line at init. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
info="$top_builddir/tools/zsh_info"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin info_map 5
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# shellcheck source=../../harness/fake_nodes.sh
. "$(dirname "$0")/../../harness/fake_nodes.sh"

# job NODES [VARS]: zsh_info -t on one rank per letter of NODES, with VARS
# set (fake_nodes_job has the rest).
job() {
    # shellcheck disable=SC2086 # VARS is a list of assignments
    fake_nodes_job "$1" 60 env ${2:-} "$info" -t
}

# expect_map NODES LINE: every rank succeeded; rank 0 printed LINE in its
# map, no other rank printed the section (every rank holds the same map).
expect_map() {
    local r
    job "$1"
    for ((r = 0; r < ${#1}; r++)); do
        [ "$(cat "$log/rc.$r")" = 0 ] || echo "rank $r exited $(cat "$log/rc.$r"): $(cat "$log/out.$r")"
        [ "$r" = 0 ] || ! grep -Eq "Rank map|Topology" "$log/out.$r" || echo "rank $r printed the section"
    done
    grep -qF "# Rank map (the job, as every rank holds it): $2" "$log/out.0" ||
        echo "rank 0, expected '$2': $(cat "$log/out.0")"
}

alone() {
    local out
    out=$(env -u RANK -u ZSH_RANK -u PMIX_NAMESPACE ZSH_NODE_NAME=solo "$info" -t 2>&1) ||
        echo "exited $?: $out"
    echo "$out" | grep -q "^# Rank map (this process alone.*): 1 rank on 1 node, 1 per node, one node; solo=0" ||
        echo "no map of one: $out"
    echo "$out" | grep -q "^#   node 0: solo (boot id " || echo "no node line: $out"
}
result a_process_alone_prints_a_map_of_one_rank "$(alone)"

result two_nodes_in_blocks "$(expect_map aabb '4 ranks on 2 nodes, 2 per node, block; na=0-1 nb=2-3')"
result two_nodes_round_robin_with_each_rank_placed "$(
    expect_map abab '4 ranks on 2 nodes, 2 per node, round-robin; na=0,2 nb=1,3'
    grep -Eq '^#      3     1      1 ' "$log/out.0" || echo "no line for rank 3: $(cat "$log/out.0")"
)"
result three_uneven_nodes "$(expect_map aabbc '5 ranks on 3 nodes, 2+2+1 per node, block; na=0-1 nb=2-3 nc=4')"

info_line() {
    job ab ZSH_LOG_LEVEL=info
    grep -q "INFO rank map: 2 ranks on 2 nodes, 1 per node, block; na=0 nb=1" "$log/out.0" ||
        echo "rank 0: $(cat "$log/out.0")"
    ! grep -q "INFO rank map" "$log/out.1" || echo "rank 1 logged the map too"
}
result log_level_info_prints_the_map_at_init "$(info_line)"

results_end
