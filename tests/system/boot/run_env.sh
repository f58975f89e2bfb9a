#!/bin/bash
# zsh_comm_init() from torchrun-style variables, as real processes: every
# case launches tests/system/boot/env_rank once per rank and checks the outcome.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tests/system/boot/env_rank"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin boot_env 8 # one result per case below

# shellcheck source=../../harness/free_port.sh
. "$(dirname "$0")/../../harness/free_port.sh"
port() { free_port; }

# launch NAME NRANKS 'VARS for rank $r' [DELAY_RANK0]: run all ranks, wait,
# and leave rank r's exit status in $log/rc.r and its output in $log/out.r.
launch() {
    local n=$2 vars=$3 delay=${4:-0} r
    rm -f "$log"/*
    for ((r = 0; r < n; r++)); do
        (
            [ "$r" = 0 ] && sleep "$delay"
            eval "env $vars timeout 60 $prog" >"$log/out.$r" 2>&1
            echo $? >"$log/rc.$r"
        ) &
    done
    wait
}

# launch_store NAME NRANKS 'VARS with @PORT@' [DELAY_RANK0]: launch on a random
# port for rank 0's store, and again on another one if something else on the
# machine took that port first.
launch_store() {
    local try
    for try in 1 2 3; do
        launch "$1" "$2" "${3//@PORT@/$(port)}" "${4:-0}"
        grep -q "Address already in use" "$log/out.0" || return 0
    done
}

# check NAME N EXPECTED_RC [GREP]: every rank exited EXPECTED_RC and its
# output matches GREP.
check() {
    local name=$1 n=$2 want=$3 pattern=${4:-} r ok=1
    for ((r = 0; r < n; r++)); do
        if [ "$(cat "$log/rc.$r")" != "$want" ]; then
            ok=0
        elif [ -n "$pattern" ] && ! grep -q "$pattern" "$log/out.$r"; then
            ok=0
        fi
    done
    if [ $ok = 1 ]; then
        result_as OK "$name"
    else
        result_as FAILED "$name" "$(for ((r = 0; r < n; r++)); do
            echo "rank $r exited $(cat "$log/rc.$r"): $(cat "$log/out.$r")"
        done)"
    fi
}

launch_store torchrun_names 4 'RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=@PORT@'
check four_ranks_from_torchrun_variables_form_one_communicator 4 0 "of 4: ok"

launch_store prefixed 3 'RANK=7 WORLD_SIZE=9 ZSH_RANK=$r ZSH_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 ZSH_MASTER_PORT=@PORT@ MASTER_PORT=1'
check prefixed_variables_win_over_torchrun_names 3 0 "of 3: ok"

launch_store late_server 3 'RANK=$r WORLD_SIZE=3 MASTER_ADDR=localhost MASTER_PORT=@PORT@' 1
check ranks_wait_for_a_store_that_starts_late 3 0 "of 3: ok"

launch missing 2 'RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1'
check missing_master_port_is_named 2 2 "MASTER_PORT"

launch malformed 1 'RANK=zero WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=1234'
check malformed_rank_is_named 1 2 "RANK='zero'"

# A launcher of the other kind: each rank of mpirun -np 2 with a stale
# WORLD_SIZE=1, or one rank of mpirun -np 1 where WORLD_SIZE says 2. Either
# would be a job of its own; both must fail naming the two launchers.
launch mpirun_beside_world_size_1 2 'OMPI_COMM_WORLD_SIZE=2 RANK=0 WORLD_SIZE=1'
check launcher_of_two_with_world_size_1_is_refused_naming_both 2 2 \
    "WORLD_SIZE=1, but OMPI_COMM_WORLD_SIZE=2: an MPI launcher.*zshrun or torchrun"
launch_store pmi_of_one 2 'PMI_SIZE=1 RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=@PORT@'
check launcher_of_one_with_world_size_2_is_refused_naming_both 2 2 \
    "WORLD_SIZE=2, but PMI_SIZE=1: an MPI launcher.*zshrun -n 2"

# Only ranks 0 and 1 of 3 start: they must give up within the store timeout.
start=$SECONDS
launch_store absent_rank 2 'RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=@PORT@ ZSH_STORE_TIMEOUT=2'
if [ $((SECONDS - start)) -le 20 ]; then
    check absent_rank_fails_with_a_timeout_instead_of_hanging 2 2 "timed out\|TIMEOUT\|time"
else
    result_as FAILED absent_rank_fails_with_a_timeout_instead_of_hanging \
        "took $((SECONDS - start)) s, more than 20"
fi

# A case that never reported (an early exit, a branch without its result)
# fails the count results_end checks.
results_end
