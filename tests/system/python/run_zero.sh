#!/bin/bash
# zeroshard.torch.ZeRO (tests/python/test_zero_torch.py), once per rank at 4
# and 3 ranks: examples/torch/train_gpt.py at stages 0-3 against
# DistributedDataParallel over gloo with torch.optim.AdamW (losses within
# 1e-5 over 20 steps), stage 3's parameter bytes against stage 0's, modules
# with tied, reused and in-place parts against plain torch, stage 3's units
# (nn.Transformer, torchvision's ViT and Swin, checkpointing, frozen and
# unused parameters, the unit policies) against stage 0, state dicts,
# mixed precision, the offload tiers (stage 3 with states and parameters in
# files under /var/tmp, stage 2 with states in host memory: the same losses
# bit for bit, the host buffer budget kept, no files left) and the refusals.
# Skipped, with the reason, when the package or torch is missing. Ends with
# a GoogleTest-style summary that tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_zero_torch.py
py_setup python_zero torch
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-4 3}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
