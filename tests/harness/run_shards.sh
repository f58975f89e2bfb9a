#!/bin/bash
# tests/harness/shards.sh, the runner of make check and make valgrind, on a
# made-up tests/zsh_tests that reports which shard it ran: every shard runs
# once, at most ZSH_TEST_JOBS at a time, and a free job takes the next shard
# while a long one runs; the exit status is the shards' together; --wrap puts
# a program before every shard's; bad counts are refused by name. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts.
set -u
here=$(cd "$(dirname "$0")" && pwd)
shards="$here/shards.sh"
# shellcheck source=results.sh
. "$here/results.sh"
results_begin shards 9
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The made-up test binary: a shard marks itself running in $FAKE/running
# while it runs and done in $FAKE/done when it ends, notes how many were
# running as it started, prints a GoogleTest summary, and exits with
# $FAKE_RC (default 0; shard 2 with $FAKE_RC2 if set). Shard $FAKE_WAIT_FOR_ALL, if set, ends only once
# every other shard has (at most 120 s, far above the milliseconds they
# take), else it fails.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/zsh_tests" <<'EOF'
#!/bin/bash
i=${GTEST_SHARD_INDEX:-none}
touch "$FAKE/running/$i"
ls "$FAKE/running" | wc -l >>"$FAKE/concurrent"
echo "shard $i of ${GTEST_TOTAL_SHARDS:-none}, args: $*"
others_done() { [ "$(ls "$FAKE/done" | wc -l)" = $((GTEST_TOTAL_SHARDS - 1)) ]; }
if [ "$i" = "${FAKE_WAIT_FOR_ALL:-}" ]; then
    . "$HARNESS/poll.sh"
    if ! poll 120 others_done; then
        echo "shard $i: the other shards did not all end while it ran"
        rm "$FAKE/running/$i"
        exit 1
    fi
fi
rm "$FAKE/running/$i"
touch "$FAKE/done/$i"
echo "[  PASSED  ] 1 test."
[ "$i" = 2 ] && exit "${FAKE_RC2:-${FAKE_RC:-0}}"
exit "${FAKE_RC:-0}"
EOF
chmod +x "$tmp/bin/zsh_tests"
# A wrapper, as valgrind would be.
cat >"$tmp/bin/wrapper" <<'EOF'
#!/bin/bash
echo "wrapped by $1"
shift
exec "$@"
EOF
chmod +x "$tmp/bin/wrapper"

# run NAME [VAR=VALUE...] -- ARGS...: shards.sh ARGS with the variables set,
# in a fresh $FAKE; its output in $tmp/NAME.out, its status in $rc.
run() {
    local name=$1 vars=()
    shift
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    export FAKE=$tmp/$name HARNESS=$here
    mkdir -p "$FAKE/running" "$FAKE/done"
    env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX "${vars[@]}" \
        bash "$shards" "$@" >"$tmp/$name.out" 2>&1
    rc=$?
}

# every shard once, in order, with its index and the total; the arguments passed on
every_shard() {
    local i want=
    [ $rc = 0 ] || echo "exit $rc"
    for ((i = 0; i < 8; i++)); do
        want="$want$(printf '=== shard %d of 8: exit 0, SECS s\nshard %d of 8, args: --a b\n[  PASSED  ] 1 test.\n' $i $i)
"
    done
    diff <(printf '%s' "$want") <(grep -v '^=== [0-9]' "$tmp/every.out" | sed 's/ [0-9]* s$/ SECS s/')
}
run every ZSH_TEST_SHARDS=8 ZSH_TEST_JOBS=2 -- "$tmp/bin/zsh_tests" --a b
result_check every_shard_runs_once_in_order_with_its_index_and_the_total every_shard

at_most_jobs() {
    local most
    most=$(sort -n "$tmp/every/concurrent" | tail -1)
    [ "$most" -le 2 ] || echo "$most shards ran at once, with ZSH_TEST_JOBS=2"
    [ "$(grep -c . "$tmp/every/concurrent")" = 8 ] || echo "$(grep -c . "$tmp/every/concurrent") shards started, not 8"
}
result_check no_more_than_zsh_test_jobs_shards_run_at_once at_most_jobs

# Shard 0 ends only after all the others: with 2 jobs, the second must run
# shards 1 to 7 one after the other while the first holds shard 0. Running
# the shards in rounds of 2 would have shard 0 wait for shards it holds up.
run long ZSH_TEST_SHARDS=8 ZSH_TEST_JOBS=2 FAKE_WAIT_FOR_ALL=0 -- "$tmp/bin/zsh_tests"
long_shard() {
    [ $rc = 0 ] || { echo "exit $rc:"; cat "$tmp/long.out"; }
}
result_check a_free_job_takes_the_next_shard_while_a_long_one_runs long_shard

