#!/bin/bash
# zsh_train at stage 3 under zshrun --max-restarts, with ranks killed from
# outside (kill -9 of a rank chosen at random, at a random step: while it
# trains or while it saves, which takes most of the time here): the job goes
# on at fewer ranks from the newest complete checkpoint on disk, or from the
# snapshot in node memory (--snapshot-every) without one on disk, resharded,
# losing at most --ckpt-every (--snapshot-every) steps; the losses and the
# final checkpoint's bytes equal those of a job started by hand at that many
# ranks from that step; zshrun removes the snapshot directory at the end;
# nothing hangs (every wait is a bounded poll). The program is the same
# zsh_train a user runs: a shell line adds --resume once there is something
# to resume from.
#
# ZSH_ELASTIC_KILLS sets the kills of the second case (default 2; the soak,
# tests/system/train/soak_elastic.sh, runs more), ZSH_ELASTIC_SEED the seed
# of the random choices (printed). Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
train="$top_builddir/tools/zsh_train"
zshrun="$top_builddir/tools/zshrun"
kills=${ZSH_ELASTIC_KILLS:-2}
seed=${ZSH_ELASTIC_SEED:-$$}
RANDOM=$seed
model=(--stage 3 --hidden 64 --layers 2 --batch 24)
steps=80
tmp=$(mktemp -d)
# shellcheck source=../../harness/poll.sh
. "$(dirname "$0")/../../harness/poll.sh"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin zsh_train_elastic 4
echo "ZSH_ELASTIC_SEED=$seed"

