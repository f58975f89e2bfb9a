#!/bin/bash
# zshrun as a user runs it: the torchrun environment of every rank and the
# job key; output lines whole, prefixed and on the right stream; a failing,
# killed or stubborn rank stopping the job with the right status and nothing
# left behind; a signal to zshrun passed on; real ZeroShard jobs on one and
# on two "nodes" through an authenticated store; bad input refused before
# anything starts; ranks bound to a core each, spread over NUMA nodes, and
# left unbound where they outnumber the cores; restarts without the lost
# ranks, down to --min-ranks. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
zshrun="$top_builddir/tools/zshrun"
demo="$top_builddir/examples/zsh_demo"
train="$top_builddir/tools/zsh_train"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
# shellcheck source=../../harness/poll.sh
. "$(dirname "$0")/../../harness/poll.sh"
results_begin zshrun 18
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Rank processes carry this in their sleep's argument (sleep takes 60.NNN),
# so that pgrep finds ours and no one else's.
mark=60.$$$RANDOM

# leftovers: the rank processes of this script still alive. zshrun has
# waited for its ranks, not for what they started: a rank's sleep, signalled
# with its process group, may take a moment to go. A leftover is one still
# there 2 s on (a sleep of 60 s).
no_rank_left() {
    ! pgrep -f "sleep $mark" >/dev/null
}
leftovers() {
    local p
    poll 2 no_rank_left && return
    p=$(pgrep -f "sleep $mark")
    [ -z "$p" ] || { echo "rank processes left behind: $p"; pkill_ours; }
}
pkill_ours() {
    local p
    for p in $(pgrep -f "sleep $mark"); do kill -9 "$p"; done
}

# A python with socket, to check a port: any will do.
py=$(command -v python3 || command -v /usr/bin/python3)

env_vars() {
    local out r line port lo
    out=$(ZSH_RANK=7 timeout 20 "$zshrun" -n 4 --no-prefix sh -c \
        'echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $MASTER_ADDR $MASTER_PORT ${ZSH_RANK-unset}') ||
        { echo "zshrun exited $?: $out"; return; }
    [ "$(echo "$out" | grep -c .)" = 4 ] || echo "expected 4 lines, got: $out"
    port=$(echo "$out" | awk 'NR == 1 { print $8 }')
    for r in 0 1 2 3; do
        line="$r $r 4 4 0 1 127.0.0.1 $port unset"
        echo "$out" | grep -qx "$line" || echo "no line '$line' in: $out"
    done
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    { [ "$port" -ge 1024 ] && [ "$port" -lt "$lo" ]; } 2>/dev/null ||
        echo "MASTER_PORT '$port' is not between 1024 and the ephemeral range ($lo)"
    if [ -n "$py" ]; then
        "$py" -c "import socket,sys; s=socket.socket(); s.bind(('0.0.0.0', int(sys.argv[1])))" "$port" ||
            echo "MASTER_PORT $port is not free after the job"
    fi
    # Multi-node: RANK = node * N + local rank.
    out=$(ZSH_JOB_KEY=0123456789abcdef0123 timeout 20 "$zshrun" --nnodes 3 --node_rank 2 -n 2 \
        --master_addr 10.1.2.3 --master_port 29999 --no-prefix sh -c \
        'echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT')
    for line in "4 0 6 2 2 10.1.2.3 29999" "5 1 6 2 2 10.1.2.3 29999"; do
        echo "$out" | grep -qx "$line" || echo "no line '$line' in: $out"
    done
}
result every_rank_gets_the_torchrun_environment_and_a_free_port_below_the_ephemeral_range "$(env_vars)"

