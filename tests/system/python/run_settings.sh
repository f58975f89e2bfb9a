#!/bin/bash
# The optimizer's settings (tests/python/test_settings.py) at 1 and 2 ranks:
# the module's list of them against zsh_optim_config_t's fields and docs in
# include/zeroshard/optim.h, the manual's tables, the keywords of
# zeroshard.Optimizer and zeroshard.torch.ZeRO and the policies; policies and
# keywords give the same config and the same steps, and a setting given both
# ways is refused. Skipped, with the reason, when the package is missing
# (the ZeRO case when torch is). Ends with a GoogleTest-style summary that
# tests/run_all.sh counts (see ranks.sh).
set -u
. "$(dirname "$0")/ranks.sh"
script=$srcdir/tests/python/test_settings.py
py_setup python_settings numpy
want=$(py_count_cases "$script")
for n in ${ZSH_PYTEST_SIZES:-1 2}; do
    py_job "np$n" "$n" "$want" "$script"
done
py_summary
