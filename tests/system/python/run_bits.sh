#!/bin/bash
# torch.optim's bits in fp32 (tests/python/test_torch_bits.py, once per rank
# at 1 and 2 ranks): the update rules against torch.optim.AdamW, Adam and SGD
# (for-loop and foreach) on odd lengths and tiny gradients over 25 steps, and
# zeroshard.torch.ZeRO at stages 0-3 training models nobody here wrote
# (torchvision's, nn.Transformer, LSTM and GRU) and a ResNet-style network
# with BatchNorm to the losses, parameters and eval outputs of DDP over gloo +
# torch.optim, bit for bit. Skipped, with the reason, when the package or torch is missing.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts (see
# ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_torch_bits.py
py_setup python_bits torch
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-1 2}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