job_key() {
    local a b keys
    a=$(timeout 20 "$zshrun" -n 4 --no-prefix sh -c 'echo "$ZSH_JOB_KEY"')
    b=$(timeout 20 "$zshrun" -n 4 --no-prefix sh -c 'echo "$ZSH_JOB_KEY"')
    keys=$(echo "$a" | sort -u)
    [ "$(echo "$a" | grep -c .)" = 4 ] && [ "$(echo "$keys" | grep -c .)" = 1 ] ||
        echo "the 4 ranks do not share one key: $a"
    echo "$keys" | grep -Eqx '[0-9a-f]{64}' || echo "the key is not 32 bytes in hex: $keys"
    [ "$(echo "$b" | sort -u)" != "$keys" ] || echo "two runs got the same key: $keys"
    a=$(ZSH_JOB_KEY=mine-mine-mine-mine timeout 20 "$zshrun" -n 2 --no-prefix sh -c 'echo "$ZSH_JOB_KEY"' | sort -u)
    [ "$a" = mine-mine-mine-mine ] || echo "ZSH_JOB_KEY set by the user became: $a"
    printf 'from-the-file-0123\n' >"$tmp/key"
    a=$(ZSH_JOB_KEY=mine-mine-mine-mine timeout 20 "$zshrun" -n 2 --job-key-file "$tmp/key" \
        --no-prefix sh -c 'echo "$ZSH_JOB_KEY"' | sort -u)
    [ "$a" = from-the-file-0123 ] || echo "--job-key-file gave: $a"
}
result the_job_key_is_fresh_per_run_the_same_on_every_rank_and_kept_when_set "$(job_key)"

lines() {
    local n=600 r bad
    # Each line in three writes, flushed in between: only the relay keeps it whole.
    timeout 30 "$zshrun" -n 4 awk -v n=$n 'BEGIN {
        r = ENVIRON["RANK"]; x = sprintf("%080d", 0)
        for (i = 0; i < n; i++) {
            printf "r%s-%d-", r, i; fflush(); printf "%s", x; fflush(); printf "-end\n"; fflush()
        }
        printf "last-%s", r }' >"$tmp/out" 2>"$tmp/err" || echo "zshrun exited $?"
    [ "$(grep -c . "$tmp/out")" = $((4 * n + 4)) ] ||
        echo "$(grep -c . "$tmp/out") lines, expected $((4 * n + 4))"
    bad=$(grep -Ev '^\[([0-3])\] (r\1-[0-9]+-0{80}-end|last-\1)$' "$tmp/out" | head -3)
    [ -z "$bad" ] || echo "lines not whole or not behind their rank: $bad"
    for r in 0 1 2 3; do
        grep "^\[$r\] r" "$tmp/out" | awk -v r=$r -F- '$2 != NR - 1 { print "rank " r " line " NR " out of order: " $0; exit }'
        grep -qx "\[$r\] last-$r" "$tmp/out" || echo "rank $r's unfinished last line is missing"
    done
    [ -s "$tmp/err" ] && echo "stderr: $(head -3 "$tmp/err")"
}
result lines_of_parallel_ranks_come_out_whole_in_order_and_prefixed "$(lines)"

streams() {
    timeout 20 "$zshrun" -n 2 sh -c 'echo out-$RANK; echo err-$RANK >&2' >"$tmp/out" 2>"$tmp/err"
    [ "$(sort "$tmp/out" | paste -sd' ')" = "[0] out-0 [1] out-1" ] || echo "stdout: $(cat "$tmp/out")"
    [ "$(sort "$tmp/err" | paste -sd' ')" = "[0] err-0 [1] err-1" ] || echo "stderr: $(cat "$tmp/err")"
    timeout 20 "$zshrun" -n 2 --no-prefix sh -c 'echo out-$RANK; echo err-$RANK >&2' >"$tmp/out" 2>"$tmp/err"
    [ "$(sort "$tmp/out" | paste -sd' ')" = "out-0 out-1" ] || echo "--no-prefix stdout: $(cat "$tmp/out")"
    [ "$(sort "$tmp/err" | paste -sd' ')" = "err-0 err-1" ] || echo "--no-prefix stderr: $(cat "$tmp/err")"
}
result stderr_stays_on_stderr_and_no_prefix_drops_the_rank "$(streams)"

# run_timed RC_FILE MS_FILE ARGS...: zshrun ARGS, its status and milliseconds.
run_timed() {
    local rc_file=$1 ms_file=$2 t0
    shift 2
    t0=$(now_ms)
    timeout 30 "$zshrun" "$@" >"$tmp/out" 2>"$tmp/err"
    echo $? >"$rc_file"
    echo $(($(now_ms) - t0)) >"$ms_file"
}

