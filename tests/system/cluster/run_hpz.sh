#!/bin/bash
# hpZ across a simulated cluster (cluster.sh) of 2 nodes x 2 ranks: zsh_train
# at stage 3, its budget of gathered buckets too small to keep any bucket
# from forward to backward, run with --hpz off and --hpz auto; the bytes
# each node's link received per step, against the formula, and the losses,
# which must be the same.
#
# The formula: Ψ is the parameters' bytes (padded to equal shards). A step
# makes three collectives of Ψ over all 4 ranks (forward's all-gather,
# backward's all-gather, the reduce-scatter of the gradients); with hpZ the
# backward all-gather runs within each node instead, leaving two. Across
# these even nodes the collectives run hierarchically (the automatic
# choice), which brings into each node what the other node holds: 1/2 Ψ of
# each collective on 2 x 2. So each link receives
#     3 x 1/2 Ψ = 1.5 Ψ bytes per step without hpZ, 2 x 1/2 Ψ = Ψ with,
# that is 3 and 2 collectives' worth of Ψ: the measure below is the link's
# bytes per step over 1/2 Ψ. Per step means the difference between a run of
# 1 + K steps and a run of 1, over K, so start-up, the bootstrap and the
# final report cancel. Headers and the step's small all-reduces (loss,
# gradient norm) come on top: with hpZ at most 2.1, without at least 2.85.
# What comes on top is about the same each step whatever the model's size,
# so the model is large enough (Ψ of 1.5 MB) for it to stay under 2%.
#
# Then ZeRO++'s quantization on round-robin placement: hpZ with qwZ
# (forward's all-gather as int8 with an fp32 scale per 2048 elements) and
# qgZ (the gradients summed in fp32 in the node, their node sums crossing
# as int8) against hpZ alone, the same per-step measure on the links. What
# crosses per step falls from 1/2 Ψ (forward's gather) + 1/2 Ψ (the
# reduce-scatter) to about 1/8 Ψ + 1/8 Ψ, so 0.25x plus the same small
# all-reduces; at most 0.3x is asked, and the last loss within 1%.
# Root only: elsewhere every case is skipped with the reason.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
train=$(cd "$top_builddir" && pwd)/tools/zsh_train
. "$here/cluster.sh"
# shellcheck source=cases.sh
. "$here/cases.sh"
cases_begin cluster_hpz
launch_timeout=300
launch_vars=()
tag=
hpz_per_step=0
K=4
np=4
names=(block_2x2_moves_2_psi_across_nodes_per_step_with_hpz_and_3_without
       round_robin_2x2_moves_2_psi_across_nodes_per_step_with_hpz_and_3_without
       round_robin_2x2_moves_at_most_0_3x_the_bytes_across_nodes_per_step_with_qwz_and_qgz)
