#!/bin/bash
# What the simulated cluster's test scripts share (sourced after cluster.sh):
# a log directory and the traps that remove the cluster with it,
# GoogleTest-style results that tests/run_all.sh counts (tests/harness/results.sh),
# and a torchrun-style launch of one rank per node argument.

# shellcheck source=../../harness/results.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../harness/results.sh"

# cases_begin SUITE: results are SUITE.NAME; sets $log and the traps. The
# caller sets $results_expected, the number of results it will report.
cases_begin() {
    results_begin "$1" 0
    log=$(mktemp -d)
    # cluster.sh reads it: the traps below remove the cluster.
    # shellcheck disable=SC2034
    CLUSTER_TRAPS=0
    trap 'cluster_destroy; rm -rf "$log"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# restart_stop TAG: after a kill, the step the restart of job TAG trains
# to, in $stop and in $log/TAG.stop, where the restart's shell waits for it:
# $steps, or past the last step the job printed, however late the kill came
# (the survivors cannot train beyond the step in flight: every step needs
# every rank). Its last_step TAG gives that step.
restart_stop() {
    stop=$(($(last_step "$1") + every))
    [ "$stop" -ge "$steps" ] || stop=$steps
    echo "$stop" >"$log/$1.stop.tmp" && mv "$log/$1.stop.tmp" "$log/$1.stop"
}

# snapshot_line NAME: the shell line the snapshot scripts' ranks start
# under zshrun. Rank 0 marks each start; at the first restart each node's
# first rank copies its node's snapshot directory to "$SNAP.NAME" for the
# job by hand (NAME, such as '$(hostname)', expanded by the rank's shell); a
# restart waits for restart_stop's file ($STOP), resumes and trains to it.
snapshot_line() {
    # shellcheck disable=SC2016 # the ranks' shell expands it
    printf '%s\n' '[ "$RANK" = 0 ] && echo "start $ZSH_RESTART_COUNT $WORLD_SIZE"' \
        '[ "$ZSH_RESTART_COUNT" = 1 ] && [ "$LOCAL_RANK" = 0 ] && cp -a "$ZSH_SNAPSHOT_DIR" "$SNAP.'"$1"'"' \
        '[ "$ZSH_RESTART_COUNT" = 0 ] || until [ -e "$STOP" ]; do sleep 0.05; done' \
        'exec "$0" "$@" $([ "$ZSH_RESTART_COUNT" != 0 ] && echo --resume --steps "$(cat "$STOP")")'
}

# launch_env NODES...: one rank per argument (its node), torchrun-style,
# running "${run[@]}" under `timeout ${launch_timeout:-120}` with the
# variables in "${launch_vars[@]}" besides the launcher's; output of rank r
# in $log/out.r (stdout and stderr), status in $log/rc.r.
launch_env() {
    local np=$# p r n local_rank pids=()
    local -A seen=()
    p=$((20000 + (RANDOM % 20000)))
    r=0
    for n in "$@"; do
        local_rank=$((seen[$n]++))
        (
            cluster_exec "$n" env RANK=$r WORLD_SIZE=$np LOCAL_RANK=$local_rank \
                LOCAL_WORLD_SIZE="$(printf '%s\n' "$@" | grep -cx "$n")" GROUP_RANK="$n" \
                MASTER_ADDR="${CLUSTER_ADDRS[0]}" MASTER_PORT="$p" ZSH_TIMEOUT=60 \
                "${launch_vars[@]}" timeout "${launch_timeout:-120}" "${run[@]}" \
                >"$log/out.$r" 2>&1
            echo $? >"$log/rc.$r"
        ) &
        pids+=($!)
        r=$((r + 1))
    done
    wait "${pids[@]}"
}