failing() {
    local rc ms
    run_timed "$tmp/rc" "$tmp/ms" -n 4 --grace 5 sh -c "if [ \$RANK = 2 ]; then exit 3; fi; sleep $mark"
    rc=$(cat "$tmp/rc") ms=$(cat "$tmp/ms")
    [ "$rc" = 3 ] || echo "exit $rc, expected 3"
    [ "$ms" -lt 8000 ] || echo "took $ms ms, more than the grace period and a little"
    grep -Eq '^zshrun: rank 2 \(pid [0-9]+\) exited with status 3$' "$tmp/err" ||
        echo "rank 2 not named: $(cat "$tmp/err")"
    [ "$(grep -c 'exited with status\|killed by signal' "$tmp/err")" = 1 ] ||
        echo "the stopped ranks were reported as failures too: $(cat "$tmp/err")"
    leftovers
}
result a_failing_rank_stops_the_job_with_its_status_and_leaves_nothing "$(failing)"

killed() {
    local rc
    run_timed "$tmp/rc" "$tmp/ms" -n 3 sh -c "if [ \$RANK = 1 ]; then kill -9 \$\$; fi; sleep $mark"
    rc=$(cat "$tmp/rc")
    [ "$rc" = 137 ] || echo "exit $rc, expected 128 + 9"
    grep -Eq '^zshrun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$' "$tmp/err" ||
        echo "rank 1's signal not named: $(cat "$tmp/err")"
    leftovers
}
result a_rank_killed_by_a_signal_gives_128_plus_the_signal "$(killed)"

stubborn() {
    local rc ms
    # The ignored SIGTERM is inherited by the sleep the shell starts. Rank 0
    # fails only once rank 1 ignores SIGTERM: before that, SIGTERM would end it.
    rm -f "$tmp/ignoring"
    run_timed "$tmp/rc" "$tmp/ms" -n 2 --grace 1 sh -c \
        "trap '' TERM; if [ \$RANK = 0 ]; then while [ ! -f $tmp/ignoring ]; do sleep 0.01; done; exit 1; fi; touch $tmp/ignoring; sleep $mark"
    rc=$(cat "$tmp/rc") ms=$(cat "$tmp/ms")
    [ "$rc" = 1 ] || echo "exit $rc, expected 1"
    { [ "$ms" -ge 1000 ] && [ "$ms" -lt 4000 ]; } || echo "took $ms ms, expected about --grace 1"
    grep -q '^zshrun: 1 rank still running after 1 s; sending SIGKILL$' "$tmp/err" ||
        echo "no SIGKILL message: $(cat "$tmp/err")"
    leftovers
}
result a_rank_ignoring_sigterm_is_killed_after_the_grace_period "$(stubborn)"

# two_sleeping: both ranks in their sleep (the sleeps themselves: the
# launchers' command lines name it too), however slow to start under a
# sanitizer; says so after 20 s.
two_sleeping() {
    local i
    for ((i = 0; i < 400; i++)); do
        [ "$(pgrep -fc "^sleep $mark")" = 2 ] && return
        sleep 0.05
    done
    echo "the ranks had not started after 20 s"
}

forwarded() {
    local pid rc snap
    env -u ZSH_SNAPSHOT_DIR timeout 30 "$zshrun" -n 2 sh -c \
        "echo \$ZSH_SNAPSHOT_DIR >$tmp/snap; trap 'echo got-term; exit 5' TERM; sleep $mark & wait" \
        >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    two_sleeping
    kill -TERM "$(pgrep -P $pid)" # timeout's child: zshrun
    wait $pid
    rc=$?
    [ "$rc" = 143 ] || echo "exit $rc, expected 128 + SIGTERM"
    [ "$(sort "$tmp/out" | paste -sd' ')" = "[0] got-term [1] got-term" ] ||
        echo "the ranks did not get SIGTERM: $(cat "$tmp/out")"
    grep -q '^zshrun: got SIGTERM; passing it on$' "$tmp/err" || echo "stderr: $(cat "$tmp/err")"
    # The job's snapshot directory goes before zshrun ends by the signal.
    snap=$(cat "$tmp/snap")
    if [ -d /dev/shm ]; then
        case $snap in /dev/shm/zshrun-*) ;; *) echo "ZSH_SNAPSHOT_DIR '$snap'" ;; esac
        [ ! -e "$snap" ] || echo "$snap is left after SIGTERM"
    fi
    leftovers
}
result sigterm_to_zshrun_reaches_every_rank_and_ends_it_by_that_signal "$(forwarded)"