results_expected=${#names[@]}

if why=$(cluster_unsupported); then
    for name in "${names[@]}"; do
        result_skip "$name" "$why"
    done
    results_end
    exit 77
fi

# train_rx STEPS HPZ NODES...: zsh_train on the nodes, with the variables
# in launch_vars; sets rx to the most bytes a node's link received, and
# keeps rank 0's output as $log/train.STEPS.HPZ$tag.
train_rx() {
    local steps=$1 hpz=$2 n before most=0 r
    shift 2
    for n in 0 1; do before[n]=$(cluster_bytes "$n"); done
    rm -f "$log"/out.* "$log"/rc.*
    run=("$train" --stage 3 --steps "$steps" --hidden 512 --layers 2 --max-live 1
         --bucket-size 64k --hpz "$hpz")
    launch_env "$@"
    for n in 0 1; do
        # shellcheck disable=SC2046,SC2086 # four counts, split on purpose
        set -- ${before[n]} $(cluster_bytes "$n")
        [ $(($3 - $1)) -gt $most ] && most=$(($3 - $1))
    done
    rx=$most
    cp "$log/out.0" "$log/train.$steps.$hpz$tag"
    for r in 0 1 2 3; do
        [ "$(cat "$log/rc.$r" 2>/dev/null)" = 0 ] ||
            errs+=("--steps $steps --hpz $hpz: rank $r exited $(cat "$log/rc.$r" 2>/dev/null): $(tail -3 "$log/out.$r")")
    done
}

# hpz_case NAME NODES...: both settings, per-step bytes against the formula.
hpz_case() {
    local name=$1 hpz rx0 psi i line
    local -a per=() units=() errs=()
    shift
    for hpz in off auto; do
        train_rx 1 "$hpz" "$@"
        rx0=$rx
        train_rx $((K + 1)) "$hpz" "$@"
        per[${#per[@]}]=$(((rx - rx0) / K))
    done
    psi=$(awk '/^parameters:/ { print $2 * 4 }' "$log/train.$((K + 1)).off")
    for i in 0 1; do
        hpz=$([ $i = 0 ] && echo off || echo auto)
        # in hundredths of 1/2 Psi
        units[i]=$((per[i] * 2 * 100 / ${psi:-1}))
        line=$(grep "cross-node" "$log/train.$((K + 1)).$hpz")
        echo "  $name --hpz $hpz: Psi $psi bytes; a link received ${per[i]} bytes per step, $((units[i] / 100)).$(printf '%02d' $((units[i] % 100))) x 1/2 Psi (formula $([ $i = 0 ] && echo 3 || echo 2)); zsh_train: $line"
    done
    [ -n "$psi" ] || errs+=("no parameter count in zsh_train's output")
    [ "${units[1]}" -le 210 ] || errs+=("with hpZ ${units[1]} hundredths of 1/2 Psi per step, more than 2.10")
    [ "${units[0]}" -ge 285 ] || errs+=("without hpZ ${units[0]} hundredths of 1/2 Psi per step, fewer than 2.85")
    if ! diff <(grep -E '^step |last loss' "$log/train.$((K + 1)).off" | sed 's/, peak rss.*//') \
        <(grep -E '^step |last loss' "$log/train.$((K + 1)).auto" | sed 's/, peak rss.*//') >"$log/diff"; then
        errs+=("losses differ with hpZ: $(cat "$log/diff")")
    fi
    grep -q "hpz: groups of 2" "$log/train.$((K + 1)).auto" ||
        errs+=("zsh_train did not report hpZ in groups of 2: $(grep cross-node "$log/train.$((K + 1)).auto")")
    hpz_per_step=${per[1]}
    result "$name" "${errs[@]}"
}

# quant_case NAME NODES...: hpZ with qwZ and qgZ against hpZ alone (the
# last hpz_case's $hpz_per_step on the same nodes), bytes per step and the
# last loss.
quant_case() {
    local name=$1 rx0 per ratio base last
    local -a errs=()
    shift
    launch_vars=(ZSH_QUANTIZE_WEIGHTS=on ZSH_QUANTIZE_GRADS=on)
    tag=.quant
    train_rx 1 auto "$@"
    rx0=$rx
    train_rx $((K + 1)) auto "$@"
    launch_vars=()
    tag=
    per=$(((rx - rx0) / K))
    # in hundredths of hpZ alone's bytes
    ratio=$((per * 100 / (hpz_per_step > 0 ? hpz_per_step : 1)))
    base=$(awk '/^rank 0: last loss/ { print $5 }' "$log/train.$((K + 1)).auto" | tr -d ,)
    last=$(awk '/^rank 0: last loss/ { print $5 }' "$log/train.$((K + 1)).auto.quant" | tr -d ,)
    echo "  $name: a link received $per bytes per step with hpZ + qwZ + qgZ, $hpz_per_step with hpZ alone: 0.$(printf '%02d' "$ratio")x; last loss $last against $base; zsh_train: $(grep '^quantized:' "$log/train.$((K + 1)).auto.quant")"
    [ "$ratio" -le 30 ] || errs+=("hpZ + qwZ + qgZ moved $per bytes per step, $ratio hundredths of hpZ alone's $hpz_per_step (at most 30)")
    grep -q "^quantized: weights (qwZ) on, gradients (qgZ) on" "$log/train.$((K + 1)).auto.quant" ||
        errs+=("zsh_train did not report qwZ and qgZ on: $(grep '^quantized:' "$log/train.$((K + 1)).auto.quant")")
    awk -v a="${last:-nan}" -v b="${base:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.01 * b) }' ||
        errs+=("last loss $last with quantization, $base without: more than 1% apart")
    result "$name" "${errs[@]}"
}

if ! cluster_create 2 >"$log/create.out" 2>&1; then
    for name in "${names[@]}"; do
        result_as FAILED "$name" "cluster_create 2: $(cat "$log/create.out")"
    done
    results_end
    exit 1
fi
hpz_case "${names[0]}" 0 0 1 1
hpz_case "${names[1]}" 0 1 0 1
quant_case "${names[2]}" 0 1 0 1
cluster_destroy
results_end
