# What the script tests that run a tool under mpirun share; sourced, with
# SUITE set to the name their results are reported under. Sets up mpirun
# (skipping when there is none), a scratch folder $out, the results of
# tests/harness/results.sh under SUITE, and
#   result NAME OK [DETAIL]   one result: a pass when OK is 1, else a failure
#                             showing DETAIL (results.sh's result, in the form
#                             these scripts use)
#   check NAME COMMAND...     one result: COMMAND prints only what is wrong
#                             (results.sh's result_check)
#   summary                   results.sh's results_end; exits 1 if anything
#                             failed, or if the number of results differs from
#                             $expected, which the script sets to the number
#                             it reports
MPIRUN=${MPIRUN:-mpirun}
if [ -z "$MPIRUN" ]; then
    echo "mpirun not found: skipping the $SUITE runs"
    exit 77
fi
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Under AddressSanitizer (tests/system/sanitizers/run.sh) malloc's stacks are
# unwound the fast way, through frame pointers. A program that calls MPI_Init
# (CALLS_MPI_INIT=1: zsh_mpi_tests, zsh_bench's MPI baseline) loads Open
# MPI's plugins, built without them: the stacks of what those keep until exit
# end in an unknown module, and contrib/lsan.supp's Open MPI lines match
# only the full unwinder's stacks, which cost these jobs three times the CPU.
if [ "${CALLS_MPI_INIT:-0}" = 1 ] && [[ ${ASAN_OPTIONS:-} == *fast_unwind_on_malloc=1* ]]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS//fast_unwind_on_malloc=1/fast_unwind_on_malloc=0}
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=results.sh
. "$(dirname "${BASH_SOURCE[0]}")/results.sh"
results_begin "$SUITE"

result() { # NAME OK [DETAIL]
    if [ "$2" = 1 ]; then
        result_as OK "$1"
    else
        result_as FAILED "$1" "${3:-}"
    fi
}

check() { # NAME COMMAND...
    result_check "$@"
}

summary() {
    # A check that never reported (a loop cut short, a branch that forgot its
    # result) must not pass by its absence.
    results_expected=${expected:?set by the script: how many results it reports}
    results_end || exit 1
    exit 0
}
