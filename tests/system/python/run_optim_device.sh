#!/bin/bash
# zeroshard.Optimizer's device side where it runs without a GPU
# (tests/python/test_optim_device.py, one rank): the GPU machine's driver
# tests/system/gpu/zero_torch.py in its host mode against torch.optim.AdamW,
# and its skip (77) without a device; tensors on neither the CPU nor CUDA,
# or on another device than the parameters, refused by name; the stream
# setting. The device runs are tests/system/gpu/run.sh's. Skipped, with the
# reason, when the package or torch is missing. Ends with a GoogleTest-style
# summary that tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_optim_device.py
py_setup python_optim_device torch,numpy
want=$(py_count_cases "$script")
py_job np1 1 "$want" "$script"
py_summary
