#!/bin/bash
# A job under a bounded address space: 8 ranks under ulimit -v 2000000 and
# 4 under ulimit -v 1000000 (KiB) run all-gathers, reduce-scatters and
# all-reduces from a few bytes to a megabyte, so that mailboxes, boards and
# direct copies are all used, on the world communicator and one split off it.
# UCX's own shared memory fits there; the mailboxes and boards must too
# (ZSH_SHM_MAX). Then a ZSH_SHM_MAX too small for one line fails
# zsh_comm_init on every rank with a message naming ZSH_SHM_MAX and
# ZSH_SHM=0. Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tests/system/shm/shm_rank"
SUITE=shm_ulimit
. "$(dirname "$0")/../../harness/mpirun_script.sh"
expected=3

# Every rank prints "ok" and the job exits 0, within address space @limit.
job_fits() { # NP LIMIT_KIB
    local np=$1 limit=$2 log="$out/np$1.log" rc
    (ulimit -v "$limit" && timeout 120 "$MPIRUN" --oversubscribe -np "$np" "$prog") \
        </dev/null >"$log" 2>&1
    rc=$?
    if [ $rc != 0 ] || [ "$(grep -c ": ok (" "$log")" != "$np" ]; then
        echo "$np ranks under ulimit -v $limit exited $rc:"
        tail -n 15 "$log"
        return 1
    fi
}

# AddressSanitizer reserves terabytes of address space for its shadow
# memory at start, so an instrumented rank cannot start under any ulimit -v
# (a libtool build keeps the real program in .libs/).
if grep -qa __asan_init "$prog" "$(dirname "$prog")/.libs/"*shm_rank 2>/dev/null; then
    for name in eight_ranks_run_collectives_under_ulimit_v_2000000 \
                four_ranks_run_collectives_under_ulimit_v_1000000; do
        result_skip "$name" "AddressSanitizer's shadow memory needs more address space than any ulimit -v leaves"
    done
else
    check eight_ranks_run_collectives_under_ulimit_v_2000000 job_fits 8 2000000
    check four_ranks_run_collectives_under_ulimit_v_1000000 job_fits 4 1000000
fi
# What rank 0 of each job reserved, for the log.
sed -n 's/^rank 0 of \([0-9]*\): ok (\(.*\))/=== \1 ranks, rank 0: \2/p' "$out/np8.log" \
    "$out/np4.log" 2>/dev/null

# A budget below one line: zsh_comm_init fails on every rank, naming the
# variable that raises it and the one that turns shared memory off.
too_small() {
    local log="$out/small.log"
    # mpirun would kill the other rank once the first fails: let each finish
    # (mpirun then exits 0, so each rank's own line tells that it failed).
    ZSH_SHM_MAX=4k timeout 120 "$MPIRUN" --oversubscribe --mca orte_abort_on_non_zero_status 0 \
        -x ZSH_SHM_MAX -np 2 "$prog" </dev/null >"$log" 2>&1
    if grep -q ": ok (" "$log"; then
        echo "ZSH_SHM_MAX=4k: a rank succeeded"
        return 1
    fi
    if [ "$(grep -c "^zsh_comm_init: .*ZSH_SHM_MAX (4096 bytes).*ZSH_SHM=0" "$log")" != 2 ]; then
        echo "ZSH_SHM_MAX=4k: no message naming ZSH_SHM_MAX and ZSH_SHM=0 on both ranks:"
        tail -n 15 "$log"
        return 1
    fi
}
check a_zsh_shm_max_below_one_line_fails_init_naming_it_and_zsh_shm too_small

summary
