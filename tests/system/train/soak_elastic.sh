#!/bin/bash
# The long form of run_elastic.sh, not part of make check: its cases again
# and again with fresh seeds until at least ZSH_ELASTIC_SOAK_KILLS ranks
# (default 20) were killed at random moments, each job's later losses and
# final checkpoint checked against a job started by hand. Every seed is
# printed, so a failure is replayed with ZSH_ELASTIC_SEED=... run_elastic.sh.
# Run from the build tree: bash ../tests/system/train/soak_elastic.sh
set -u
want=${ZSH_ELASTIC_SOAK_KILLS:-20}
per_run=4 # one kill in the first case, two in the second, one in the third
done_kills=0 failed=0 runs=0
out=$(mktemp)
while [ $done_kills -lt "$want" ]; do
    seed=$((RANDOM * 32768 + RANDOM))
    if ZSH_ELASTIC_SEED=$seed ZSH_ELASTIC_KILLS=2 bash "$(dirname "$0")/run_elastic.sh" >"$out" 2>&1; then
        grep '^kill ' "$out"
    else
        failed=$((failed + 1))
        echo "seed $seed FAILED:"
        cat "$out"
    fi
    runs=$((runs + 1))
    done_kills=$((done_kills + per_run))
done
rm -f "$out"
echo "$done_kills kills in $runs runs, $failed run(s) failed"
[ $failed = 0 ]
