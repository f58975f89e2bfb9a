#!/bin/bash
# ZeRO++'s step time on a simulated cluster (tests/system/cluster/cluster.sh):
# zsh_train at stage 3 with hpZ alone and with hpZ + qwZ + qgZ on the same
# model, run in turn (alternating rounds, the same cluster), 2 nodes x 2
# ranks placed round robin, links limited by tc tbf. For each setting: the
# median step time, its compute-only part, its blocked communication and the
# optimizer step's time (which waits for the gradients' reductions)
# (zsh_train's "split" lines of rank 0, the first --skip steps left out), the bytes the busiest node's
# link took in per step (a run of one step subtracted, so start-up cancels)
# and the bound those bytes set at the link's rate; then the step times'
# ratio. Root only; everything it creates is removed on exit.
#
#   perf/zeropp_cluster.sh [BUILD_DIR] [--rate RATE] [-R ROUNDS] [--steps K]
#                          [--skip S] [-s SETTINGS] [--] [zsh_train options...]
#
# --rate none leaves the links unlimited: the step's time then is what the
# CPU allows, the floor under the link's bound. SETTINGS: a list of hpz (hpZ alone), quant (hpZ + qwZ + qgZ), qwz and qgz
# (hpZ with one of them); the ratio printed is the first's step time over
# the second's. Defaults: -s hpz,quant, --rate 1gbit, 3 rounds of 8 steps,
# the first 2 left out, and zsh_train --hidden 2048 --layers 4 --batch 4
# --bucket-size 16m --max-live 20m (13M parameters, one sequence a rank: the
# link's time is most of hpZ's step, as in ZeRO++'s setting; a live budget
# of one bucket, whose buffer the next gather reuses; see
# docs/DECISIONS.md, "Speed on an idle host"); options after them are
# zsh_train's (they replace those defaults), e.g.
#   perf/zeropp_cluster.sh -- --hidden 512 --layers 2 --bucket-size 1m --max-live 1
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
build=$(cd "$build" && pwd)
rate=1gbit rounds=3 steps=8 skip=2 only=hpz,quant
model=(--hidden 2048 --layers 4 --batch 4 --bucket-size 16m --max-live 20m)
while [ $# -gt 0 ]; do
    case $1 in
    --rate) rate=$2; shift 2 ;;
    -R) rounds=$2; shift 2 ;;
    -s) only=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --) shift; model=("$@"); break ;;
    *) echo "zeropp_cluster.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
if [ "$steps" -le "$skip" ]; then
    echo "zeropp_cluster.sh: --steps $steps leaves no step after --skip $skip" >&2
    exit 2
fi
# shellcheck source=../tests/system/cluster/cluster.sh
. "$here/../tests/system/cluster/cluster.sh"
if why=$(cluster_unsupported); then
    echo "zeropp_cluster.sh: $why" >&2
    exit 1
fi
train=$build/tools/zsh_train
tmp=$(mktemp -d)
# cluster.sh reads it: the traps below remove the cluster.
# shellcheck disable=SC2034
CLUSTER_TRAPS=0
trap 'cluster_destroy; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_create 2 "${rate#none}" >"$tmp/create.out" 2>&1 || { cat "$tmp/create.out" >&2; exit 1; }

declare -A vars=([hpz]="ZSH_QUANTIZE_WEIGHTS=off ZSH_QUANTIZE_GRADS=off"
                 [quant]="ZSH_QUANTIZE_WEIGHTS=on ZSH_QUANTIZE_GRADS=on"
                 [qwz]="ZSH_QUANTIZE_WEIGHTS=on ZSH_QUANTIZE_GRADS=off"
                 [qgz]="ZSH_QUANTIZE_WEIGHTS=off ZSH_QUANTIZE_GRADS=on")
IFS=, read -r -a settings <<<"$only"
for s in "${settings[@]}"; do
    [ -n "${vars[$s]:-}" ] || { echo "zeropp_cluster.sh: -s takes hpz, quant, qwz, qgz, not '$s'" >&2; exit 2; }
done

