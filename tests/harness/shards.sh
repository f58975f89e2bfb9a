#!/bin/bash
# Run a GoogleTest binary as ZSH_TEST_SHARDS shards (GoogleTest's sharding:
# GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX), ZSH_TEST_JOBS of them side by side,
# and print their reports one after the other: make check's LOG_COMPILER,
# which splits tests/zsh_tests, and make valgrind's runner.
#   bash tests/harness/shards.sh [--wrap WRAPPER... --] PROGRAM [ARGS...]
# WRAPPER (up to the first --) is put before PROGRAM in every shard's command:
# make valgrind's libtool --mode=execute valgrind and its options.
#
# The in-process rank tests are one long process that leaves a core idle
# while its ranks wait on each other, and that process is the longest test of
# every run (plain, ASan, TSan, valgrind); split, it is not. GoogleTest deals
# the tests out by index modulo the shard count, and the rank tests come in
# runs of /np1, /np2, ..., so with as many shards as cores the costly rank
# counts gather in some shards (with two shards, nearly every 2-rank test of
# make valgrind fell in the second; docs/DECISIONS.md has the times).
# So there are more shards than jobs (4 per job by default) and each job
# takes the next shard as it finishes one: a long shard then leaves its core
# the others' work rather than an idle wait, with no table of test times to
# keep up to date.
#
# Each shard's summary lines count in tests/run_all.sh like a run's; the
# "=== " lines say how long each shard ran. The exit status is 0 only if
# every shard's was; 77 (skip) if every shard skipped.
set -u
wrap=()
if [ "${1:-}" = --wrap ]; then
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        wrap+=("$1")
        shift
    done
    if [ $# = 0 ]; then
        echo "shards.sh: --wrap needs a -- between the wrapper and the program" >&2
        exit 2
    fi
    shift
fi
if [ $# = 0 ]; then
    echo "usage: shards.sh [--wrap WRAPPER... --] PROGRAM [ARGS...]" >&2
    exit 2
fi

# count NAME DEFAULT: the variable's value, a whole number from 1 up.
count() {
    local v=${!1:-$2}
    if ! [[ $v =~ ^[0-9]+$ ]] || [ "$v" -lt 1 ]; then
        echo "shards.sh: $1='$v' is not a count of 1 or more" >&2
        exit 2
    fi
    echo "$v"
}
jobs=$(count ZSH_TEST_JOBS "$(nproc 2>/dev/null || echo 1)") || exit 2
n=$(count ZSH_TEST_SHARDS $((4 * jobs))) || exit 2
# Only the rank tests are split: the fault tests (tests/zsh_fault_tests) fork
# and kill ranks of their own and take seconds.
case ${1##*/} in
zsh_tests) ;;
*) n=1 ;;
esac
if [ "$n" = 1 ] || [ -n "${GTEST_TOTAL_SHARDS:-}" ]; then
    exec "${wrap[@]}" "$@"
fi
[ "$jobs" -le "$n" ] || jobs=$n

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shard I: its output in $tmp/I.out, then its exit status and seconds in $tmp/I.rc.
shard() {
    local start=$SECONDS
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$1 "${wrap[@]}" "${@:2}" >"$tmp/$1.out" 2>&1
    echo "$? $((SECONDS - start))" >"$tmp/$1.rc"
}
# done_count: the shards that have ended.
done_count() {
    local f c=0
    for f in "$tmp"/*.rc; do
        [ -e "$f" ] && c=$((c + 1))
    done
    echo $c
}
# The running shards are counted from their status files, and each shard is
# waited for by its process id until it is gone: a wait that returns with a
# shard still running (a bash wait once left two of eight valgrind shards
# behind that way) then neither starts one shard too many nor cuts the run
# short.
start=$SECONDS
pids=()
for ((i = 0; i < n; i++)); do
    while [ $((i - $(done_count))) -ge "$jobs" ]; do
        wait -n 2>/dev/null || sleep 1
    done
    shard "$i" "$@" &
    pids+=($!)
done
for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null; do
        wait "$p" 2>/dev/null || sleep 1
    done
done

echo "=== $n shards of: ${wrap[*]:+${wrap[*]} }$*"
echo "=== $jobs at a time (GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=I reruns shard I)"
rc=0
skips=0
for ((i = 0; i < n; i++)); do
    s=1 secs='?'
    [ -f "$tmp/$i.rc" ] && read -r s secs <"$tmp/$i.rc"
    echo "=== shard $i of $n: exit $s, $secs s"
    cat "$tmp/$i.out"
    case $s in
    0) ;;
    77) skips=$((skips + 1)) ;;
    *) rc=$s ;;
    esac
done
echo "=== $n shards, $jobs at a time: $((SECONDS - start)) s"
[ $rc = 0 ] && [ $skips = "$n" ] && rc=77
exit $rc
