#!/bin/bash
# torch's own test cases of torch.distributed over the zsh backend
# (tests/python/torch_dist_cases.py): a fast set of every operation of gloo's
# that ZeroShard took on (send/recv, from any source, isend/irecv, reduce,
# gather, scatter, all_gather_coalesced, all_reduce_coalesced, all_to_all,
# monitored_barrier) at 2 and 3 ranks, each job's ranks started once. The
# cases torch marks for CUDA or small worlds skip with torch's reason.
# `run_torch_dist.sh --all` runs every case of those operations instead
# (minutes). Skipped, with the reason, when the package or torch is missing.
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/torch_dist_cases.py
py_setup python_torch_dist torch
want=$(PYTHONPATH=$pkg "$python" "$script" --count "$@")
for n in ${ZSH_PYTEST_SIZES:-2 3}; do
    TEMP_DIR=$log/torch.np$n
    mkdir -p "$TEMP_DIR/barrier" "$TEMP_DIR/test_dir"
    export TEMP_DIR
    py_job "np$n" "$n" "$want" "$script" "$@"
done
py_summary
