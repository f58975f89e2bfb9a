#!/bin/bash
# The test suite under a sanitizer, in a build tree of its own:
#   bash tests/system/sanitizers/run.sh [address|thread]
# address (default): AddressSanitizer, LeakSanitizer and UBSan in build-asan/,
#   running every test of make check but the install test, which configures
#   and installs a second, uninstrumented tree, the pip test, which builds the
#   Python module into a venv against an installed copy (a Python process
#   cannot load an instrumented library that it did not start with), the
#   GPU script's test, which runs configure on made-up toolkits, and the
#   packagers' configure options' test (packaging, not memory safety: they
#   run in the plain build).
# thread: ThreadSanitizer in build-tsan/, running tests/zsh_tests, where the
#   in-process rank tests run every rank as a thread of one process (at 2 and
#   8 ranks).
# Builds with clang (configure --enable-sanitizers), so that
# tests/system/sanitizers/asan_known_bugs.txt can leave known bugs uninstrumented,
# and with line tables for debug information: the reports name every frame's
# file and line, and the build takes less CPU than with -g.
# GoogleTest logs land in the build tree's tests/, where tests/run_all.sh
# counts them; the exit status is make check's.
set -u
mode=${1:-address}
top=$(cd "$(dirname "$0")/../../.." && pwd)
. "$top/tests/system/sanitizers/env.sh"
case $mode in
address)
    build=${ZSH_ASAN_BUILD_DIR:-$top/build-asan}
    flags="-gline-tables-only -O1 -fsanitize-ignorelist=$top/tests/system/sanitizers/asan_known_bugs.txt"
    # malloc's stacks through frame pointers (the fast unwinder): the full
    # one took 1.6 to 3.3 times the CPU of the scripts that call malloc most
    # (zsh_bench under mpirun: 43.6 s against 13.1 s). The leak suppressions
    # (third-party libraries only) match on the first frame past malloc,
    # which is the library's own; the jobs that load Open MPI's plugins
    # (tests/harness/mpirun_script.sh's CALLS_MPI_INIT) unwind in full, and
    # Open MPI keeps its plugins loaded so that their frames have names.
    export ASAN_OPTIONS=fast_unwind_on_malloc=1:detect_leaks=1
    export LSAN_OPTIONS=suppressions=$top/contrib/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1
    export OMPI_MCA_mca_base_component_disable_dlclose=1
    # The rank tests run in process at every rank count under this sanitizer
    # and as processes under mpirun at every count in the plain build: here
    # mpirun runs them once, at 3 ranks (not a power of two).
    export ZSH_MPI_TEST_SIZES=${ZSH_MPI_TEST_SIZES:-3}
    # The same for zsh_bench's per-collective cases, and mpirun's launches
    # on the simulated cluster left to the plain build (their MPI_Init
    # unwinds in full, above). Trials that repeat one case at random moments
    # (a rank killed mid-checkpoint, a link cut mid-collective) run in full
    # in the plain build; here two and three, enough to cover each path
    # (both tiers of the crash, both cluster shapes) under the sanitizer.
    export ZSH_BENCH_TEST_SIZES=${ZSH_BENCH_TEST_SIZES:-3}
    export ZSH_CLUSTER_MPIRUN=${ZSH_CLUSTER_MPIRUN:-0}
    export ZSH_CKPT_CRASH_TRIALS=${ZSH_CKPT_CRASH_TRIALS:-2}
    export LINK_FAULT_TRIALS=${LINK_FAULT_TRIALS:-2} LINK_FAULT_TRIALS_3=${LINK_FAULT_TRIALS_3:-1}
    # Without the checkpoint's tests, most of that job's time (the files each
    # process writes and reads): they run in process here at 2 and 3 ranks,
    # and under mpirun at every count in the plain build.
    export ZSH_MPI_TEST_FILTER=${ZSH_MPI_TEST_FILTER--ckpt.*}
    # In process, the unit tests and the rank tests at 2 and 3 ranks: each
    # rank count runs under one memory checker, not three (1 under valgrind,
    # which also sees reads of uninitialized memory; 8 under
    # ThreadSanitizer; 4 and 5 in tests/run_all.sh's plain build; every
    # count as processes under mpirun there). 2 takes the two-rank paths (the
    # mailbox's ticket, the pair exchanges), 3 an odd, uneven partition of
    # every buffer.
    export GTEST_FILTER=${GTEST_FILTER:--*/np1:*/np4:*/np5:*/np8}
    echo "== known bugs left uninstrumented (tests/system/sanitizers/asan_known_bugs.txt):"
    grep -E '^(fun|src):' "$top/tests/system/sanitizers/asan_known_bugs.txt" || echo "   none"
    ;;
