#!/bin/bash
# zsh_train as real processes under mpirun: for every stage at 1 and 4
# ranks, the loss trajectory must equal the 1-rank stage 0 one (float
# tolerance) and fall; at 4 ranks the model-state bytes per rank follow the
# ZeRO formulas (stage 3 at most 0.3x stage 0) and the traffic per step is
# 2Ψ elements at stages 0-2 and between 2Ψ and 3Ψ at stage 3.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_train"
SUITE=zsh_train
. "$(dirname "$0")/../../harness/mpirun_script.sh"
steps=12
# Two kinds of unusable data, the lone process, each stage at 1 and 4
# ranks, five checks at 4 ranks, and six of the sized model, the options
# and the step's split.
expected=$((2 + 1 + 2 * 4 + 5 + 6))

value() { # FILE PREFIX: the number after "PREFIX: "
    sed -n "s/^$2: \([0-9][0-9]*\).*/\1/p" "$1"
}

losses() { # FILE: the loss column
    awk '$1 == "step" { print $4 }' "$1"
}

# need_int WHAT VALUE: VALUE is a whole number; otherwise says WHAT is missing
# and fails. Shell arithmetic reads an empty value as 0, so a run that printed
# no counts would meet a formula of 0 bytes.
need_int() {
    [[ $2 =~ ^[0-9]+$ ]] || { echo "no $1 (got '$2')"; return 1; }
}

run() { # NP STAGE [ARGS...]: output in $out/np$NP.s$STAGE
    local np=$1 stage=$2
    shift 2
    timeout 300 "$MPIRUN" --oversubscribe -np "$np" "$prog" --stage "$stage" --steps $steps "$@" \
        >"$out/np$np.s$stage" 2>"$out/np$np.s$stage.err"
}

# refused DATA [NEEDLE]: zsh_train exits 1 (not by a signal, nor after
# blocking or growing without bound) with a message naming DATA and NEEDLE
# (by default the 10 bytes it needs); prints what is wrong.
refused() {
    local rc
    timeout 60 "$prog" --steps 1 --data "$1" >"$out/data.out" 2>"$out/data.err"
    rc=$?
    [ $rc = 1 ] || echo "$1: exit $rc, expected 1: $(tail -2 "$out/data.err")"
    grep -qF "$1" "$out/data.err" || echo "$1: the message does not name it: $(cat "$out/data.err")"
    grep -qF "${2:-needs at least 10 }" "$out/data.err" || echo "$1: $(cat "$out/data.err")"
}

# Not regular files: a device (/dev/zero grew memory until allocation
# failed), a FIFO (open() blocked), a directory.
special_files() {
    refused /dev/null "is a character device, not a regular file"
    refused /dev/zero "is a character device, not a regular file"
    mkfifo "$out/fifo"
    refused "$out/fifo" "is a FIFO, not a regular file"
    refused "$out" "is a directory, not a regular file"
}

short_files() { # every length a context of 8 tokens cannot use: 0 to 9 bytes
    local n
    for n in 0 1 2 3 4 5 6 7 8 9; do
        head -c $n /dev/zero | tr '\0' a >"$out/short$n"
        refused "$out/short$n"
    done
}

check data_devices_fifos_and_directories_are_refused_by_name special_files
check data_files_of_0_to_9_bytes_are_refused_without_a_crash short_files

# A lone process (no launcher) is a job of one.
timeout 120 "$prog" --stage 0 --steps $steps >"$out/ref" 2>&1
ok=0
[ "$(losses "$out/ref" | wc -l)" = $steps ] && ok=1
result runs_as_a_lone_process_without_a_launcher $ok "$(tail -3 "$out/ref")"