# SIGKILL cannot be passed on: the ranks die with zshrun all the same
# (PR_SET_PDEATHSIG).
sigkilled() {
    local pid i
    # A zshrun killed so cannot remove its snapshot directory: one of ours.
    ZSH_SNAPSHOT_DIR=$tmp "$zshrun" -n 2 sh -c "sleep $mark & wait" >/dev/null 2>&1 &
    pid=$!
    two_sleeping
    [ "$(pgrep -fc "^sh -c sleep $mark")" = 2 ] || echo "no 2 rank shells to watch"
    kill -KILL $pid
    wait $pid 2>/dev/null
    # the ranks' shells die at once; their sleeps with them (the shell's
    # death is not passed on: each rank is its own process group, killed
    # by the kernel as its parent dies)
    for ((i = 0; i < 100; i++)); do
        [ "$(pgrep -fc "^sh -c sleep $mark")" = 0 ] && break
        sleep 0.05
    done
    [ "$(pgrep -fc "^sh -c sleep $mark")" = 0 ] || echo "ranks outlived a SIGKILLed zshrun"
    pkill_ours
}
result sigkill_to_zshrun_kills_its_ranks "$(sigkilled)"

# all_up DIR: in a rank, after its line: wait until every rank of this start
# has written its own (a failing rank must not stop them before).
all_up='touch "$0/up.$ZSH_RESTART_COUNT.$RANK"
    while [ "$(ls "$0" | grep -c "^up\.$ZSH_RESTART_COUNT\.")" -lt "$WORLD_SIZE" ]; do sleep 0.01; done'

# A lost rank: the job starts again without it, renumbered, with a fresh
# port and the restart count, and the stopped ranks are not counted lost.
restarted() {
    local rc out want
    rm -f "$tmp"/up.*
    run_timed "$tmp/rc" "$tmp/ms" -n 4 --max-restarts 2 --min-ranks 2 --no-prefix sh -c \
        "echo \$ZSH_RESTART_COUNT \$TORCHELASTIC_RESTART_COUNT \$TORCHELASTIC_MAX_RESTARTS \$RANK \$WORLD_SIZE \$MASTER_PORT \$ZSH_SNAPSHOT_DIR \$([ -d \"\$ZSH_SNAPSHOT_DIR\" ] && echo there)
         $all_up
         if [ \$ZSH_RESTART_COUNT = 0 ]; then [ \$RANK = 2 ] && exit 3; exec sleep $mark; fi" "$tmp"
    rc=$(cat "$tmp/rc")
    [ "$rc" = 0 ] || echo "exit $rc, expected 0: $(cat "$tmp/err")"
    out=$(awk '{ print $1, $2, $3, $4, $5 }' "$tmp/out" | sort | paste -sd,)
    want="0 0 2 0 4,0 0 2 1 4,0 0 2 2 4,0 0 2 3 4,1 1 2 0 3,1 1 2 1 3,1 1 2 2 3"
    [ "$out" = "$want" ] || echo "ranks started: $out, expected $want"
    [ "$(awk '{ print $6 }' "$tmp/out" | sort -u | grep -c .)" = 2 ] ||
        echo "the restart did not get a port of its own: $(cat "$tmp/out")"
    # One snapshot directory for every start, there while they run, gone after.
    out=$(awk '{ print $7, $8 }' "$tmp/out" | sort -u)
    if [ -d /dev/shm ]; then
        { [ "$(echo "$out" | grep -c .)" = 1 ] && [ "${out#* }" = there ]; } ||
            echo "ZSH_SNAPSHOT_DIR of the starts: $out"
        [ ! -e "${out% *}" ] || echo "${out% *} is left after the job"
    fi
    grep -Eq '^zshrun: rank 2 \(pid [0-9]+\) exited with status 3$' "$tmp/err" &&
        grep -qx 'zshrun: restart 1 of 2 with 3 ranks (1 lost)' "$tmp/err" ||
        echo "stderr: $(cat "$tmp/err")"
    leftovers
}
result a_lost_rank_restarts_the_job_without_it_with_the_restart_count "$(restarted)"