# run SETTING STEPS: zsh_train on ranks 0 1 2 3 of nodes 0 1 0 1 (round
# robin), torchrun-style; rank 0's output in $tmp/out, and $rx the most
# bytes a node's link took in during the run.
run() {
    local setting=$1 k=$2 r n port=$((20000 + RANDOM % 20000)) pids=() before=() most=0 rc=0
    for n in 0 1; do before[n]=$(cluster_bytes "$n"); done
    for r in 0 1 2 3; do
        n=$((r % 2))
        # shellcheck disable=SC2086 # the setting's variables, split on purpose
        cluster_exec "$n" env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r / 2)) LOCAL_WORLD_SIZE=2 \
            GROUP_RANK=$n MASTER_ADDR="${CLUSTER_ADDRS[0]}" MASTER_PORT=$port ZSH_TIMEOUT=120 \
            ${vars[$setting]} timeout 600 "$train" --stage 3 --hpz auto --steps "$k" \
            "${model[@]}" >"$tmp/out.$r" 2>&1 &
        pids+=($!)
    done
    for r in "${!pids[@]}"; do wait "${pids[r]}" || rc=1; done
    if [ $rc != 0 ]; then
        echo "zeropp_cluster.sh: $setting --steps $k failed:" >&2
        tail -3 "$tmp"/out.* >&2
        exit 1
    fi
    for n in 0 1; do
        # shellcheck disable=SC2046,SC2086 # two pairs of counts, split on purpose
        set -- ${before[n]} $(cluster_bytes "$n")
        [ $(($3 - $1)) -gt $most ] && most=$(($3 - $1))
    done
    rx=$most
    cp "$tmp/out.0" "$tmp/out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.6f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A setup
for s in "${settings[@]}"; do
    run "$s" 1
    setup[$s]=$rx
    : >"$tmp/times.$s"
    : >"$tmp/bytes.$s"
done
echo "zsh_train --stage 3 --hpz auto ${model[*]}; $rate links; load $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E '^parameters:' "$tmp/out"
for ((i = 1; i <= rounds; i++)); do
    for s in "${settings[@]}"; do
        run "$s" "$steps"
        echo $(((rx - setup[$s]) / (steps - 1))) >>"$tmp/bytes.$s"
        # split K: total_s T compute_s C comm_s M io_wait_s W optimizer_s O ...
        awk -v skip="$skip" '/^split [0-9]+:/ { k = $2 + 0; if (k > skip) print $4, $6, $8, $12 }' \
            "$tmp/out" >>"$tmp/times.$s"
        grep -q '^quantized: ' "$tmp/out" && grep '^quantized: ' "$tmp/out" >"$tmp/quant.$s"
    done
done
bits=$(tc -s qdisc show dev "${CLUSTER_LINKS[0]}" 2>/dev/null | awk '/tbf/ { for (i = 1; i < NF; i++) if ($i == "rate") print $(i + 1) }' | head -1)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); tbf rate ${bits:-$rate}"
printf '%-6s %10s %10s %10s %10s %14s %10s\n' setting step_ms compute_ms comm_ms optim_ms \
    link_B/step bound_ms
# The link's rate in bits per second, from RATE (k, m, g suffixes of tc).
bps=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); m = 1
    if (u ~ /gbit/) m = 1e9; else if (u ~ /mbit/) m = 1e6; else if (u ~ /kbit/) m = 1e3
    print n * m }')
for s in "${settings[@]}"; do
    t=$(awk '{ print $1 }' "$tmp/times.$s" | median)
    c=$(awk '{ print $2 }' "$tmp/times.$s" | median)
    m=$(awk '{ print $3 }' "$tmp/times.$s" | median)
    o=$(awk '{ print $4 }' "$tmp/times.$s" | median)
    b=$(median <"$tmp/bytes.$s")
    awk -v s="$s" -v t="$t" -v c="$c" -v m="$m" -v o="$o" -v b="$b" -v bps="$bps" 'BEGIN {
        printf "%-6s %10.2f %10.2f %10.2f %10.2f %14.0f %10s\n", s, t * 1e3, c * 1e3, m * 1e3,
               o * 1e3, b,
               (bps > 0) ? sprintf("%.2f", b * 8 * 1e3 / bps) : "-" }'
    echo "$t" >"$tmp/med.$s"
done
if [ ${#settings[@]} -ge 2 ]; then
    a=${settings[0]} b=${settings[1]}
    awk -v a="$a" -v b="$b" -v ta="$(cat "$tmp/med.$a")" -v tb="$(cat "$tmp/med.$b")" \
        -v n=$((rounds * (steps - skip))) \
        'BEGIN { printf "%s / %s step time: %.2fx (%d steps each)\n", a, b, ta / tb, n }'
fi
cat "$tmp/quant.quant" 2>/dev/null