# The default: four shards per job.
run default ZSH_TEST_JOBS=3 -- "$tmp/bin/zsh_tests"
four_per_job() {
    [ $rc = 0 ] && [ "$(grep -c '^=== shard [0-9]* of 12:' "$tmp/default.out")" = 12 ] ||
        { echo "exit $rc:"; cat "$tmp/default.out"; }
}
result_check by_default_four_shards_per_job four_per_job

# One shard that fails fails the run, and every shard's report is printed;
# all skipping is a skip, some skipping a pass.
statuses() {
    run fail ZSH_TEST_SHARDS=4 ZSH_TEST_JOBS=2 FAKE_RC=3 -- "$tmp/bin/zsh_tests"
    [ $rc = 3 ] && [ "$(grep -c '^\[  PASSED  \]' "$tmp/fail.out")" = 4 ] ||
        { echo "every shard exiting 3: exit $rc"; cat "$tmp/fail.out"; }
    run skip ZSH_TEST_SHARDS=4 ZSH_TEST_JOBS=2 FAKE_RC=77 -- "$tmp/bin/zsh_tests"
    [ $rc = 77 ] || echo "every shard skipping: exit $rc, not 77"
    run one_fails ZSH_TEST_SHARDS=4 ZSH_TEST_JOBS=2 FAKE_RC2=1 -- "$tmp/bin/zsh_tests"
    [ $rc = 1 ] || { echo "one shard of 4 failing: exit $rc, not 1"; cat "$tmp/one_fails.out"; }
    run one_runs ZSH_TEST_SHARDS=4 ZSH_TEST_JOBS=2 FAKE_RC=77 FAKE_RC2=0 -- "$tmp/bin/zsh_tests"
    [ $rc = 0 ] || echo "three shards of 4 skipping: exit $rc, not 0"
}
result_check a_failed_shard_fails_the_run_and_all_skipped_is_a_skip statuses

# --wrap: the wrapper before the program in every shard.
run wrap ZSH_TEST_SHARDS=3 ZSH_TEST_JOBS=2 -- --wrap "$tmp/bin/wrapper" valgrind -- "$tmp/bin/zsh_tests"
wrapped() {
    [ $rc = 0 ] && [ "$(grep -c '^wrapped by valgrind$' "$tmp/wrap.out")" = 3 ] &&
        [ "$(grep -c '^shard [0-2] of 3' "$tmp/wrap.out")" = 3 ] || { echo "exit $rc:"; cat "$tmp/wrap.out"; }
}
result_check wrap_puts_the_wrapper_before_every_shards_program wrapped

# Not split: ZSH_TEST_SHARDS=1, and any program but tests/zsh_tests.
unsplit() {
    run one ZSH_TEST_SHARDS=1 -- --wrap "$tmp/bin/wrapper" w -- "$tmp/bin/zsh_tests"
    [ $rc = 0 ] && [ "$(cat "$tmp/one.out")" = "wrapped by w
shard none of none, args: 
[  PASSED  ] 1 test." ] || { echo "ZSH_TEST_SHARDS=1: exit $rc:"; cat "$tmp/one.out"; }
    cp "$tmp/bin/zsh_tests" "$tmp/bin/other_tests"
    run other ZSH_TEST_SHARDS=4 -- "$tmp/bin/other_tests"
    [ $rc = 0 ] && [ "$(grep -c '^shard none of none' "$tmp/other.out")" = 1 ] ||
        { echo "another program: exit $rc:"; cat "$tmp/other.out"; }
}
result_check one_shard_or_another_program_runs_once_unsplit unsplit

# Bad input: exit 2, naming what is wrong.
refused() { # NAME WANT VAR=VALUE... -- ARGS
    local name=$1 want=$2
    shift 2
    run "$name" "$@"
    [ $rc = 2 ] && grep -qF -- "$want" "$tmp/$name.out" ||
        { echo "$name: exit $rc, no '$want' in:"; cat "$tmp/$name.out"; }
}
bad_counts() {
    refused zero "ZSH_TEST_SHARDS='0' is not a count of 1 or more" ZSH_TEST_SHARDS=0 -- "$tmp/bin/zsh_tests"
    refused word "ZSH_TEST_JOBS='two' is not a count of 1 or more" ZSH_TEST_JOBS=two -- "$tmp/bin/zsh_tests"
}
result_check bad_counts_are_refused_by_name bad_counts
result_check a_wrapper_without_its_end_is_refused refused nodash \
    "needs a -- between the wrapper and the program" -- --wrap valgrind "$tmp/bin/zsh_tests"
results_end
