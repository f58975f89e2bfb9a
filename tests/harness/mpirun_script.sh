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
