#!/bin/bash
# hpZ (ZSH_HPZ / zsh_optim_config_t::hpz) at stage 3 on 4 ranks launched
# torchrun-style, placed by ZSH_NODE_NAME on 2 made-up nodes of 2 ranks,
# in blocks and round-robin: hpz_check trains fp32 and bf16, AdamW and SGD,
# with and without hpZ, and needs identical losses and final parameters and
# the backward gathers on the node group. Then the settings hpZ cannot take
# are refused on every rank; qwZ and qgZ train in fp32 (zsh_train), bf16
# and fp16 (qgz_half_check). Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
check="$top_builddir/tests/zero/optim/hpz_check"
train="$top_builddir/tools/zsh_train"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin hpz 7
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# shellcheck source=../../harness/fake_nodes.sh
. "$(dirname "$0")/../../harness/fake_nodes.sh"

# job NODES CMD...: CMD on one rank per letter of NODES (fake_nodes_job).
job() {
    local nodes=$1
    shift
    fake_nodes_job "$nodes" 300 "$@"
}

# bit_identical NODES: hpz_check passed every setting on every rank.
bit_identical() {
    local r
    job "$1" "$check"
    for ((r = 0; r < ${#1}; r++)); do
        if [ "$(cat "$log/rc.$r")" != 0 ] || [ "$(grep -c '^ok ' "$log/out.$r")" != 8 ]; then
            echo "rank $r exited $(cat "$log/rc.$r"):"
            cat "$log/out.$r"
        fi
    done
}
result two_nodes_in_blocks_train_bit_for_bit_as_without_hpz "$(bit_identical aabb)"
result two_nodes_round_robin_train_bit_for_bit_as_without_hpz "$(bit_identical abab)"

# refused NODES MESSAGE ARGS...: zsh_train fails on every rank with MESSAGE.
# Every rank must stop, and name the reason unless a rank that had named it
# aborted the job first: zsh_train aborts the communicator when it fails, and
# an agreement's last message may still be on its way to a slower rank then.
refused() {
    local nodes=$1 msg=$2 r named=0
    shift 2
    job "$nodes" "$train" --steps 1 --hidden 16 --layers 1 "$@"
    for ((r = 0; r < ${#nodes}; r++)); do
        grep -qF "$msg" "$log/out.$r" && named=$((named + 1))
        [ "$(cat "$log/rc.$r")" != 0 ] &&
            grep -qE "$(printf '%s' "$msg" | sed 's/[][\.*^$|()+?{}]/\\&/g')|called zsh_comm_abort\(\)" "$log/out.$r" ||
            echo "rank $r exited $(cat "$log/rc.$r"), expected '$msg': $(cat "$log/out.$r")"
    done
    [ "$named" -gt 0 ] || echo "no rank named '$msg'"
}
result uneven_nodes_are_refused_on_every_rank "$(
    refused aab "hpz needs the same number of ranks on every node, and the 2 nodes hold 1 to 2" \
        --stage 3 --hpz auto)"
result a_group_that_does_not_divide_the_node_is_refused "$(
    refused aaabbb "hpz=2 does not divide the 3 ranks on this rank's node" --stage 3 --hpz 2)"
result below_stage_3_hpz_is_refused "$(refused aabb "hpz=2 needs stage 3" --stage 2 --hpz 2)"

# qwZ, then qwZ and qgZ, on auto across the made-up nodes: fewer bytes
# across nodes each time (hpZ + qwZ + qgZ at most 0.3x of hpZ alone, as
# counted), the summary says what is on, the loss within 1% of the run
# without them.
qwz_qgz_auto() {
    local mode qw qg
    local -A loss=() bytes=()
    for mode in off:off auto:off auto:auto; do
        qw=${mode%:*} qg=${mode#*:}
        job abab env ZSH_QUANTIZE_WEIGHTS=$qw ZSH_QUANTIZE_GRADS=$qg "$train" --stage 3 \
            --steps 20 --hidden 128 --layers 2 --max-live 1 --bucket-size 16k --hpz auto
        if [ "$(cat "$log/rc.0")" != 0 ] || [ "$(cat "$log/rc.1")" != 0 ]; then
            echo "$mode: $(tail -3 "$log/out.0")"
            return
        fi
        loss[$mode]=$(sed -n 's/^rank 0: last loss \([0-9.]*\).*/\1/p' "$log/out.0")
        bytes[$mode]=$(sed -n 's/.*cross-node comm bytes per rank per step: \([0-9]*\).*/\1/p' "$log/out.0")
        grep -q "^quantized: weights (qwZ) ${qw/auto/on}, gradients (qgZ) ${qg/auto/on};" \
            "$log/out.0" || echo "$mode: the summary says $(grep '^quantized:' "$log/out.0")"
        awk -v a="${loss[$mode]:-0}" -v b="${loss[off:off]:-1}" \
            'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d <= 0.01) }' ||
            echo "$mode: last loss ${loss[$mode]:-none}, ${loss[off:off]:-none} without: beyond 1%"
    done
    [ "${bytes[auto:off]:-0}" -gt 0 ] && [ "${bytes[auto:off]}" -lt "${bytes[off:off]:-0}" ] ||
        echo "cross-node bytes per step: ${bytes[auto:off]:-none} with qwZ, ${bytes[off:off]:-none} without"
    [ "${bytes[auto:auto]:-0}" -gt 0 ] &&
        [ $((bytes[auto:auto] * 10)) -le $((bytes[off:off] * 3)) ] ||
        echo "cross-node bytes per step: ${bytes[auto:auto]:-none} with qwZ and qgZ, more than 0.3 x ${bytes[off:off]:-none}"
}
result qwz_and_qgz_auto_across_nodes_send_fewer_bytes_and_train_within_1_percent "$(qwz_qgz_auto)"

# qwZ and qgZ in bf16 and fp16 (qgz_half_check): within 1% of the run
# without them, fewer bytes across nodes, fp16's overflow still skipped.
half_precision() {
    local r
    job abab "$top_builddir/tests/zero/optim/qgz_half_check"
    for r in 0 1 2 3; do
        if [ "$(cat "$log/rc.$r")" != 0 ] || [ "$(grep -c '^ok ' "$log/out.$r")" != 5 ]; then
            echo "rank $r exited $(cat "$log/rc.$r"):"
            cat "$log/out.$r"
        fi
    done
}
result qwz_and_qgz_in_bf16_and_fp16_train_within_1_percent_and_skip_fp16_overflows "$(half_precision)"

results_end
