#!/bin/bash
# The torch.distributed backend "zsh" on CUDA tensors
# (tests/python/test_torch_cuda.py), once per rank: every collective on the
# device path against the host path, the current stream and a side stream,
# async Work ordering the caller's stream, DDP on the GPU against gloo on the
# CPU, mixed devices and host-only calls refused by name. One rank by
# default (ZSH_PYTEST_SIZES): NCCL refuses two ranks on one GPU, and rank r
# takes GPU LOCAL_RANK (here RANK). Without a GPU the device cases are
# reported skipped with the reason; the backend's registration, the refusals
# of tensors that claim a GPU, and the device path's Work, write-backs and
# timeout with torch.cuda faked on the CPU run everywhere. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_torch_cuda.py
py_setup python_torch_cuda torch
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-1}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
