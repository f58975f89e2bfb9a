#!/bin/bash
# zsh_train --deterministic (zsh_optim_config_t::deterministic) on 4 ranks
# launched torchrun-style: the losses of stage 3 with clipping at 0.5 (so
# the global norm counts) are the same bits, to the last, on one node with
# 32 KiB buckets as with 4 KiB and 12 KiB buckets, with the optimizer
# offloaded to the host in sub-groups of 4k and 16k, and on 2
# made-up nodes of 2 ranks (ZSH_NODE_NAME) in blocks with hpZ and
# round-robin without. Without the mode, some of those settings give other
# bits, so the comparison can fail. Ends with a GoogleTest-style summary.
set -u
top_builddir=${top_builddir:-.}
train=$(cd "$top_builddir" && pwd)/tools/zsh_train
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin train_deterministic 7
log=$(mktemp -d)
out=$(mktemp -d)
trap 'rm -rf "$log" "$out"' EXIT

# shellcheck source=../../harness/fake_nodes.sh
. "$(dirname "$0")/../../harness/fake_nodes.sh"

common=(--stage 3 --steps 6 --clip 0.5 --hidden 64)

# run NAME NODES ARGS...: zsh_train on one rank per letter of NODES; rank
# 0's step lines into $out/NAME, an empty file when a rank failed.
run() {
    local name=$1 nodes=$2 r
    shift 2
    fake_nodes_job "$nodes" 120 "$train" "${common[@]}" "$@"
    : >"$out/$name"
    for ((r = 0; r < ${#nodes}; r++)); do
        [ "$(cat "$log/rc.$r" 2>/dev/null)" = 0 ] || {
            echo "rank $r of $name: $(tail -n 2 "$log/out.$r")" >"$out/$name.why"
            return
        }
    done
    grep '^step ' "$log/out.0" >"$out/$name"
}

# same NAME: NAME's losses are the reference's, every bit of each of 6 steps.
same() {
    local n
    n=$(grep -c ' bits 0x' "$out/ref")
    if [ -s "$out/$1.why" ]; then
        cat "$out/$1.why"
    elif [ "$n" != 6 ]; then
        echo "the reference printed $n losses with their bits, expected 6"
    elif ! cmp -s "$out/ref" "$out/$1"; then
        diff "$out/ref" "$out/$1" | head -n 6
    fi
}

run ref aaaa --deterministic
run b4k aaaa --deterministic --bucket-size 4096
run b12k aaaa --deterministic --bucket-size 12288
ZSH_SUB_GROUP_SIZE=4k run sub4k aaaa --deterministic --offload-optimizer cpu
ZSH_SUB_GROUP_SIZE=16k run sub16k aaaa --deterministic --offload-optimizer cpu --bucket-size 8192
run hpz aabb --deterministic --hpz auto
run rr abab --deterministic --bucket-size 4096
result one_node_4k_buckets_train_bit_for_bit_as_32k "$(same b4k)"
result one_node_12k_buckets_train_bit_for_bit_as_32k "$(same b12k)"
result offloaded_in_sub_groups_of_4k_train_bit_for_bit_as_in_memory "$(same sub4k)"
result offloaded_in_sub_groups_of_16k_with_8k_buckets_train_bit_for_bit "$(same sub16k)"
result two_nodes_in_blocks_with_hpz_train_bit_for_bit_as_one_node "$(same hpz)"
result two_nodes_round_robin_with_4k_buckets_train_bit_for_bit_as_one_node "$(same rr)"

# Without the mode (--loss-bits prints the same bits), every step's loss: the
# last one printed to 9 digits coincided once the two layouts' sums differed
# in their last bits only.
run plain_ref aaaa --loss-bits
run plain_rr abab --loss-bits --bucket-size 4096
msg=""
for name in plain_ref plain_rr; do
    [ -s "$out/$name.why" ] && msg="$msg$(cat "$out/$name.why") "
    [ "$(grep -c ' bits 0x' "$out/$name")" = 6 ] || msg="${msg}$name printed no 6 losses with their bits "
done
[ -z "$msg" ] && cmp -s "$out/plain_ref" "$out/plain_rr" && msg="one node with 32k buckets and round-robin nodes with 4k gave the same bits without the mode: the comparison cannot fail here"
result without_the_mode_the_layouts_give_other_bits "$msg"
results_end
