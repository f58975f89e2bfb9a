#!/bin/bash
# zeroshard.Comm from Python at 1, 2 and 4 ranks: tests/python/test_comm.py
# runs once per rank with the torchrun-style variables (RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT on a free port) and the build tree's package on
# PYTHONPATH. A case passes when every rank reports it passed. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_comm.py
py_setup python_comm numpy
want=$(py_count_cases "$script")
# At 4 ranks the broadcasts run the binomial tree, whose descriptors go
# through the transport, so that a call on the shared-memory board meets one
# that went the other way (test_mismatch_board_all_reduce_against_broadcasts_*);
# at 2 ranks they run as the rule picks (eager, direct).
for n in ${ZSH_PYTEST_SIZES:-1 2 4}; do
    if [ "$n" -ge 3 ]; then
        ZSH_BROADCAST_ALGO=binomial py_job "np$n" "$n" "$want" "$script"
    else
        py_job "np$n" "$n" "$want" "$script"
    fi
done
py_summary