# Every start loses rank 0: restarts run out, or the ranks fall below
# --min-ranks; the job then ends with the failure's status.
given_up() {
    local rc
    rm -f "$tmp"/up.*
    run_timed "$tmp/rc" "$tmp/ms" -n 3 --max-restarts 1 --no-prefix sh -c \
        "echo \$WORLD_SIZE; $all_up; [ \$RANK = 0 ] && exit 3; exec sleep $mark" "$tmp"
    rc=$(cat "$tmp/rc")
    [ "$rc" = 3 ] || echo "--max-restarts 1: exit $rc, expected 3"
    [ "$(sort -u "$tmp/out" | paste -sd' ')" = "2 3" ] || echo "--max-restarts 1 ran: $(cat "$tmp/out")"
    grep -qx 'zshrun: no restart left (--max-restarts 1)' "$tmp/err" || echo "stderr: $(cat "$tmp/err")"
    rm -f "$tmp"/up.*
    run_timed "$tmp/rc" "$tmp/ms" -n 3 --max-restarts 5 --min-ranks 2 --no-prefix sh -c \
        "echo \$WORLD_SIZE; $all_up; [ \$RANK = 0 ] && exit 3; exec sleep $mark" "$tmp"
    rc=$(cat "$tmp/rc")
    [ "$rc" = 3 ] || echo "--min-ranks 2: exit $rc, expected 3"
    [ "$(sort -u "$tmp/out" | paste -sd' ')" = "2 3" ] || echo "--min-ranks 2 ran: $(cat "$tmp/out")"
    grep -qx 'zshrun: not restarting: 1 rank left, fewer than --min-ranks 2' "$tmp/err" ||
        echo "stderr: $(cat "$tmp/err")"
    leftovers
}
result restarts_end_when_they_run_out_or_would_fall_below_min_ranks "$(given_up)"

demo_job() {
    local out
    out=$(timeout 60 "$zshrun" -n 4 "$demo" -n 4096 -i 2 2>&1) || echo "exit $?"
    echo "$out" | grep -q '^\[0\] zsh_demo: ZeRO step in miniature on 4 rank(s)$' &&
        echo "$out" | grep -q '^\[0\]   verified: yes$' || echo "$out"
}
result zsh_demo_runs_as_a_four_rank_job "$(demo_job)"

# At ZSH_LOG_LEVEL=info rank 0's store says when it runs without a key.
train_job() {
    local out
    out=$(ZSH_LOG_LEVEL=info timeout 60 "$zshrun" -n 2 "$train" --steps 2 --hidden 16 --layers 1 \
        --batch 8 2>&1) || echo "exit $?"
    echo "$out" | grep -q '^\[0\] step 2 loss ' || echo "no step 2: $out"
    echo "$out" | grep -q 'unauthenticated' && echo "the store ran without a key: $out"
    true
}
result zsh_train_bootstraps_two_ranks_through_an_authenticated_store "$(train_job)"

# two_nodes KEY0 KEY1: two zshruns of 2 ranks each, one job of 4.
two_nodes() {
    local port
    port=$("$zshrun" --no-prefix sh -c 'echo $MASTER_PORT')
    for node in 0 1; do
        eval "key=\$$((node + 1))"
        ZSH_JOB_KEY=$key ZSH_STORE_TIMEOUT=5 timeout 60 "$zshrun" --nnodes 2 --node-rank $node -n 2 \
            --master-addr 127.0.0.1 --master-port "$port" "$demo" -n 4096 -i 1 \
            >"$tmp/node$node" 2>&1 &
        eval "pid$node=$!"
    done
    wait "$pid0"
    echo $? >"$tmp/rc0"
    wait "$pid1"
    echo $? >"$tmp/rc1"
}

nodes() {
    two_nodes 0123456789abcdef-shared 0123456789abcdef-shared
    [ "$(cat "$tmp/rc0") $(cat "$tmp/rc1")" = "0 0" ] ||
        echo "exits $(cat "$tmp/rc0") $(cat "$tmp/rc1"): $(cat "$tmp/node0" "$tmp/node1")"
    grep -q '^\[0\] zsh_demo: ZeRO step in miniature on 4 rank(s)$' "$tmp/node0" &&
        grep -q '^\[0\]   verified: yes$' "$tmp/node0" || echo "node 0: $(cat "$tmp/node0")"
    grep -q unauthenticated "$tmp/node0" "$tmp/node1" && echo "a node warned of no key"
    # A node with another key is refused by rank 0's store.
    two_nodes 0123456789abcdef-shared 0123456789abcdef-OTHER
    [ "$(cat "$tmp/rc1")" != 0 ] || echo "node 1 with another key joined"
    grep -q "refused this rank's job key" "$tmp/node1" || echo "node 1: $(cat "$tmp/node1")"
}
result two_nodes_with_a_shared_key_form_one_job_and_another_key_is_refused "$(nodes)"

