#!/bin/bash
# zsh_train killed with kill -9 mid-step, at 2 ranks with the optimizer
# states and the parameters on the NVMe tier: once one rank of the job, once
# every rank (as a scheduler ends a job). The killed ranks' files stay behind;
# the surviving rank fails within ZSH_TIMEOUT with an error that names the
# dead one, and removes its own files; a job of another ZSH_JOB_ID on the same
# directory leaves the killed job's files alone; the next job of the same id
# sweeps them, holds only its own files while it runs, trains to a finite
# loss and leaves the directory empty. A rank whose setup fails (its NVMe
# directory missing) stops the job at once, and neither rank leaves files.
# The ranks start from torchrun-style variables: no launcher is needed.
# Every wait is a bounded poll. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_train"
nranks=2
ranks=(0 1)
# Seconds a collective of the killed job waits for a dead peer before it
# fails; the other jobs are not hurried.
timeout_s=5
again_steps=100
model=(--stage 3 --offload-optimizer nvme --offload-params nvme --hidden 64 --layers 2)
held=()
# Options for rank 1 alone, after the others: a later option wins.
rank1_args=()
tmp=$(mktemp -d)
# shellcheck source=../../harness/free_port.sh
. "$(dirname "$0")/../../harness/free_port.sh"
# shellcheck source=../../harness/poll.sh
. "$(dirname "$0")/../../harness/poll.sh"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
# Four results per case, the survivor's in the one-rank case, and the
# failed setup.
results_begin zsh_train_kill 10

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

ended() { # TAG RANK...: every RANK of job TAG has exited
    local tag=$1 r
    shift
    for r in "$@"; do
        [ -e "$tmp/$tag.rc.$r" ] || return 1
    done
}

any_ended() { # TAG: a rank of job TAG has exited
    local r
    for r in "${ranks[@]}"; do
        [ -e "$tmp/$1.rc.$r" ] && return 0
    done
    return 1
}

# launch TAG ID STEPS [TIMEOUT]: start the ranks of a job of ZSH_JOB_ID ID on
# $nvme; rank r's pid, output, errors and exit status go to
# $tmp/TAG.{pid,out,err,rc}.r.
launch() {
    local tag=$1 id=$2 steps=$3 zsh_timeout=${4:-60} port r fd extra
    port=$(free_port)
    rm -f "$tmp/$tag".*
    for r in "${ranks[@]}"; do
        extra=()
        [ "$r" = 1 ] && extra=("${rank1_args[@]}")
        (
            for fd in "${held[@]}"; do
                eval "exec $fd<&-"
            done
            env -u ZSH_RANK -u ZSH_WORLD_SIZE -u ZSH_MASTER_PORT -u ZSH_NVME_DIR \
                RANK=$r WORLD_SIZE=$nranks MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
                ZSH_JOB_ID="$id" ZSH_TIMEOUT=$zsh_timeout \
                "$prog" "${model[@]}" --steps "$steps" --nvme-dir "$nvme" "${extra[@]}" \
                >"$tmp/$tag.out.$r" 2>"$tmp/$tag.err.$r" &
            echo $! >"$tmp/$tag.pidw.$r" && mv "$tmp/$tag.pidw.$r" "$tmp/$tag.pid.$r"
            wait $!
            echo $? >"$tmp/$tag.rcw.$r" && mv "$tmp/$tag.rcw.$r" "$tmp/$tag.rc.$r"
        ) 2>/dev/null & # the shell's word on a killed rank: the rc file has it
    done
    # The trap can kill only what has a pid file.
    for r in "${ranks[@]}"; do
        poll 10 test -s "$tmp/$tag.pid.$r" || { echo "rank $r of $tag did not start" >&2; exit 1; }
    done
}

port_taken() { # TAG: rank 0's store found its port in use
    grep -q "Address already in use" "$tmp/$1.err.0" 2>/dev/null
}

rank_files() { # RANK: the engine's files of RANK under $jobdir exist, not empty
    local d
    for d in "$jobdir/r$1-"*; do
        [ -n "$(find "$d" -type f -size +0 2>/dev/null)" ] && return 0
    done
    return 1
}