for np in 1 4; do
    for stage in 0 1 2 3; do
        name="np${np}_stage${stage}_matches_the_lone_stage0_losses_and_falls"
        if ! run $np $stage; then
            result $name 0 "$(tail -n 5 "$out/np$np.s$stage" "$out/np$np.s$stage.err")"
            continue
        fi
        # A loss that is missing or not a number on either side differs: awk
        # would compare it as 0.
        verdict=$(paste <(losses "$out/ref") <(losses "$out/np$np.s$stage") | awk -F'\t' -v n=$steps '
            function num(x) { return x ~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
            { if (!num($1) || !num($2) || ($1 - $2) > 1e-4 * (1 + $1) || ($2 - $1) > 1e-4 * (1 + $1)) bad = NR; k++ }
            NR == 1 { first = $2 } { last = $2 }
            END { if (k != n) print "got " k + 0 " steps"; else if (bad) print "step " bad " differs";
                  else if (!(last < first - 0.3)) print "loss did not fall: " first " -> " last;
                  else print "ok" }')
        ok=0
        [ "$verdict" = ok ] && ok=1
        result $name $ok "$verdict"
    done
done

psi=$(sed -n 's/^parameters: \([0-9]*\) .*/\1/p' "$out/np4.s0")
nb=$(sed -n 's/^parameters: [0-9]* in \([0-9]*\) buckets.*/\1/p' "$out/np4.s0")
s0=$(value "$out/np4.s0" "model-state bytes per rank")
s3=$(value "$out/np4.s3" "model-state bytes per rank")
# Every byte count below is held to a formula in psi and nb.
sizes=1
need_int "parameter count in np4.s0" "$psi" && need_int "bucket count in np4.s0" "$nb" || sizes=0
ok=0
[ $sizes = 1 ] && need_int "stage 0 model-state bytes" "$s0" && need_int "stage 3 model-state bytes" "$s3" &&
    [ "$s0" = $((16 * psi)) ] && [ $((10 * s3)) -le $((3 * s0)) ] && ok=1
result np4_stage3_model_state_is_at_most_0.3x_stage0 $ok "stage 0 $s0, stage 3 $s3, 16*psi $((16 * psi))"

# Padding adds fewer than N elements per bucket.
pad=$((4 * 4 * nb))
ok=1
for stage in 1 2 3; do
    b=$(value "$out/np4.s$stage" "model-state bytes per rank")
    case $stage in
    1) want=$((8 * psi + 8 * psi / 4)) ;;
    2) want=$((4 * psi + 12 * psi / 4)) ;;
    3) want=$((16 * psi / 4)) ;;
    esac
    [ $sizes = 1 ] && need_int "stage $stage model-state bytes" "$b" || { ok=0; continue; }
    d=$((b - want))
    [ ${d#-} -le $((4 * pad)) ] || { ok=0; echo "stage $stage: $b bytes, formula $want"; }
done
result np4_model_state_bytes_follow_the_zero_formulas $ok

ok=1
for stage in 0 1 2 3; do
    c=$(value "$out/np4.s$stage" "comm bytes per rank per step")
    lo=$((8 * psi))
    hi=$((8 * psi + 2 * pad + 16))
    [ $stage = 3 ] && hi=$((12 * psi + 3 * pad + 16))
    [ $sizes = 1 ] && need_int "stage $stage comm bytes" "$c" && [ "$c" -ge $lo ] && [ "$c" -le $hi ] ||
        { ok=0; echo "stage $stage: $c bytes, expected [$lo, $hi]"; }
done
result np4_comm_per_step_is_2psi_at_stages_0_to_2_and_at_most_3psi_at_stage3 $ok

if run 4 3 --precision bf16; then
    b=$(value "$out/np4.s3" "model-state bytes per rank")
    last=$(losses "$out/np4.s3" | tail -1 | cut -d. -f1)
    ok=0
    [ $sizes = 1 ] && need_int "bf16 stage 3 model-state bytes" "$b" && need_int "bf16 final loss" "$last" &&
        d=$((b - 16 * psi / 4)) && [ ${d#-} -le $((4 * pad)) ] && [ "$last" -lt 4 ] && ok=1
    result np4_bf16_stage3_holds_2_plus_2_plus_12_psi_over_n $ok "$b bytes, formula $((16 * psi / 4))"
else
    result np4_bf16_stage3_holds_2_plus_2_plus_12_psi_over_n 0 "$(tail -5 "$out/np4.s3.err")"
fi

# Memory-centric tiling: with a live budget smaller than a layer, the layers'
# weights as 4 row blocks each keep the gathered bytes within it, and train
# exactly as untiled.
tiny="--bucket-size 16384 --max-live 40000"
if run 4 3 $tiny --tiles 4 && cp "$out/np4.s3" "$out/tiled" && run 4 3 $tiny; then
    tp=$(sed -n 's/.*gathered parameters peak \([0-9]*\) bytes.*/\1/p' "$out/tiled")
    wp=$(sed -n 's/.*gathered parameters peak \([0-9]*\) bytes.*/\1/p' "$out/np4.s3")
    ok=0
    need_int "tiled gathered peak" "$tp" && need_int "untiled gathered peak" "$wp" &&
        [ "$tp" -le 40000 ] && [ "$wp" -gt 40000 ] && [ "$(losses "$out/tiled" | wc -l)" = $steps ] &&
        [ "$(losses "$out/tiled")" = "$(losses "$out/np4.s3")" ] && ok=1
    result np4_stage3_tiled_layers_stay_within_the_live_budget_and_train_the_same $ok \
        "gathered peak tiled $tp, untiled $wp"
else
    result np4_stage3_tiled_layers_stay_within_the_live_budget_and_train_the_same 0 \
        "$(tail -5 "$out/np4.s3.err")"
fi

# --params N: the count is within 5% of N, at two sizes.
params_within_5_percent() {
    local n got
    for n in 1e5 3e6; do
        timeout 120 "$prog" --stage 0 --steps 1 --params $n >"$out/params.out" 2>&1 ||
            { echo "--params $n: $(tail -3 "$out/params.out")"; continue; }
        got=$(sed -n 's/^parameters: \([0-9]*\) .*/\1/p' "$out/params.out")
        need_int "parameter count of --params $n" "$got" || continue
        echo "--params $n: $got parameters ($(sed -n 's/^model: //p' "$out/params.out"))" >>"$out/sizes"
        awk -v n=$n -v g=$got 'BEGIN { d = (g - n) / n; if (d < -0.05 || d > 0.05) print "--params " n ": " g " parameters, off by more than 5%" }'
    done
}
check params_builds_a_model_within_5_percent_of_n params_within_5_percent
sed 's/^/    /' "$out/sizes" 2>/dev/null

# refused_option ARGS...: exit 2, and a message that names the option.
refused_option() {
    local rc
    timeout 20 "$prog" --steps 1 "$@" >"$out/opt.out" 2>"$out/opt.err"
    rc=$?
    [ $rc = 2 ] || echo "$*: exit $rc, expected 2: $(head -2 "$out/opt.err")"
    grep -q -- "${1#--}" "$out/opt.err" || echo "$*: the message does not name ${1}: $(head -2 "$out/opt.err")"
}

bad_options() {
    refused_option --params 2e6 --hidden 64
    refused_option --params 2e6 --layers 3
    refused_option --params 12x
    refused_option --params 10
    refused_option --offload-optimizer disk
    refused_option --offload-params ram
    refused_option --host-mem-limit 1q
    refused_option --nvme-dir ""
    refused_option --matmul gpu
    refused_option --ckpt-every 7 --snapshot-every 5 --ckpt-dir "$out/ck"
    refused_option --snapshot-every x
}
check bad_size_tier_and_matmul_values_are_refused_naming_the_option bad_options

# An nvme tier without a directory: the optimizer layer's message, exit 1.
nvme_without_dir() {
    local rc
    env -u ZSH_NVME_DIR timeout 20 "$prog" --steps 1 --stage 3 --offload-optimizer nvme \
        >"$out/nvme.out" 2>"$out/nvme.err"
    rc=$?
    [ $rc = 1 ] || echo "exit $rc, expected 1: $(tail -2 "$out/nvme.err")"
    grep -q "zsh_optim_create: .*nvme.*director" "$out/nvme.err" ||
        echo "no message from zsh_optim_create: $(cat "$out/nvme.err")"
}
check nvme_tier_without_a_directory_fails_with_the_layers_message nvme_without_dir

# The split line follows every step, and its parts sum to the step's time.
split_lines() {
    awk -v n=$steps '
        $1 == "step" { k++ }
        $1 == "split" { s++
            for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
            sum = v["compute_s"] + v["comm_s"] + v["io_wait_s"] + v["optimizer_s"]
            if (!(v["total_s"] > 0) || sum > v["total_s"] + 1e-5 || sum < v["total_s"] - 1e-5)
                print "split " s ": parts " sum " against total " v["total_s"]
            if (!(v["rss_max_kib"] > 0) || !(v["rss_sum_kib"] >= v["rss_max_kib"]) ||
                v["io_read_bytes"] == "" || v["io_write_bytes"] == "")
                print "split " s ": memory or I/O fields missing: " $0 }
        END { if (k != n || s != n) print k + 0 " steps, " s + 0 " split lines, expected " n }' "$1"
}
check every_step_prints_its_split_into_compute_comm_io_and_optimizer split_lines "$out/np4.s0"

# The BLAS path trains as the loops do (float tolerance): both are built in.
blas_vs_loops() {
    timeout 120 "$prog" --stage 0 --steps $steps --matmul loops >"$out/loops" 2>&1 ||
        { echo "loops run: $(tail -3 "$out/loops")"; return; }
    paste <(losses "$out/ref") <(losses "$out/loops") | awk -F'\t' -v n=$steps '
        { k++; if ($1 == "" || $2 == "" || ($1 - $2) > 1e-4 * (1 + $1) || ($2 - $1) > 1e-4 * (1 + $1)) print "step " NR ": " $1 " against " $2 }
        END { if (k != n) print k + 0 " steps" }'
    grep -q "^model: .*matmul loops" "$out/loops" || echo "the loops run does not say so"
}
check matmul_blas_trains_as_the_loops_within_float_tolerance blas_vs_loops

# --params with a small live budget tiles every weight; stage 3 over the
# tiles gives stage 0's losses on 2 ranks, bit for bit (two operands sum
# alike in any order), and keeps the gathered bytes within the budget.
small="--params 3e5 --max-live 64k"
if run 2 0 $small && run 2 3 $small; then
    tiles=$(sed -n 's/^model: .*, \([0-9]*\) weight tiles.*/\1/p' "$out/np2.s3")
    peak=$(sed -n 's/.*gathered parameters peak \([0-9]*\) bytes.*/\1/p' "$out/np2.s3")
    l0=$(grep -h -e '^step ' -e '^rank [0-9]*: last loss' "$out/np2.s0" | sed 's/, peak rss.*//' | sort)
    l3=$(grep -h -e '^step ' -e '^rank [0-9]*: last loss' "$out/np2.s3" | sed 's/, peak rss.*//' | sort)
    ok=0
    need_int "weight tiles" "$tiles" && need_int "gathered peak" "$peak" && [ "$tiles" -gt 3 ] &&
        [ "$peak" -le 65536 ] && [ "$(losses "$out/np2.s3" | wc -l)" = $steps ] && [ "$l0" = "$l3" ] &&
        ok=1
    result np2_params_stage3_tiled_matches_stage0_bit_for_bit_within_the_live_budget $ok \
        "$tiles tiles, gathered peak $peak; stage 0 / stage 3: $(diff <(echo "$l0") <(echo "$l3") | head -4)"
else
    result np2_params_stage3_tiled_matches_stage0_bit_for_bit_within_the_live_budget 0 \
        "$(tail -5 "$out/np2.s0.err" "$out/np2.s3.err")"
fi

summary
