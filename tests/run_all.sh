#!/bin/bash
# The whole test suite, in the build tree made by contrib/debian-setup.sh:
# unit and in-process rank tests, the torchrun-style bootstrap across
# processes, the rank tests under mpirun at 1, 2, 3, 4, 5 and 8 ranks, and
# make install into a temporary prefix used through Lmod, Environment Modules
# and pkg-config; then make distcheck; then the sanitizer runs and the fuzzer.
# Ends with one line: "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
cd "$build" || { echo "no build in $build: run contrib/debian-setup.sh"; echo "0 passed, 1 failed"; exit 1; }

# Each stage's duration, printed as it ends and again before the summary.
stage_times=
stage_start=$SECONDS
stage_done() { # NAME
    local t=$((SECONDS - stage_start))
    echo "== stage $1: $((t / 60)) min $((t % 60)) s"
    stage_times="$stage_times$(printf '   %-12s %4d min %2d s' "$1" $((t / 60)) $((t % 60)))
"
    stage_start=$SECONDS
}

# In process, the unit tests and the rank tests at 4 and 5 ranks: under
# mpirun the rank tests run as processes at every count of the strategy
# (tests/system/mpi/run.sh), and in process the other counts run under the
# memory checkers below (1 under valgrind, 2 and 3 under AddressSanitizer, 2
# and 8 under ThreadSanitizer), so each in-process count runs once or twice
# in all instead of two to four times (docs/DECISIONS.md, "The test house's
# time"). A plain make check runs every count in process.
plain_filter=${GTEST_FILTER-}
if [ -z "${GTEST_FILTER+set}" ] && [ "${ZSH_SANITIZERS:-1}" != 0 ]; then
    plain_filter='-*/np1:*/np2:*/np3:*/np8'
fi
# The longest tests start first (tests/harness/long_first.sh), one more at a
# time than there are cores: the scripts spend much of their time waiting
# (on a timeout they test, on a cut link, on a peer's start), and in a
# clean-clone run this stage kept 1.3 of the 2 cores busy on average.
tests=$(bash "$top/tests/harness/long_first.sh" | tr '\n' ' ')
# The install test runs in make distcheck's make installcheck below, on the
# tree distcheck installs, not on a build of its own here.
if [ "${ZSH_DISTCHECK:-1}" != 0 ]; then
    tests=${tests/tests\/system\/install\/run_install.sh /}
fi
jobs=$(($(nproc) + 1))
if [ -n "$plain_filter" ]; then
    GTEST_FILTER=$plain_filter make -j"$jobs" check TESTS="$tests" >check.out 2>&1
else
    make -j"$jobs" check TESTS="$tests" >check.out 2>&1
fi
rc=$?
stage_done check

# make distcheck: the tarball carries every file git tracks (Makefile.am's
# distcheck-hook), builds the library, the tools and the Python package out
# of tree with read-only sources, installs and uninstalls cleanly, and passes
# the tests that read the tree there: the manual, the layers, the Python
# package. The whole suite ran in the plain build above, and running it again
# here took most of distcheck's time (docs/testing.md); so did building the
# test programs and running the unit tests at 1 rank, which the plain build
# (out of tree too, from the same files) and make valgrind run, so
# check_PROGRAMS is left empty (docs/DECISIONS.md, "The test house's time").
# Its make installcheck runs the install
# test on the tree it installed (its log in the plain build's tests/, counted
# as the test's own): run in the plain stage it configured and built a tree
# of its own, a third build. It builds without debug information (-O2
# alone): the pybind11 module's files compile faster, and nothing here reads
# it. Counted as one test.
# ZSH_DISTCHECK=0 leaves it out.
distcheck_tests="tests/system/build/run_config_page.sh tests/system/build/run_manual.sh
    tests/system/build/run_layers.sh tests/system/python/run_comm.sh"
rm -f tests/distcheck.log tests/system/install/run_install.sh.log
if [ $rc = 0 ] && [ "${ZSH_DISTCHECK:-1}" != 0 ]; then
    start=$SECONDS
    if ZSH_INSTALLCHECK_LOG=$PWD/tests/system/install/run_install.sh.log \
        make -j"$(nproc)" distcheck DISTCHECK_CONFIGURE_FLAGS='CFLAGS=-O2 CXXFLAGS=-O2' \
            TESTS="$(echo $distcheck_tests)" check_PROGRAMS= >distcheck.out 2>&1; then
        printf '[       OK ] dist.make_distcheck_builds_and_tests_the_tarball (%d s)\n[  PASSED  ] 1 test.\n' \
            $((SECONDS - start)) >tests/distcheck.log
    else
        rc=1
        tail -40 distcheck.out
        { echo "[  FAILED  ] dist.make_distcheck_builds_and_tests_the_tarball"
          tail -40 distcheck.out
          echo "[  PASSED  ] 0 tests."
          echo "[  FAILED  ] 1 test, listed above"; } >tests/distcheck.log
    fi
    stage_done distcheck
elif [ $rc != 0 ]; then
    printf '[  SKIPPED ] dist.make_distcheck_builds_and_tests_the_tarball: make check failed\n[  SKIPPED ] 1 test.\n' \
        >tests/distcheck.log
