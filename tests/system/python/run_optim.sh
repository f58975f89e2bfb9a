#!/bin/bash
# zeroshard.Optimizer against torch.optim at 1, 2 and 4 ranks
# (tests/python/test_optim_vs_torch.py, once per rank): SGD (momentum,
# Nesterov, weight decay), Adam and AdamW, clipping against
# clip_grad_norm_, bf16/fp16 parameters with fp32 master weights, and fp16
# dynamic loss scaling against GradScaler's rules, each at stages 0-3 on the
# same gradients, compared after every step. Skipped, with the reason, when
# the package or torch is missing. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_optim_vs_torch.py
py_setup python_optim torch,numpy
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-1 2 4}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