# A step is under way: step 2 is done, every rank has its files, no rank ended.
under_way() { # TAG
    local r
    grep -q '^step 2 ' "$tmp/$1.out.0" 2>/dev/null || return 1
    for r in "${ranks[@]}"; do
        rank_files "$r" || return 1
    done
    ! any_ended "$1"
}

under_way_or_ended() { # TAG
    under_way "$1" || any_ended "$1"
}

# start_running TAG ID STEPS LIMIT_S [TIMEOUT]: launch, and wait until a step
# is under way; again on another port if rank 0's was taken. Prints what went
# wrong.
start_running() {
    local _
    for _ in 1 2 3; do
        launch "$1" "$2" "$3" "${5:-}"
        poll "$4" under_way_or_ended "$1"
        under_way "$1" && return 0
        # Never leave a job behind: a retry's launch forgets its pids.
        signal KILL "$1"
        poll 10 ended "$1" "${ranks[@]}"
        port_taken "$1" || break
    done
    echo "$1 never got a step under way: $(tail -n 3 "$tmp/$1".err.*)"
    return 1
}

# run_to_end TAG ID STEPS LIMIT_S: a whole job; prints what went wrong.
run_to_end() {
    local _ r
    for _ in 1 2 3; do
        launch "$1" "$2" "$3"
        if ! poll "$4" ended "$1" "${ranks[@]}"; then
            echo "$1 did not end within $4 s"
            signal KILL "$1"
            return 1
        fi
        port_taken "$1" || break
    done
    for r in "${ranks[@]}"; do
        [ "$(cat "$tmp/$1.rc.$r")" = 0 ] ||
            echo "$1 rank $r exited $(cat "$tmp/$1.rc.$r"): $(tail -n 3 "$tmp/$1.err.$r")"
    done
}