cleanup() {
    local p
    for p in "$tmp"/*.pid; do
        [ -e "$p" ] && kill -TERM "$(cat "$p")" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The rank's program: rank 0 marks each start in the output, and a start
# with a checkpoint to resume from resumes.
# shellcheck disable=SC2016
line='[ "$RANK" = 0 ] && echo "start $ZSH_RESTART_COUNT $ZSH_SNAPSHOT_DIR"
exec "$0" "$@" $([ -e "$CK/latest" ] || [ -e "$ZSH_SNAPSHOT_DIR/latest" ] && echo --resume)'

started() { # TAG I: start I of job TAG has trained a step
    awk -v i="$2" '$2 == "start" && $3 == i { s = 1 } s && $2 == "step" { f = 1 } END { exit !f }' \
        "$tmp/$1.out"
}
last_step() { # TAG: the last step rank 0 printed
    awk '$2 == "step" && $4 == "loss" { s = $3 } END { print s + 0 }' "$tmp/$1.out"
}
ended() { [ -e "$tmp/$1.rc" ]; }

# elastic TAG NPROC KILLS EVERY FROM ARGS...: NPROC ranks of zsh_train ARGS,
# KILLS of them killed one after the other, each at a random step of its
# start, each losing at most EVERY steps and resuming from FROM (a pattern of
# its line); prints what went wrong.
elastic() {
    local tag=$1 n=$2 k=$3 every=$4 from=$5 i pids victim at rc t0 ms resumed lost left snap f
    shift 5
    (
        CK="$tmp/$tag.ck" "$zshrun" -n "$n" --max-restarts "$k" --min-ranks $((n - k)) \
            sh -c "$line" "$train" "${model[@]}" --steps $steps --ckpt-dir "$tmp/$tag.ck" \
            "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err" &
        echo $! >"$tmp/$tag.pid"
        wait $!
        echo $? >"$tmp/$tag.rc"
    ) &
    poll 10 test -s "$tmp/$tag.pid" || { echo "zshrun did not start"; return; }
    for ((i = 0; i < k; i++)); do
        poll 60 started "$tag" "$i" || { echo "start $i trained no step in 60 s"; return; }
        # A step from the next few, never in the second half: the kill must
        # land in a running job, whose steps take a millisecond or so.
        at=$(($(last_step "$tag") + 1 + RANDOM % 15))
        [ $at -le $((steps / 2)) ] || at=$((steps / 2))
        poll 60 eval "[ \$(last_step $tag) -ge $at ]" || { echo "step $at not reached"; return; }
        sleep "0.00$((RANDOM % 10))"
        mapfile -t pids < <(pgrep -P "$(cat "$tmp/$tag.pid")")
        [ ${#pids[@]} = $((n - i)) ] || { echo "start $i: ${#pids[@]} ranks, expected $((n - i))"; return; }
        victim=${pids[RANDOM % ${#pids[@]}]}
        left=$(last_step "$tag")
        t0=$(now_ms)
        kill -9 "$victim"
        poll 60 started "$tag" $((i + 1)) || { echo "no step 60 s after kill $((i + 1))"; return; }
        ms=$(($(now_ms) - t0))
        resumed=$(awk -v i=$((i + 1)) '$2 == "start" && $3 == i { s = 1 }
            s && $2 == "resumed" { print $(NF - 3); exit }' "$tmp/$tag.out")
        if [ -n "$resumed" ]; then
            grep -q "^\[0\] resumed from $from at step $resumed " "$tmp/$tag.out" ||
                echo "kill $((i + 1)): not resumed from $from: $(grep '^\[0\] resumed' "$tmp/$tag.out")"
        fi
        lost=$((left - ${resumed:-0}))
        echo "kill $((i + 1)) at step $left: resumed from ${resumed:-nothing} at $((n - i - 1)) ranks, the first step $ms ms after the kill" >&2
        [ $lost -le "$every" ] || echo "kill $((i + 1)): $lost steps lost, more than $every"
    done
    poll 120 ended "$tag" || { echo "the job did not end"; return; }
    rc=$(cat "$tmp/$tag.rc")
    [ "$rc" = 0 ] || { echo "the job exited $rc: $(tail -5 "$tmp/$tag.err")"; return; }
    snap=$(awk '$2 == "start" { print $4; exit }' "$tmp/$tag.out")
    [ -n "$snap" ] && [ ! -e "$snap" ] || echo "the snapshot directory '$snap' is still there"
    for f in /dev/shm/zshrun-"$(cat "$tmp/$tag.pid")"-*; do
        [ -e "$f" ] && echo "zshrun left $f"
    done
    [ "$(grep -c '^zshrun: restart ' "$tmp/$tag.err")" = "$k" ] || echo "not $k restarts: $(cat "$tmp/$tag.err")"
    same_as_by_hand "$tag" $((n - k)) "$k" "$resumed" "$@"
}

# same_as_by_hand TAG N I S ARGS...: job TAG's last start (I, at N ranks,
# resumed from step S) against a job started by hand at N ranks from step S
# of a copy of its checkpoints: the same losses, the same final checkpoint.
# A step S that only a snapshot held (I = 1) is made again by a job of the
# first start's ranks that trains to S straight: it takes the same steps.
same_as_by_hand() {
    local tag=$1 n=$2 i=$3 s=$4 ref=$1.ref f a b
    shift 4
    cp -a "$tmp/$tag.ck" "$tmp/$ref.ck"
    rm -rf "$tmp/$ref.ck/step-$(printf %08d $steps)"
    if [ -n "$s" ] && [ ! -e "$tmp/$ref.ck/step-$(printf %08d "$s")" ] && [ "$i" = 1 ]; then
        timeout 120 "$zshrun" -n $((n + 1)) "$train" "${model[@]}" --steps "$s" \
            --ckpt-dir "$tmp/$ref.ck" >"$tmp/$ref.0.out" 2>&1 ||
            { echo "the job to step $s exited $?: $(tail -3 "$tmp/$ref.0.out")"; return; }
    fi
    if [ -n "$s" ]; then
        printf 'step-%08d\n' "$s" >"$tmp/$ref.ck/latest"
        a=--resume
    else
        rm -rf "$tmp/$ref.ck"
        a=
    fi
    # shellcheck disable=SC2086
    timeout 120 "$zshrun" -n "$n" "$train" "${model[@]}" --steps $steps --ckpt-dir "$tmp/$ref.ck" \
        --ckpt-every "$steps" $a >"$tmp/$ref.out" 2>"$tmp/$ref.err" ||
        { echo "the job by hand exited $?: $(tail -3 "$tmp/$ref.err")"; return; }
    a=$(awk -v i="$i" '$2 == "start" && $3 == i { s = 1 } s && $2 == "step" && $4 == "loss"' "$tmp/$tag.out")
    b=$(awk '$2 == "step" && $4 == "loss"' "$tmp/$ref.out")
    [ -n "$b" ] && [ "$a" = "$b" ] || echo "losses differ from the job by hand: $(diff <(echo "$a") <(echo "$b") | head -4)"
    a=$(grep -c '^\[[0-9]*\] rank [0-9]*: last loss' "$tmp/$tag.out")
    [ "$a" = $((n)) ] || echo "$a ranks said they finished, expected $n"
    f=0
    for b in "$tmp/$ref.ck/step-$(printf %08d $steps)"/*.bin; do
        cmp -s "$b" "$tmp/$tag.ck/step-$(printf %08d $steps)/${b##*/}" || echo "${b##*/} differs"
        f=$((f + 1))
    done
    [ $f = $((3 * n)) ] || echo "$f shard files, expected $((3 * n))"
}

result one_rank_of_four_killed_the_job_goes_on_at_three_as_resumed_by_hand \
    "$(elastic one 4 1 5 "$tmp/one.ck" --ckpt-every 5)"
result "${kills}_ranks_killed_during_saves_or_steps_each_restart_as_resumed_by_hand" \
    "$(elastic many $((kills + 2)) "$kills" 2 "$tmp/many.ck" --ckpt-every 2)"
result one_rank_of_four_killed_the_job_restores_the_snapshot_in_memory_as_resumed_by_hand \
    "$(elastic snap 4 1 5 "the snapshot in memory" --snapshot-every 5 --ckpt-every $steps)"
# Snapshots where nothing says where they go: the refusal names the
# variable, and the run fails (exit 1) rather than train without them.
no_snapshot_dir() {
    local rc
    env -u ZSH_SNAPSHOT_DIR timeout 60 "$train" "${model[@]}" --steps 2 --snapshot-every 1 \
        >"$tmp/nodir.out" 2>"$tmp/nodir.err"
    rc=$?
    [ $rc = 1 ] || echo "exit $rc, expected 1"
    grep -q 'zsh_optim_snapshot: .*ZSH_SNAPSHOT_DIR is not set' "$tmp/nodir.err" ||
        echo "stderr: $(cat "$tmp/nodir.err")"
}
result snapshots_without_ZSH_SNAPSHOT_DIR_are_refused_by_name "$(no_snapshot_dir)"
results_end
