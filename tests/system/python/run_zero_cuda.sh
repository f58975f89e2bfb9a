#!/bin/bash
# zeroshard.torch.ZeRO on a CUDA module (tests/python/test_zero_torch_cuda.py),
# once per rank at 1 rank by default (NCCL refuses two ranks on one GPU):
# examples/torch/train_gpt.py's GPT at stages 0-3 and at stage 3 with the
# optimizer in host memory, and a small ViT at stages 0-3, against the same
# model trained by plain torch on the device with torch.optim.AdamW (losses
# within 1e-5 over 20 and 6 steps); state dicts on the device, checkpoints
# refused by name, a module on two devices refused. Every case skips, with
# the reason, without a CUDA device (tests/system/gpu/skips.sh makes a skip
# fail on the GPU machine), and the whole script without the package or
# torch. ZSH_PYTEST_SIZES picks the rank counts (one GPU per rank).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_zero_torch_cuda.py
py_setup python_zero_cuda torch
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-1}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