stopped() { # TAG [RANK...]: every RANK (all by default) of job TAG is stopped (SIGSTOP)
    local tag=$1 r st
    shift
    [ $# -gt 0 ] || set -- "${ranks[@]}"
    for r in "$@"; do
        read -r _ _ st _ <"/proc/$(cat "$tmp/$tag.pid.$r")/stat" 2>/dev/null || return 1
        [ "$st" = T ] || return 1
    done
}

signal() { # SIG TAG: send SIG to every rank of job TAG
    local r
    for r in "${ranks[@]}"; do
        kill -"$1" "$(cat "$tmp/$2.pid.$r")" 2>/dev/null
    done
}

listing() { # the paths under $jobdir, relative, sorted
    (cd "$jobdir" 2>/dev/null && find . -mindepth 1 | sort)
}

nlink() { # FD: links of what the held FD names; 0 once it is removed
    stat -L -c %h "/proc/$$/fd/$1"
}

# hold RANK: keep open every directory and file of RANK under $jobdir, so
# that their inodes stay taken and their removal shows as 0 links.
stale_paths=()
stale_inodes=()
hold() {
    local p fd
    while read -r p; do
        exec {fd}<"$p" || continue
        held+=("$fd")
        stale_paths+=("$p")
        stale_inodes+=("$(stat -c %i "$p")")
    done < <(find "$jobdir" -mindepth 1 -path "$jobdir/r$1-*")
}

release() {
    local fd
    for fd in "${held[@]}"; do
        exec {fd}<&-
    done
    held=()
    stale_paths=()
    stale_inodes=()
}

# kill_case NAME VICTIMS: a job killed mid-step, VICTIMS the ranks that get
# kill -9 (the others are survivors), then the jobs after it.
kill_case() {
    local name=$1 victims=$2 id="kill-$1-$$" survivors="" r i t0 elapsed msg before during
    nvme="$tmp/$name.nvme"
    jobdir="$nvme/zeroshard-$id"
    mkdir "$nvme"
    for r in "${ranks[@]}"; do
        [[ " $victims " == *" $r "* ]] || survivors="$survivors $r"
    done

    # Not in $(...): that would wait for the ranks, which hold its output.
    if ! start_running "$name.killed" "$id" 100000 30 $timeout_s >"$tmp/$name.why.killed"; then
        result "${name}_killed_ranks_leave_their_files" "$(cat "$tmp/$name.why.killed")"
        [ -n "$survivors" ] && result "${name}_survivors_fail_naming_the_dead_rank_within_the_timeout_and_remove_their_files" "not run"
        result "${name}_a_job_of_another_id_on_the_same_directory_keeps_the_files" "not run"
        result "${name}_the_next_job_of_the_same_id_sweeps_them_and_holds_only_its_own" "not run"
        result "${name}_the_next_job_of_the_same_id_trains_to_a_finite_loss_and_leaves_nothing" "not run"
        return
    fi
    before=$(listing)
    t0=$(now_ms)
    # Stopped first, then killed: a victim killed after another could
    # otherwise see that death and clean up (seen under ASan), which is the
    # survivors' part, not a killed job's.
    for r in $victims; do
        kill -STOP "$(cat "$tmp/$name.killed.pid.$r")"
    done
    # shellcheck disable=SC2086
    poll 10 stopped "$name.killed" $victims
    for r in $victims; do
        kill -9 "$(cat "$tmp/$name.killed.pid.$r")"
    done
    # shellcheck disable=SC2086
    poll 10 ended "$name.killed" $victims

    msg=""
    for r in $victims; do
        [ "$(cat "$tmp/$name.killed.rc.$r" 2>/dev/null)" = 137 ] ||
            msg+="rank $r: exit '$(cat "$tmp/$name.killed.rc.$r" 2>/dev/null)', expected 137 (SIGKILL)"$'\n'
        rank_files "$r" || msg+="rank $r left no files under $jobdir: $(listing)"$'\n'
        hold "$r"
    done
    result "${name}_killed_ranks_leave_their_files" "$msg"

    if [ -n "$survivors" ]; then
        msg=""
        # shellcheck disable=SC2086
        if poll $((timeout_s + 15)) ended "$name.killed" $survivors; then
            elapsed=$(($(now_ms) - t0))
            for r in $survivors; do
                [ "$(cat "$tmp/$name.killed.rc.$r")" = 1 ] ||
                    msg+="rank $r: exit $(cat "$tmp/$name.killed.rc.$r"), expected 1"$'\n'
                for i in $victims; do
                    grep -q "rank $i .*failed" "$tmp/$name.killed.err.$r" ||
                        msg+="rank $r does not name rank $i: $(tail -n 3 "$tmp/$name.killed.err.$r")"$'\n'
                done
                ! ls -d "$jobdir/r$r-"* >/dev/null 2>&1 ||
                    msg+="rank $r left its files: $(listing | grep "^\./r$r-")"$'\n'
            done
            echo "    survivors ended $elapsed ms after the kill (ZSH_TIMEOUT=$timeout_s)"
        else
            msg="survivors still running $((timeout_s + 15)) s after the kill"
        fi
        result "${name}_survivors_fail_naming_the_dead_rank_within_the_timeout_and_remove_their_files" \
            "$msg"
    fi

    # Another job on the same directory: its files are its own.
    run_to_end "$name.other" "other-$id" 20 30 >"$tmp/$name.why.other"
    msg=$(cat "$tmp/$name.why.other")
    for i in "${!held[@]}"; do
        [ "$(nlink "${held[$i]}")" != 0 ] && [ "$(stat -c %i "${stale_paths[$i]}" 2>/dev/null)" = "${stale_inodes[$i]}" ] ||
            msg+=$'\n'"${stale_paths[$i]#"$nvme/"} was removed by a job of another id"
    done
    [ -e "$nvme/zeroshard-other-$id" ] && msg+=$'\n'"the other job left $(find "$nvme/zeroshard-other-$id")"
    [ ${#held[@]} -gt 0 ] || msg+=$'\n'"no files of the killed job to check"
    result "${name}_a_job_of_another_id_on_the_same_directory_keeps_the_files" "$msg"

    # The same id again, looked at while it runs, not after it ends: its own
    # end removes what it reused, a directory or a file of the killed job's
    # that it truncated. It is stopped while it is looked at, so that what is
    # seen is what it holds, however slow the machine.
    msg=""
    during="(the job was not seen running)"
    if start_running "$name.again" "$id" $again_steps 30 >"$tmp/$name.why.again"; then
        signal STOP "$name.again"
        if poll 10 stopped "$name.again"; then
            during=$(listing)
            for i in "${!held[@]}"; do
                [ "$(nlink "${held[$i]}")" = 0 ] ||
                    msg+="${stale_paths[$i]#"$nvme/"} of the killed job is still there while the job runs"$'\n'
            done
        else
            during="(the job could not be stopped to be looked at: $(cat "$tmp/$name.again.rc".* 2>/dev/null))"
        fi
        signal CONT "$name.again"
    fi
    poll 40 ended "$name.again" "${ranks[@]}" || msg+="the job of the same id did not end within 40 s"$'\n'
    [ "$during" = "$before" ] ||
        msg+="while it ran, the job directory held"$'\n'"$during"$'\n'"instead of what the killed job had"$'\n'"$before"$'\n'
    for r in $victims; do
        grep -q "zeroshard-$id: swept [0-9]* director.* of rank $r left by a killed job" "$tmp/$name.again.err.$r" ||
            msg+="rank $r did not say it swept: $(head -n 3 "$tmp/$name.again.err.$r")"$'\n'
    done
    result "${name}_the_next_job_of_the_same_id_sweeps_them_and_holds_only_its_own" \
        "$(cat "$tmp/$name.why.again")"$'\n'"$msg"

    msg=""
    for r in "${ranks[@]}"; do
        [ "$(cat "$tmp/$name.again.rc.$r" 2>/dev/null)" = 0 ] ||
            msg+="rank $r exited '$(cat "$tmp/$name.again.rc.$r" 2>/dev/null)': $(tail -n 3 "$tmp/$name.again.err.$r")"$'\n'
    done
    # Every step's loss and both ranks' last one: finite numbers, the last equal.
    msg+=$(cat "$tmp/$name.again.out."* | awk -v n=$again_steps '
        function num(x) { return x ~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
        $1 == "step" { k++; if (!num($4)) print "step " $2 ": loss " $4 }
        $1 == "rank" && $3 == "last" { l = $5; sub(/,$/, "", l); if (!num(l)) print $0; if (!(l in last)) d++; last[l] = 1; r++ }
        END { if (k != n) print k + 0 " steps, expected " n
              if (r != 2 || d != 1) print "the ranks\047 last losses are not one number" }')
    [ -z "$(find "$nvme" -mindepth 1)" ] || msg+=$'\n'"left behind: $(cd "$nvme" && find . -mindepth 1)"
    result "${name}_the_next_job_of_the_same_id_trains_to_a_finite_loss_and_leaves_nothing" "$msg"
    release
}

if [ ! -x "$prog" ]; then
    echo "$prog is not built"
    exit 1
fi
kill_case one_rank "1"
kill_case whole_job "${ranks[*]}"

# A rank that fails on its own, alive: its peer must not wait for it until
# ZSH_TIMEOUT (30 s here), and what either created is removed.
setup_fails() {
    local r t0 why
    nvme="$tmp/nvme-setup"
    mkdir "$nvme"
    rank1_args=(--nvme-dir "$tmp/missing")
    t0=$(now_ms)
    launch setup setup-$$ 20 30
    rank1_args=()
    poll 15 ended setup "${ranks[@]}" || { echo "the job did not stop within 15 s"; return; }
    echo "    the job stopped $(($(now_ms) - t0)) ms after it started" >&2
    for r in "${ranks[@]}"; do
        [ "$(cat "$tmp/setup.rc.$r")" = 1 ] ||
            echo "rank $r exited $(cat "$tmp/setup.rc.$r"), expected 1: $(tail -n 2 "$tmp/setup.err.$r")"
    done
    why=$(grep -h "zsh_train: " "$tmp/setup.err.1")
    [[ $why == *"setup"*"$tmp/missing"* ]] || echo "rank 1 does not name its directory: $why"
    [ -z "$(find "$nvme" -mindepth 1)" ] || echo "left behind: $(cd "$nvme" && find . -mindepth 1)"
}
setup_fails >"$tmp/why.setup"
result a_rank_whose_setup_fails_stops_the_job_at_once_and_no_rank_leaves_files "$(cat "$tmp/why.setup")"

results_end