fi
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' check.out
# Every test's log, from make check's TESTS, so that a new test counts from
# its first run (a list kept by hand here had missed 13 of 50); then the
# README's first command's (tests/main_job.log, when .ci/run ran it first)
# and make distcheck's.
mapfile -t logs < <(printf '%s\n' tests/main_job.log tests/distcheck.log
                    make -s print-tests | tr ' ' '\n' | sed -n 's/..*/&.log/p')
for log in "${logs[@]}"; do
    [ -f "$log" ] || continue
    echo "== $log"
    grep -E '^(\[  FAILED  \]|\[  SKIPPED \]|\[  PASSED  \]|\[rank [0-9]+\]|=== )' "$log"
done
if [ $rc != 0 ] && ! ls "${logs[@]}" >/dev/null 2>&1; then
    tail -40 check.out
fi

# The suite again under AddressSanitizer, LeakSanitizer and UBSan (in
# build-asan/), the in-process rank tests under ThreadSanitizer (build-tsan/),
# libFuzzer on the TCP store's frame decoder, a checkpoint's manifest and the
# safetensors header made of one for ZSH_FUZZ_SECONDS in all (60 s on both
# cores, three tests), and make valgrind (the unit tests and the rank tests at 1 rank
# under memcheck). Their GoogleTest logs count below. ZSH_SANITIZERS=0 leaves
# them out.
if [ "${ZSH_SANITIZERS:-1}" != 0 ]; then
    bash "$top/tests/system/sanitizers/run.sh" address || rc=1
    stage_done asan
    bash "$top/tests/system/sanitizers/run.sh" thread || rc=1
    stage_done tsan
    echo "== libFuzzer: tests/system/fuzz/run_fuzz.sh ${ZSH_FUZZ_SECONDS:-60}"
    bash "$top/tests/system/fuzz/run_fuzz.sh" "${ZSH_FUZZ_SECONDS:-60}" >tests/fuzz.log 2>&1 || rc=1
    tail -4 tests/fuzz.log
    stage_done fuzz
    echo "== make valgrind"
    make valgrind >tests/valgrind.log 2>&1 || {
        rc=1
        printf '[  FAILED  ] valgrind: memcheck errors in %s\n[  FAILED  ] 1 test, listed above\n' \
            "$build/tests/valgrind.log" >>tests/valgrind.log
    }
    # The summaries, memcheck's error counts and how long each shard ran.
    grep -E '^(\[  (PASSED|FAILED|SKIPPED) +\] [0-9]|==[0-9]+== ERROR SUMMARY|=== (shard )?[0-9]+ (of|shards,) )' \
        tests/valgrind.log
    stage_done valgrind
    logs+=("${logs[@]/#/${ZSH_ASAN_BUILD_DIR:-$top/build-asan}/}"
           "${ZSH_TSAN_BUILD_DIR:-$top/build-tsan}/tests/zsh_tests.log" tests/fuzz.log
           tests/valgrind.log)
fi

# GoogleTest's summary lines, from every log (one per gtest run).
count() {
    cat "${logs[@]}" 2>/dev/null |
        sed -n "s/^\[  $1 *\] \([0-9][0-9]*\) tests\{0,1\}[.,].*/\1/p" |
        awk '{ n += $1 } END { print n + 0 }'
}
# Distinct test cases, from every log's result lines (GoogleTest's, the
# scripts' and the Python jobs'): a rank test counts once whatever its rank
# counts (/npN, in a GoogleTest name or a Python job's), and a case once
# however many runs (in process, under mpirun, under each sanitizer) ran it.
# A case that ran somewhere counts; one that only ever skipped here (the GPU
# cases on a machine without one, say) is counted apart.
case_results() {
    cat "${logs[@]}" 2>/dev/null |
        sed -n 's/^\[ *\(OK\|FAILED\|SKIPPED\) *\] \([A-Za-z0-9_/]*\.[A-Za-z0-9_/]*\).*/\1 \2/p' |
        sed -E 's#/np[0-9]+##g' | sort -u
}
distinct() { # ran | skip_only
    case_results | awk -v want="$1" '
        { if ($1 == "SKIPPED") skipped[$2] = 1; else ran[$2] = 1 }
        END {
            n = 0
            if (want == "ran") { for (c in ran) n++ }
            else { for (c in skipped) if (!(c in ran)) n++ }
            print n
        }'
}
# What failed, from each failing log: GoogleTest's failure lines and the
# message under each, so that a run whose output is cut to its tail still
# says why.
for log in "${logs[@]}"; do
    [ -f "$log" ] && grep -q '^\[  FAILED  \] [0-9]' "$log" || continue
    echo "== failures in $log"
    grep -A8 -E '(: Failure$|^\[  FAILED  \] [A-Za-z])' "$log" | head -60
done
passed=$(count PASSED)
failed=$(count FAILED)
skipped=$(count SKIPPED)
if [ $rc != 0 ] && [ "$failed" = 0 ]; then
    failed=1 # the build or a harness failed without a test to blame
fi
echo "== stages (wall clock):"
printf '%s' "$stage_times"
echo "$(distinct ran) distinct test cases ran (C, the scripts and Python; $(distinct skip_only) more" \
     "can only skip on this machine and are not counted); below, each counts once per rank count" \
     "and per run"
echo "$passed passed, $failed failed, $skipped skipped"
[ $rc = 0 ]
