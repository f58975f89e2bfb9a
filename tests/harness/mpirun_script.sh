# What the script tests that run a tool under mpirun share; sourced, with
# SUITE set to the name their results are reported under. Sets up mpirun
# (skipping when there is none), a scratch folder $out, the counters, and
#   result NAME OK [DETAIL]   one GoogleTest-style result line
#   check NAME COMMAND...     one result: COMMAND prints only what is wrong
#   summary                   the summary lines tests/run_all.sh counts;
#                             exits 1 if anything failed, or if the number
#                             of results differs from $expected, which the
#                             script sets to the number it reports
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
passed=0
failed=0
skipped=0

result() { # NAME OK [DETAIL]
    if [ "$2" = 1 ]; then
        echo "[       OK ] $SUITE.$1"
        passed=$((passed + 1))
    else
        echo "[  FAILED  ] $SUITE.$1"
        [ -n "${3:-}" ] && echo "$3" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

# A pass needs COMMAND to exit 0 and print nothing. Its exit status counts
# as well as its output: a grep -q that misses, or a run that dies without a
# word, prints nothing, and a failure still needs a detail to show.
check() { # NAME COMMAND...
    local name=$1 detail
    shift
    if detail=$("$@" 2>&1) && [ -z "$detail" ]; then
        result "$name" 1
    else
        result "$name" 0 "${detail:-$1 failed without printing why}"
    fi
}

summary() {
    local reported=$((passed + failed + skipped))
    # A check that never reported (a loop cut short, a branch that forgot its
    # result) must not pass by its absence.
    if [ "$reported" != "${expected:?set by the script: how many results it reports}" ]; then
        echo "[  FAILED  ] $SUITE: $reported results reported, $expected expected"
        failed=$((failed + 1))
    fi
    echo "[  PASSED  ] $passed tests."
    [ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped tests, listed above"
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed tests, listed above"
        exit 1
    fi
    exit 0
}
