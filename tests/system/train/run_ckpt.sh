#!/bin/bash
# zsh_train's checkpoints (--ckpt-dir, --ckpt-every, --resume) as a user
# runs them, at 1, 2 and 3 ranks started from torchrun-style variables (no
# launcher is needed):
#  - exact resume: 20 steps straight and 10 steps, then a new job resumed
#    to 20, print the same losses for steps 11-20, bit for bit, at every
#    stage, with the NVMe and the host tiers and in bf16;
#  - resharded resume: a checkpoint of 2 ranks at stage 2 resumed at 1 rank
#    at stage 3 and at 3 ranks at stage 1 continues the same trajectory
#    (the first loss within 1e-6 relative, later ones within 1e-4);
#  - --resume with no checkpoint fails on every rank, naming the directory;
#    --ckpt-every saves after its multiples only, and 0 never;
#  - crash: a 2-rank job saving after every step has one rank killed with
#    kill -9 at a random moment (on the NVMe tier every other trial); the
#    other rank fails within ZSH_TIMEOUT; `latest` then names a complete
#    checkpoint, the last one saved, and a job resumed from it trains to the
#    end on the losses of a run that never stopped.
# ZSH_CKPT_CRASH_TRIALS sets the number of crash trials (default 4, which
# keeps the script to about a minute on two cores; 20 gives the kill more
# moments to land in:
#   ZSH_CKPT_CRASH_TRIALS=20 make check TESTS=tests/system/train/run_ckpt.sh),
# ZSH_CKPT_CRASH_SEED the seed of their random choices (printed).
# Every wait is a bounded poll; everything created is removed at exit. Ends
# with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_train"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
# shellcheck source=../../harness/free_port.sh
. "$(dirname "$0")/../../harness/free_port.sh"
# shellcheck source=../../harness/poll.sh
. "$(dirname "$0")/../../harness/poll.sh"

trials=${ZSH_CKPT_CRASH_TRIALS:-4}
seed=${ZSH_CKPT_CRASH_SEED:-$$}
# Seconds a collective of a crashed job waits for its dead peer before it
# fails; the other jobs are not hurried.
crash_timeout=5
# A model whose save (about 10 MB at 2 ranks) takes some tens of ms, longer
# than its step: a kill at a random moment often lands inside a save.
crash_model=(--hidden 512 --layers 4)
crash_steps=60
# Where the exact-resume runs stop and where they end.
half=10
full=20
exact_names=(s0 s1 s2 s3 s3_nvme s2_cpu s3_bf16)
declare -A exact_args=(
    [s0]="--stage 0" [s1]="--stage 1" [s2]="--stage 2" [s3]="--stage 3"
    [s3_nvme]="--stage 3 --offload-optimizer nvme --offload-params nvme"
    [s2_cpu]="--stage 2 --offload-optimizer cpu"
    [s3_bf16]="--stage 3 --precision bf16")
