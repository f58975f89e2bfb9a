#!/bin/bash
# Run a GoogleTest binary as ZSH_TEST_SHARDS processes side by side (default:
# one per core), each taking its share of the tests through GoogleTest's
# sharding (GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX), and print their reports
# one after the other: make check's LOG_COMPILER, which splits tests/zsh_tests. The in-process rank tests are one long process that
# leaves a core idle while its ranks wait on each other, and that process is
# the longest test of every run (plain, ASan, TSan); split, it is not.
# Each shard's summary lines count in tests/run_all.sh like a run's. The exit
# status is 0 only if every shard's was; 77 (skip) if every shard skipped.
#   bash tests/harness/shards.sh PROGRAM [ARGS...]
set -u
n=${ZSH_TEST_SHARDS:-$(nproc 2>/dev/null || echo 1)}
# Only the rank tests are split: the fault tests (tests/zsh_fault_tests) fork
# and kill ranks of their own and take seconds.
case ${1##*/} in
zsh_tests) ;;
*) n=1 ;;
esac
if [ "$n" -le 1 ] || [ -n "${GTEST_TOTAL_SHARDS:-}" ]; then
    exec "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
for ((i = 0; i < n; i++)); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i "$@" >"$tmp/$i.out" 2>&1 &
    pids+=($!)
done
rc=0
skips=0
for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}"
    s=$?
    case $s in
    0) ;;
    77) skips=$((skips + 1)) ;;
    *) rc=$s ;;
    esac
done
for ((i = 0; i < n; i++)); do
    echo "=== shard $i of $n: GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i $*"
    cat "$tmp/$i.out"
done
[ $rc = 0 ] && [ $skips = "$n" ] && rc=77
exit $rc
