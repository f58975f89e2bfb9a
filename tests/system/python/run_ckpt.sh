#!/bin/bash
# zeroshard.torch.ZeRO.save / load (tests/system/python/ckpt_body.py), at 2
# ranks then at 1: 10 steps straight against 5 + save + a new ZeRO + load + 5,
# the same losses bit for bit at stages 0-3 (and with bf16 and its loss
# scaler, SGD with momentum, new hyperparameters overridden by the loaded
# ones, a stage 1 checkpoint at stage 3); a flipped byte in a shard file and
# another model's checkpoint refused with ZshError, the module and the
# optimizer unchanged; zsh_ckpt consolidate read back by
# zeroshard.checkpoint.load_consolidated (skipped without tools/zsh_ckpt);
# then the 2-rank checkpoints resumed at 1 rank (the first loss within 1e-6).
# Skipped, with the reason, when the package or torch is missing. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/system/python/ckpt_body.py
py_setup python_ckpt torch
tool=$builddir/tools/zsh_ckpt
[ -x "$tool" ] || tool=
# Both jobs' checkpoints, under the directory py_setup removes at exit.
dir=$log/ckpt
mkdir -p "$dir"
py_job np2 2 "$(py_count_cases "$script" CASES_NP2)" "$script" np2 "$dir" "$tool"
py_job np1 1 "$(py_count_cases "$script" CASES_NP1)" "$script" np1 "$dir" "$tool"
py_summary
