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
# Three kinds of unusable data, the lone process, each stage at 1 and 4
# ranks, and five checks at 4 ranks.
expected=$((3 + 1 + 2 * 4 + 5))

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

# refused DATA: zsh_train exits 1 (not by a signal) with a message naming
# DATA and the 10 bytes it needs; prints what is wrong.
refused() {
    local rc
    timeout 60 "$prog" --steps 1 --data "$1" >"$out/data.out" 2>"$out/data.err"
    rc=$?
    [ $rc = 1 ] || echo "$1: exit $rc, expected 1: $(tail -2 "$out/data.err")"
    grep -qF "$1" "$out/data.err" || echo "$1: the message does not name it: $(cat "$out/data.err")"
    case $1 in
    "$out") grep -q "Is a directory" "$out/data.err" || echo "$1: $(cat "$out/data.err")" ;;
    *) grep -q "needs at least 10 " "$out/data.err" || echo "$1: $(cat "$out/data.err")" ;;
    esac
}

short_files() { # every length a context of 8 tokens cannot use: 0 to 9 bytes
    local n
    for n in 0 1 2 3 4 5 6 7 8 9; do
        head -c $n /dev/zero | tr '\0' a >"$out/short$n"
        refused "$out/short$n"
    done
}

check data_dev_null_is_refused_naming_the_file_and_the_minimum refused /dev/null
check data_directory_is_refused_naming_it refused "$out"
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

summary