# refused RC NEEDLE ARGS...: exit RC, NEEDLE in the message, no rank started.
refused() {
    local want=$1 needle=$2 rc
    shift 2
    rm -f "$tmp/started"
    "$zshrun" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = "$want" ] || echo "zshrun $*: exit $rc, expected $want"
    grep -qF -- "$needle" "$tmp/err" || echo "zshrun $*: no '$needle' in: $(cat "$tmp/err")"
    [ -e "$tmp/started" ] && echo "zshrun $*: a rank started"
    true
}

bad_input() {
    local start=(sh -c "touch $tmp/started") n
    for n in 0 -1 1025 abc '' ' 2' 2x; do
        refused 2 "--nproc-per-node '$n' is not a whole number from 1 to 1024" -n "$n" "${start[@]}"
    done
    refused 2 "--nproc-per-node '0' is not" --nproc-per-node 0 "${start[@]}"
    refused 2 "--nnodes '0' is not a whole number from 1 to 1024" --nnodes 0 "${start[@]}"
    refused 2 "--node-rank 2 is not below --nnodes 2" --nnodes 2 --node-rank 2 \
        --master-addr h --master-port 1 "${start[@]}"
    refused 2 "--nnodes 2 needs --master-addr" --nnodes 2 --master-port 29500 "${start[@]}"
    refused 2 "--nnodes 2 needs --master-port" --nnodes 2 --master-addr h "${start[@]}"
    refused 2 "--master-port '70000' is not a whole number from 1 to 65535" --master-port 70000 "${start[@]}"
    refused 2 "--max-restarts '1001' is not a whole number from 0 to 1000" --max-restarts 1001 "${start[@]}"
    refused 2 "--min-ranks '0' is not a whole number from 1 to 1024" --min-ranks 0 "${start[@]}"
    refused 2 "--min-ranks 5 is above the job's 4 ranks" -n 4 --min-ranks 5 "${start[@]}"
    refused 2 "--min-ranks 9 is above the job's 8 ranks" -n 4 --min-ranks 9 --nnodes 2 \
        --node-rank 0 --master-addr h --master-port 1 "${start[@]}"
    refused 2 "--master-port 65535 for the nodes' restarts: give one below 65535" --max-restarts 1 \
        --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port 65535 "${start[@]}"
    refused 2 "--join-timeout 'x' is not a number of seconds from 0 to 86400" --join-timeout x \
        "${start[@]}"
    refused 2 "--grace '-1' is not a number of seconds from 0 to 86400" --grace -1 "${start[@]}"
    refused 2 "unrecognized option '--bogus'" --bogus "${start[@]}"
    refused 2 "no program to run" -n 2
    refused 127 "zshrun: cannot run 'zsh-no-such-program': No such file or directory" -n 2 zsh-no-such-program
    refused 127 "cannot run '$tmp/nothing': No such file or directory" "$tmp/nothing"
    printf '#!/bin/sh\ntouch %s/started\n' "$tmp" >"$tmp/noexec"
    refused 126 "cannot run '$tmp/noexec': Permission denied" "$tmp/noexec"
    refused 2 "--job-key-file $tmp/nokey: No such file or directory" --job-key-file "$tmp/nokey" "${start[@]}"
    echo short >"$tmp/shortkey"
    refused 2 "the key in $tmp/shortkey has 5 characters, fewer than the 16" --job-key-file "$tmp/shortkey" "${start[@]}"
    ZSH_JOB_KEY=short refused 2 "ZSH_JOB_KEY has 5 characters, fewer than the 16" "${start[@]}"
    refused 2 "--bind 'socket' is not one of none, core, numa" --bind socket "${start[@]}"
    HWLOC_SYNTHETIC="numa:2 core:2 pu:1" refused 2 "--bind core: 5 ranks but 4 cores to run on" \
        --bind core -n 5 "${start[@]}"
    # set but empty (a failed $(cat keyfile)) is not "no key"
    ZSH_JOB_KEY= refused 2 "ZSH_JOB_KEY has 0 characters, fewer than the 16" "${start[@]}"
}
result bad_input_is_refused_with_a_message_before_any_rank_starts "$(bad_input)"