results_begin zsh_train_ckpt $((${#exact_names[@]} + 2 + 3 + trials))
tmp=$(mktemp -d)

# Every rank process started has a pid file, and an rc file once it ended:
# those without an rc file are still running and are killed.
cleanup() {
    local f
    for f in "$tmp"/*.pid.*; do
        [ -e "$f" ] || continue
        [ -e "${f/.pid./.rc.}" ] || kill -9 "$(cat "$f")" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

nranks() { # TAG: the ranks job TAG was started with
    cat "$tmp/$1.n"
}

ended() { # TAG [RANK...]: every RANK (all by default) of job TAG has exited
    local tag=$1 r
    shift
    [ $# -gt 0 ] || set -- $(seq 0 $(($(nranks "$tag") - 1)))
    for r in "$@"; do
        [ -e "$tmp/$tag.rc.$r" ] || return 1
    done
}

any_ended() { # TAG: a rank of job TAG has exited
    local r
    for ((r = 0; r < $(nranks "$1"); r++)); do
        [ -e "$tmp/$1.rc.$r" ] && return 0
    done
    return 1
}

kill_job() { # TAG: kill -9 every rank of job TAG still running
    local r
    for ((r = 0; r < $(nranks "$1"); r++)); do
        [ -e "$tmp/$1.rc.$r" ] || kill -9 "$(cat "$tmp/$1.pid.$r")" 2>/dev/null
    done
}

# launch TAG ID NRANKS TIMEOUT ARGS...: start NRANKS ranks of zsh_train ARGS
# as a job of ZSH_JOB_ID ID whose collectives wait TIMEOUT s for a peer; rank
# r's pid, output, errors and exit status go to $tmp/TAG.{pid,out,err,rc}.r.
launch() {
    local tag=$1 id=$2 n=$3 zsh_timeout=$4 port r
    shift 4
    port=$(free_port)
    rm -f "$tmp/$tag".*
    echo "$n" >"$tmp/$tag.n"
    for ((r = 0; r < n; r++)); do
        (
            env -u ZSH_RANK -u ZSH_WORLD_SIZE -u ZSH_MASTER_PORT -u ZSH_NVME_DIR \
                RANK=$r WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
                ZSH_JOB_ID="$id" ZSH_TIMEOUT="$zsh_timeout" \
                "$prog" "$@" >"$tmp/$tag.out.$r" 2>"$tmp/$tag.err.$r" &
            echo $! >"$tmp/$tag.pidw.$r" && mv "$tmp/$tag.pidw.$r" "$tmp/$tag.pid.$r"
            wait $!
            echo $? >"$tmp/$tag.rcw.$r" && mv "$tmp/$tag.rcw.$r" "$tmp/$tag.rc.$r"
        ) 2>/dev/null & # the shell's word on a killed rank: the rc file has it
    done
    # The trap can kill only what has a pid file.
    for ((r = 0; r < n; r++)); do
        poll 10 test -s "$tmp/$tag.pid.$r" || { echo "rank $r of $tag did not start" >&2; exit 1; }
    done
}

port_taken() { # TAG: rank 0's store found its port in use
    grep -q "Address already in use" "$tmp/$1.err.0" 2>/dev/null
}

# run_job TAG NRANKS ARGS...: a whole job (of ZSH_JOB_ID $job_id if set),
# again on another port if rank 0's was taken; prints what went wrong (a rank
# that did not exit 0) and fails.
run_job() {
    local tag=$1 n=$2 id=${job_id:-$1-$$} _ r bad=0
    shift 2
    for _ in 1 2 3; do
        launch "$tag" "$id" "$n" 60 "$@"
        if ! poll 120 ended "$tag"; then
            echo "$tag did not end within 120 s"
            kill_job "$tag"
            poll 10 ended "$tag"
            return 1
        fi
        port_taken "$tag" || break
    done
    for ((r = 0; r < n; r++)); do
        [ "$(cat "$tmp/$tag.rc.$r")" = 0 ] && continue
        echo "$tag rank $r exited $(cat "$tmp/$tag.rc.$r"): $(tail -n 3 "$tmp/$tag.err.$r")"
        bad=1
    done
    return $bad
}

# launch_ended TAG LIMIT_S ARGS...: a job (ZSH_TIMEOUT 30) expected to fail
# on its own, again on another port if rank 0's was taken; fails, saying
# so, if it has not ended within LIMIT_S.
launch_ended() {
    local tag=$1 limit=$2 _
    shift 2
    for _ in 1 2 3; do
        launch "$tag" "$tag-$$" 2 30 "$@"
        if ! poll "$limit" ended "$tag"; then
            echo "the job did not end within $limit s"
            kill_job "$tag"
            poll 10 ended "$tag"
            return 1
        fi
        port_taken "$tag" || return 0
    done
}

step_dir() { # K: the name of the checkpoint of step K
    printf 'step-%08d' "$1"
}

losses() { # TAG FROM TO: rank 0's loss lines of steps FROM..TO
    awk -v a="$2" -v b="$3" '$1 == "step" && $3 == "loss" && $2 >= a && $2 <= b' \
        "$tmp/$1.out.0"
}

lasts() { # TAG: every rank's last loss, %.9g
    cat "$tmp/$1".out.* | sed -n 's/^\(rank [0-9]*: last loss [^,]*\),.*/\1/p' | sort
}

resumed_at() { # TAG: the step rank 0 says it resumed from
    sed -n 's/^resumed from .* at step \([0-9]*\) .*/\1/p' "$tmp/$1.out.0"
}

listing() { # DIR: its entries, sorted, dot files too
    (cd "$1" 2>/dev/null && find . -mindepth 1 -maxdepth 1 | sed 's,^\./,,' | sort | tr '\n' ' ')
}

same() { # WHAT A B: A and B equal, else their first lines that differ, side by side
    [ "$2" = "$3" ] || printf '%s differ:\n%s\n' "$1" \
        "$(paste -d '\t' <(echo "$2") <(echo "$3") | awk -F '\t' '$1 != $2' | head -n 6 | sed 's/\t/  |  /')"
}

# exact NAME: 20 steps straight, 10 steps saved, then 10 more resumed from
# the checkpoint by a new job; steps 11-20 print the same losses.
exact() {
    local name=$1 ck="$tmp/ckpt.$1" nvme="$tmp/nvme.$1" args
    read -ra args <<<"${exact_args[$1]}"
    mkdir "$nvme"
    args+=(--nvme-dir "$nvme")
    run_job "$name.straight" 2 "${args[@]}" --steps $full || return
    run_job "$name.first" 2 "${args[@]}" --steps $half --ckpt-dir "$ck" || return
    same "checkpoints of a run without --ckpt-every" "$(listing "$ck")" \
        "latest $(step_dir $half) "
    run_job "$name.resumed" 2 "${args[@]}" --steps $full --ckpt-dir "$ck" --resume || return
    [ "$(resumed_at "$name.resumed")" = $half ] ||
        echo "rank 0 does not say it resumed at step $half: $(head -n 2 "$tmp/$name.resumed.out.0")"
    same "the losses of steps $((half + 1))-$full, straight and resumed" \
        "$(losses "$name.straight" 1 $full | tail -n +$((half + 1)))" \
        "$(losses "$name.resumed" 1 $full)"
    same "the ranks' last losses, straight and resumed" "$(lasts "$name.straight")" \
        "$(lasts "$name.resumed")"
    [ "$(cat "$ck/latest" 2>/dev/null)" = "$(step_dir $full)" ] ||
        echo "after the resumed run, latest is '$(cat "$ck/latest" 2>/dev/null)'"
    [ -z "$(find "$nvme" -mindepth 1)" ] || echo "left in the NVMe directory: $(listing "$nvme")"
}

# reshard NRANKS STAGE: the 2-rank stage 2 checkpoint of step 10, named
# directly (not through latest), resumed at NRANKS ranks and STAGE, against
# the straight 2-rank run.
reshard() {
    local tag=reshard.$1.$2 first
    run_job "$tag" "$1" --stage "$2" --steps $full --ckpt-dir "$tmp/ckpt.s2/$(step_dir $half)" \
        --resume --ckpt-every 0 || return
    [ "$(resumed_at "$tag")" = $half ] ||
        echo "rank 0 does not say it resumed at step $half: $(head -n 2 "$tmp/$tag.out.0")"
    first=$((half + 1))
    paste <(losses s2.straight $first $full) <(losses "$tag" $first $full) | awk -v first=$first '
        function abs(x) { return x < 0 ? -x : x }
        { n++; tol = ($2 == first) ? 1e-6 : 1e-4
          if ($2 != $6 || abs($4 - $8) > tol * abs($4))
              printf "step %s: loss %s, resumed step %s: %s (tolerance %g relative)\n", $2, $4, $6, $8, tol }
        END { if (n != 10) print n + 0 " loss lines, expected 10" }'
    [ -z "$(find "$tmp/ckpt.s2/$(step_dir $half)" -mindepth 1 -type d)" ] ||
        echo "--ckpt-every 0 saved: $(listing "$tmp/ckpt.s2/$(step_dir $half)")"
}

# --resume where there is nothing: every rank exits 1, promptly, naming the
# directory; and one that holds the last step trains nothing, and says that
# it ignores an incomplete checkpoint a save left, which it does not remove.
missing() {
    local ck="$tmp/ckpt.empty" r t0
    t0=$(now_ms)
    launch_ended missing 20 --stage 2 --steps 5 --ckpt-dir "$ck" --resume || return
    echo "    --resume without a checkpoint: the job ended in $(($(now_ms) - t0)) ms" >&2
    for r in 0 1; do
        [ "$(cat "$tmp/missing.rc.$r")" = 1 ] ||
            echo "rank $r exited $(cat "$tmp/missing.rc.$r"), expected 1"
        grep -q "zsh_train: --resume: " "$tmp/missing.err.$r" ||
            echo "rank $r has no --resume error: $(tail -n 2 "$tmp/missing.err.$r")"
        grep -q "^step " "$tmp/missing.out.$r" && echo "rank $r trained: $(head -n 1 "$tmp/missing.out.$r")"
    done
    grep -q "zsh_train: --resume: .*$ck" "$tmp/missing.err.0" ||
        echo "rank 0 does not name $ck: $(grep zsh_train "$tmp/missing.err.0")"
    mkdir "$tmp/ckpt.s2/.tmp-step-00000099" && : >"$tmp/ckpt.s2/.tmp-step-00000099/manifest.json.tmp"
    run_job at_end 1 --stage 2 --steps $full --ckpt-dir "$tmp/ckpt.s2" --resume --ckpt-every 0
    grep -q "^nothing to train: the checkpoint holds step $full, --steps is $full" "$tmp/at_end.out.0" ||
        echo "a resume at the last step: $(head -n 2 "$tmp/at_end.out.0")"
    grep -q "WARN.*\.tmp-step-00000099: an incomplete checkpoint .*ignored" "$tmp/at_end.err.0" ||
        echo "no warning of the incomplete checkpoint: $(head -n 3 "$tmp/at_end.err.0")"
    [ -e "$tmp/ckpt.s2/.tmp-step-00000099/manifest.json.tmp" ] ||
        echo "the load removed the incomplete checkpoint"
    rm -rf "$tmp/ckpt.s2/.tmp-step-00000099"
}

# A save that cannot write (the directory's parent is missing) fails every
# rank after the step it follows, naming the directory, and none aborts in
# place of its own message.
unwritable() {
    local ck="$tmp/missing/ckpt" r
    launch_ended unwritable 20 --stage 2 --steps 5 --ckpt-dir "$ck" --ckpt-every 2 || return
    for r in 0 1; do
        [ "$(cat "$tmp/unwritable.rc.$r")" = 1 ] ||
            echo "rank $r exited $(cat "$tmp/unwritable.rc.$r"), expected 1"
        grep -q "zsh_train: zsh_optim_save: .*$ck" "$tmp/unwritable.err.$r" ||
            echo "rank $r does not name $ck: $(grep zsh_train "$tmp/unwritable.err.$r")"
    done
    [ "$(awk '$1 == "step" { k = $2 } END { print k }' "$tmp/unwritable.out.0")" = 2 ] ||
        echo "rank 0 did not stop after step 2: $(grep '^step' "$tmp/unwritable.out.0" | tr '\n' ' ')"
}

# --ckpt-every 4 over 10 steps saves after steps 4 and 8; 0 saves nothing.
cadence() {
    run_job every4 1 --stage 1 --steps 10 --ckpt-dir "$tmp/ckpt.every4" --ckpt-every 4
    same "checkpoints of --ckpt-every 4 --steps 10" "$(listing "$tmp/ckpt.every4")" \
        "latest $(step_dir 4) $(step_dir 8) "
    [ "$(cat "$tmp/ckpt.every4/latest" 2>/dev/null)" = "$(step_dir 8)" ] ||
        echo "latest is '$(cat "$tmp/ckpt.every4/latest" 2>/dev/null)', expected step-00000008"
    run_job every0 1 --stage 1 --steps 3 --ckpt-dir "$tmp/ckpt.every0" --ckpt-every 0
    [ -z "$(listing "$tmp/ckpt.every0")" ] ||
        echo "--ckpt-every 0 saved: $(listing "$tmp/ckpt.every0")"
}

saved_or_ended() { # TAG: rank 0 saved a checkpoint, or a rank exited
    grep -q '^checkpoint ' "$tmp/$1.out.0" 2>/dev/null || any_ended "$1"
}

# crash I: trial I of the crash test; prints what went wrong.
crash() {
    local i=$1 tag=crash.$1 id="crash-$1-$$" ck="$tmp/ckpt.crash.$1" nvme="$tmp/nvme.crash.$1"
    local ref=crash.ref.$(($1 % 2)) args=(--stage 2) victim survivor ms k n latest _ t0 rc where
    if [ $((i % 2)) = 1 ]; then
        args=(--stage 3 --offload-optimizer nvme --offload-params nvme)
    fi
    args+=("${crash_model[@]}" --nvme-dir "$nvme" --steps "$crash_steps" --ckpt-dir "$ck")
    mkdir "$nvme"
    for _ in 1 2 3; do
        launch "$tag" "$id" 2 $crash_timeout "${args[@]}" --ckpt-every 1
        poll 60 saved_or_ended "$tag"
        if any_ended "$tag" && port_taken "$tag"; then
            kill_job "$tag"
            poll 10 ended "$tag"
            continue
        fi
        break
    done
    if ! grep -q '^checkpoint ' "$tmp/$tag.out.0" || any_ended "$tag"; then
        kill_job "$tag"
        poll 10 ended "$tag"
        echo "the job never saved, or ended before the kill: $(tail -n 3 "$tmp/$tag".err.*)"
        return
    fi
    # The kill comes within 400 ms, and within 30 of the first step's step
    # and save times, so that it always lands well before the job's end
    # however fast the machine.
    ms=$(awk '$1 == "split" && $2 == "1:" { s = $4 } $1 == "checkpoint" && $2 == "1:" { c = $(NF - 1) }
              END { m = int(30000 * (s + c)); print (m < 20) ? 20 : (m > 400) ? 400 : m }' \
         "$tmp/$tag.out.0")
    ms=$((RANDOM % ms))
    victim=$((RANDOM % 2))
    survivor=$((1 - victim))
    sleep "$(printf '0.%03d' $ms)"
    if any_ended "$tag"; then
        kill_job "$tag"
        poll 10 ended "$tag"
        echo "a rank ended before the kill: $(tail -n 3 "$tmp/$tag".err.*)"
        return
    fi
    kill -9 "$(cat "$tmp/$tag.pid.$victim")"
    t0=$(now_ms)
    poll 10 ended "$tag" $victim
    [ "$(cat "$tmp/$tag.rc.$victim" 2>/dev/null)" = 137 ] ||
        echo "rank $victim: exit '$(cat "$tmp/$tag.rc.$victim" 2>/dev/null)', expected 137 (SIGKILL)"
    if poll $((crash_timeout + 15)) ended "$tag" $survivor; then
        rc=$(cat "$tmp/$tag.rc.$survivor")
        [ "$rc" != 0 ] || echo "rank $survivor exited 0 though its peer was killed mid-run"
    else
        echo "rank $survivor still running $((crash_timeout + 15)) s after its peer was killed"
        kill_job "$tag"
        poll 10 ended "$tag"
        rc=killed
    fi
    k=$(sed -n 's/^checkpoint \([0-9]*\):.*/\1/p' "$tmp/$tag.out.0" | tail -n 1)
    # Where the kill landed, as far as can be told: the call the survivor
    # failed in, and a save's temporary directory left behind.
    where=$(sed -n 's/^zsh_train: \([^:]*\):.*/\1/p' "$tmp/$tag.err.$survivor" | head -n 1)
    listing "$ck" | grep -q '\.tmp-' && where+=", a save half-written"
    printf '    trial %d: %s%s, rank %d killed %d ms after the first save, after checkpoint %s; rank %d failed in %s, %d ms later (exit %s)\n' \
        "$i" "${args[*]:0:2}" "$( ((i % 2)) && echo " nvme")" $victim $ms "$k" $survivor \
        "${where:-?}" $(($(now_ms) - t0)) "$rc" >&2

    # latest names a complete checkpoint: the last one a save returned
    # from, or one more (a save that published before rank 0 could say so).
    latest=$(cat "$ck/latest" 2>/dev/null)
    if ! [[ $latest =~ ^step-[0-9]{8}$ ]] || [ ! -f "$ck/$latest/manifest.json" ]; then
        echo "latest is '$latest', not a checkpoint with a manifest: $(listing "$ck")"
        return
    fi
    n=$((10#${latest#step-}))
    [ "$n" = "$k" ] || [ "$n" = $((k + 1)) ] ||
        echo "latest names step $n; the last save that returned was of step $k"
    # Saving after every step changed no step.
    same "the losses of steps 1-$k, saving after every step and not saving" \
        "$(losses "$ref" 1 "$k")" "$(losses "$tag" 1 "$k")"

    # The job's own id: it also sweeps the killed rank's NVMe files.
    job_id=$id run_job "$tag.resumed" 2 "${args[@]}" --resume
    if [[ $where == *half-written* ]] && ! grep -q "an incomplete checkpoint" "$tmp/$tag.resumed.err.0"; then
        echo "the resumed job did not warn of the half-written save: $(head -n 3 "$tmp/$tag.resumed.err.0")"
    fi
    [ "$(resumed_at "$tag.resumed")" = "$n" ] ||
        echo "the resumed job does not say it resumed at step $n: $(head -n 2 "$tmp/$tag.resumed.out.0")"
    same "the losses of steps $((n + 1))-$crash_steps, resumed and a run that never stopped" \
        "$(losses "$ref" $((n + 1)) $crash_steps)" "$(losses "$tag.resumed" 1 $crash_steps)"
    same "the ranks' last losses" "$(lasts "$ref")" "$(lasts "$tag.resumed")"
    # The resumed job swept what the crash left (a half-written save, the
    # killed rank's NVMe files) and saved its end.
    [ "$(cat "$ck/latest" 2>/dev/null)" = "$(step_dir $crash_steps)" ] ||
        echo "after the resumed job, latest is '$(cat "$ck/latest" 2>/dev/null)'"
    listing "$ck" | grep -qE '(^| )\.' && echo "left in the checkpoint directory: $(listing "$ck")"
    [ -z "$(find "$nvme" -mindepth 1)" ] || echo "left in the NVMe directory: $(listing "$nvme")"
    rm -rf "$ck" "$nvme"
}

if [ ! -x "$prog" ]; then
    echo "$prog is not built"
    exit 1
fi
t_start=$(now_ms)
for name in "${exact_names[@]}"; do
    result "${name}_ten_steps_then_ten_resumed_print_the_losses_of_twenty_straight" "$(exact "$name")"
done
echo "    exact resume: $(($(now_ms) - t_start)) ms" >&2

t_start=$(now_ms)
for rs in "1 3" "3 1"; do
    read -r n stage <<<"$rs"
    result "a_2_rank_stage_2_checkpoint_resumed_at_${n}_rank_stage_${stage}_continues_the_trajectory" \
        "$(reshard "$n" "$stage")"
done
result resume_without_a_checkpoint_fails_on_every_rank_naming_the_directory "$(missing)"
result a_save_that_cannot_write_fails_every_rank_naming_the_directory "$(unwritable)"
result ckpt_every_saves_after_its_multiples_and_0_never "$(cadence)"
echo "    resharded resume and options: $(($(now_ms) - t_start)) ms" >&2

t_start=$(now_ms)
RANDOM=$seed
echo "    crash trials: $trials, seed $seed (ZSH_CKPT_CRASH_TRIALS, ZSH_CKPT_CRASH_SEED)" >&2
# The runs that never stopped, one per kind of trial.
mkdir "$tmp/nvme.ref"
crash_ref=$(run_job crash.ref.0 2 --stage 2 "${crash_model[@]}" --steps $crash_steps
            run_job crash.ref.1 2 --stage 3 --offload-optimizer nvme --offload-params nvme \
                "${crash_model[@]}" --nvme-dir "$tmp/nvme.ref" --steps $crash_steps)
crash_passed=0
for ((i = 0; i < trials; i++)); do
    if [ -z "$crash_ref" ]; then
        why=$(crash "$i")
    else
        why="the runs that never stopped failed: $crash_ref"
    fi
    [ -z "$why" ] && crash_passed=$((crash_passed + 1))
    result "crash_trial_${i}_latest_names_the_last_complete_checkpoint_and_the_job_resumes_from_it" "$why"
done
echo "    crash: $crash_passed of $trials trials passed in $(($(now_ms) - t_start)) ms" >&2

results_end