thread)
    build=${ZSH_TSAN_BUILD_DIR:-$top/build-tsan}
    flags="-gline-tables-only -O1"
    export TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:suppressions=$top/contrib/tsan.supp
    # The unit tests (the update threads, the I/O engine's queues) and the
    # rank tests at 2 and 8 ranks: the two-rank paths, and the most threads
    # contending for one communicator's progress. 1 rank has no peer thread
    # to race with; 3, 4 and 5 add no interleaving that 2 and 8 lack (3 runs
    # under AddressSanitizer, 4 and 5 in the plain build). The checkpoint's
    # rank tests save and load files through the same threads at 2 ranks as
    # at 8, where they took a quarter of the plain run's 8-rank time; so do
    # the offload tier's fault tests, whose step-undo case was the longest of
    # this run at 8 ranks (docs/DECISIONS.md, "The test house's time").
    export GTEST_FILTER=${GTEST_FILTER:--*/np1:*/np3:*/np4:*/np5:ckpt.*/np8:optim_offload_fault.*/np8}
    ;;
*)
    echo "usage: $0 [address|thread]" >&2
    exit 2
    ;;
esac

echo "== $mode sanitizer build in $build"
mkdir -p "$build" && cd "$build" || exit 1
if [ ! -f Makefile ]; then
    [ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null 2>&1)
    "$top/configure" --enable-sanitizers="$mode" CC=clang CXX=clang++ \
        CFLAGS="$flags" CXXFLAGS="$flags" >configure.out 2>&1 || { tail -30 configure.out; exit 1; }
fi
# ThreadSanitizer runs one program: build that, not the tools, the Python
# module and the other test programs (half the build's time).
if [ "$mode" = thread ]; then
    make -j"$(nproc)" tests/zsh_tests >make.out 2>&1
else
    make -j"$(nproc)" >make.out 2>&1 && make -j"$(nproc)" check TESTS= >>make.out 2>&1
fi || { tail -50 make.out; exit 1; }

if [ "$mode" = address ]; then
    # The longest first (tests/harness/long_first.sh).
    tests=$(bash "$top/tests/harness/long_first.sh" |
        grep -Ev '^tests/system/(install/run_install|gpu/run_gpu_script|python/run_pip|build/run_configure_pkg)\.sh$')
else
    tests=tests/zsh_tests
fi
echo "== make check TESTS='$(echo $tests)'"
find tests -name '*.log' -delete 2>/dev/null
# One more test at a time than there are cores, as in tests/run_all.sh's
# plain stage: 1.7 of 2 cores were busy on average here.
make -j"$(($(nproc) + 1))" check TESTS="$(echo $tests)" >check.out 2>&1
rc=$?
# A test stopped by a sanitizer (or failed by a leak report at exit) may end
# without a GoogleTest failure summary: count each such one as one failure.
for t in $(sed -n 's/^\(FAIL\|ERROR\): //p' check.out); do
    grep -q '^\[  FAILED  \] [0-9]* tests\{0,1\}[.,]' "$t.log" 2>/dev/null ||
        printf '[  FAILED  ] %s under %s sanitizer: see %s\n[  FAILED  ] 1 test, listed above\n' \
            "$t" "$mode" "$build/$t.log" >>"$t.log"
done
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' check.out
for t in $tests; do
    grep -HE '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?[.,]' "$t.log" 2>/dev/null
done
if [ $rc != 0 ]; then
    find tests -name '*.log' -exec grep -hE \
        'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|SUMMARY: |runtime error' {} + \
        2>/dev/null | sort | uniq -c | sort -rn | head -20
    # The first reports in full, each with the test that was running, so a
    # failure seen once (a race needs its interleaving) says where it was.
    for t in $tests; do
        awk -v where="$build/$t.log" '
            /^\[ RUN      \]/ { test = $4 }
            /^(WARNING|ERROR): (Address|Leak|Thread)Sanitizer/ {
                if (++n > 3) exit
                printf "== report %d in %s, during %s:\n", n, where, test
                lines = 40
            }
            lines > 0 { print; lines--; if (/^SUMMARY: /) lines = 0 }
        ' "$t.log" 2>/dev/null
    done
fi
exit $rc