# Binding. Each rank prints "RANK CPUS" (its Cpus_allowed_list).
cpus_of() {
    timeout 20 "$zshrun" --no-prefix "$@" sh -c \
        'echo $RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)' | sort -n
}
# The cores of the CPU list $1 (core and package ids from sysfs).
cores_in() {
    local part cpu
    for part in $(echo "$1" | tr ',' ' '); do
        for cpu in $(seq "${part%-*}" "${part#*-}"); do
            cat "/sys/devices/system/cpu/cpu$cpu/topology/physical_package_id" \
                "/sys/devices/system/cpu/cpu$cpu/topology/core_id" 2>/dev/null | paste -sd:
        done
    done | sort -u | grep -c .
}
bind() {
    local own cores out n r list numa args
    own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
    cores=$(cores_in "$own")
    # The plan on made-up machines (hwloc's synthetic topology, reported and
    # not applied): blocks spread over the NUMA nodes, one core per rank.
    plan() { HWLOC_SYNTHETIC="numa:2 core:2 pu:1" timeout 20 "$zshrun" --report-bindings "$@" true 2>&1 |
             sed 's/ (not applied: not this machine.s topology)$//'; }
    out=$(plan -n 2)
    [ "$out" = "zshrun: rank 0 bound to core 0 (cpus 0) of NUMA node 0
zshrun: rank 1 bound to core 2 (cpus 2) of NUMA node 1" ] || echo "2 ranks on 2 NUMA nodes of 2 cores: $out"
    out=$(plan -n 3)
    [ "$out" = "zshrun: rank 0 bound to core 0 (cpus 0) of NUMA node 0
zshrun: rank 1 bound to core 1 (cpus 1) of NUMA node 0
zshrun: rank 2 bound to core 2 (cpus 2) of NUMA node 1" ] || echo "3 ranks on 2 NUMA nodes of 2 cores: $out"
    out=$(plan -n 5)
    [ "$out" = "zshrun: ranks left unbound (more ranks than cores: none shares a core)" ] ||
        echo "5 ranks on 4 cores: $out"
    out=$(plan --bind numa -n 5 | awk '{ print $3, $7, $8, $9 }' | paste -sd' ')
    [ "$out" = "0 node 0 (cpus 1 node 0 (cpus 2 node 0 (cpus 3 node 1 (cpus 4 node 1 (cpus" ] ||
        echo "--bind numa, 5 ranks on 2 NUMA nodes: $out"
    # This machine: a core each where there are cores enough.
    if [ "$cores" -ge 2 ]; then
        out=$(cpus_of -n 2)
        [ "$(echo "$out" | awk '{ print $2 }' | sort -u | grep -c .)" = 2 ] || echo "-n 2: ranks share CPUs: $out"
        for list in $(echo "$out" | awk '{ print $2 }'); do
            [ "$(cores_in "$list")" = 1 ] || echo "-n 2: a rank is not on one core: $out"
        done
    fi
    # More ranks than cores, --bind none and one rank: unbound, on zshrun's own CPUs.
    for args in "-n $((cores + 1))" "--bind none -n 2" "-n 1"; do
        # shellcheck disable=SC2086
        out=$(cpus_of $args)
        n=${args##* }
        [ "$(echo "$out" | grep -c " $own\$")" = "$n" ] || echo "$args: not every rank on $own: $out"
    done
    # --bind numa: each rank on the CPUs of a NUMA node.
    numa=$(cat /sys/devices/system/node/node*/cpulist 2>/dev/null)
    [ -n "$numa" ] || numa=$own
    for list in $(cpus_of --bind numa -n 2 | awk '{ print $2 }'); do
        echo "$numa" | grep -qx "$list" || echo "--bind numa: a rank on $list, no NUMA node's CPUs ($numa)"
    done
    # zshrun's own CPU set is what it counts: 2 ranks in one CPU stay unbound there.
    if command -v taskset >/dev/null && [ "$cores" -ge 2 ]; then
        r=${own%%[-,]*}
        out=$(taskset -c "$r" "$zshrun" --no-prefix --report-bindings -n 2 true 2>&1)
        [ "$out" = "zshrun: ranks left unbound (more ranks than cores: none shares a core)" ] ||
            echo "taskset -c $r, 2 ranks: $out"
    fi
}
result ranks_are_bound_a_core_each_over_numa_nodes_unless_they_outnumber_the_cores "$(bind)"

# Huge pages for the ranks' malloc: glibc.malloc.hugetlb=1 added to what the
# user has, never over the user's own hugetlb choice, not with --no-thp or
# one rank; and where the kernel offers transparent huge pages, a large
# block a rank fills is backed by them.
thp() {
    local out want py_huge
    out=$(env -u GLIBC_TUNABLES timeout 20 "$zshrun" -n 2 --no-prefix sh -c 'echo "${GLIBC_TUNABLES-unset}"' | sort -u)
    [ "$out" = glibc.malloc.hugetlb=1 ] || echo "default: GLIBC_TUNABLES '$out'"
    out=$(GLIBC_TUNABLES=glibc.malloc.arena_max=2 timeout 20 "$zshrun" -n 2 --no-prefix sh -c 'echo "$GLIBC_TUNABLES"' | sort -u)
    [ "$out" = glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1 ] || echo "appended: GLIBC_TUNABLES '$out'"
    out=$(GLIBC_TUNABLES=glibc.malloc.hugetlb=0 timeout 20 "$zshrun" -n 2 --no-prefix sh -c 'echo "$GLIBC_TUNABLES"' | sort -u)
    [ "$out" = glibc.malloc.hugetlb=0 ] || echo "the user's hugetlb: GLIBC_TUNABLES '$out'"
    out=$(env -u GLIBC_TUNABLES timeout 20 "$zshrun" -n 2 --no-thp --no-prefix sh -c 'echo "${GLIBC_TUNABLES-unset}"' | sort -u)
    [ "$out" = unset ] || echo "--no-thp: GLIBC_TUNABLES '$out'"
    out=$(env -u GLIBC_TUNABLES timeout 20 "$zshrun" -n 1 --no-prefix sh -c 'echo "${GLIBC_TUNABLES-unset}"')
    [ "$out" = unset ] || echo "one rank: GLIBC_TUNABLES '$out'"
    # The pages themselves: where the kernel hands out huge pages on advice
    # and glibc knows the tunable (2.35 on).
    [ -n "$py" ] && [ -r /proc/self/smaps_rollup ] || return 0
    grep -qE '\[(madvise|always)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || return 0
    case $(getconf GNU_LIBC_VERSION 2>/dev/null) in
    "glibc 2."3[5-9]* | "glibc 2."[4-9][0-9]*) ;;
    *) return 0 ;;
    esac
    py_huge='b = bytearray(b"\x01") * (64 << 20)
print([l for l in open("/proc/self/smaps_rollup") if l.startswith("AnonHugePages")][0].split()[1])'
    # At least one huge page: the kernel falls back to small ones where
    # its memory is too fragmented for more.
    out=$(env -u GLIBC_TUNABLES timeout 60 "$zshrun" -n 2 --no-prefix "$py" -c "$py_huge" | sort -n | head -1)
    [ "${out:-0}" -ge 2048 ] 2>/dev/null || echo "a filled 64 MiB block has ${out:-?} kB in huge pages"
    out=$(env -u GLIBC_TUNABLES timeout 60 "$zshrun" -n 2 --no-thp --no-prefix "$py" -c "$py_huge" | sort -n | tail -1)
    want=$(grep -q '\[always\]' /sys/kernel/mm/transparent_hugepage/enabled && echo any || echo 0)
    [ "$want" = any ] || [ "$out" = 0 ] || echo "--no-thp: $out kB in huge pages"
}
result ranks_get_huge_pages_for_malloc_unless_told_otherwise "$(thp)"

help_version() {
    local out opt
    out=$("$zshrun" --help) || echo "--help exited $?"
    for opt in -n, --nproc-per-node --nnodes --node-rank --master-addr --master-port --job-key-file \
        --max-restarts --min-ranks --grace --no-prefix --no-thp --bind --report-bindings --help --version; do
        echo "$out" | grep -q -- "$opt" || echo "--help lacks $opt"
    done
    out=$("$zshrun" --version) || echo "--version exited $?"
    [ -z "${PACKAGE_VERSION-}" ] || [ "$out" = "zshrun (ZeroShard) $PACKAGE_VERSION" ] ||
        echo "--version: $out"
    # Multi-node without a key: one warning, and the ranks still run.
    out=$(timeout 20 "$zshrun" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port 1 -n 2 true 2>&1) ||
        echo "multi-node without a key exited $?"
    [ "$(echo "$out" | grep -c 'is unauthenticated')" = 1 ] || echo "expected one warning: $out"
}
result help_version_and_the_keyless_multi_node_warning "$(help_version)"

results_end
