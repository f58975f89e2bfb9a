#!/bin/bash
# The torch.distributed backend "zsh" (tests/python/test_torch_backend.py),
# once per rank: every collective, dtype and op against torch's arithmetic,
# groups, async work, point to point (from any source too), reduce, gather,
# scatter and all-to-all in unequal splits against gloo bit for bit,
# monitored_barrier, DDP and ZeroRedundancyOptimizer against gloo, at 2 and
# 3 ranks; mismatched calls raising ZeroShard's message on both ranks (a job
# of their own, since a mismatch revokes its group); init_process_group
# through env://, file:// and tcp://; a rank that
# never joins a collective (the others raise after the group's timeout) and a
# killed rank (the others raise naming it); a subgroup kept alive on one rank
# only closing in the same order as on the others. Skipped, with the reason, when the
# package or torch is missing. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_torch_backend.py
py_setup python_torch torch
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-2 3}; do
    py_job "np$n" "$n" "$want" "$script" cases
done
want=$(py_count_cases "$script" MISMATCH_CASES)
py_job mismatch 2 "$want" "$script" mismatch
py_job init_env 2 1 "$script" init_env
py_job init_file 2 1 "$script" init_file "$log/init_file"
py_job init_tcp 2 1 "$script" init_tcp "$(free_port)"
py_job timeout 3 1 "$script" timeout
py_job killed 3 1 "$script" killed
py_job close_order 2 1 "$script" close_order
py_summary
