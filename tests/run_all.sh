#!/bin/bash
# The whole test suite, in the build tree made by contrib/debian-setup.sh:
# unit and in-process rank tests, the torchrun-style bootstrap across
# processes, and the rank tests under mpirun at 1, 2, 3, 4, 5 and 8 ranks.
# Ends with one line: "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
cd "$build" || { echo "no build in $build: run contrib/debian-setup.sh"; echo "0 passed, 1 failed"; exit 1; }

make -j"$(nproc)" check >check.out 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' check.out
logs=(tests/zsh_tests.log tests/boot/run_env.sh.log tests/mpi/run.sh.log
      tests/train/run_train.sh.log)
for log in "${logs[@]}"; do
    [ -f "$log" ] || continue
    echo "== $log"
    grep -E '^(\[  FAILED  \]|\[  SKIPPED \]|\[  PASSED  \]|\[rank [0-9]+\]|=== )' "$log"
done
if [ $rc != 0 ] && ! ls "${logs[@]}" >/dev/null 2>&1; then
    tail -40 check.out
fi

# GoogleTest's summary lines, from every log (one per gtest run).
count() {
    cat "${logs[@]}" 2>/dev/null |
        sed -n "s/^\[  $1 *\] \([0-9][0-9]*\) tests\{0,1\}[.,].*/\1/p" |
        awk '{ n += $1 } END { print n + 0 }'
}
passed=$(count PASSED)
failed=$(count FAILED)
skipped=$(count SKIPPED)
if [ $rc != 0 ] && [ "$failed" = 0 ]; then
    failed=1 # the build or a harness failed without a test to blame
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $rc = 0 ]
