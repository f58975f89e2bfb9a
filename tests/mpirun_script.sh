# What the script tests that run a tool under mpirun share; sourced, with
# SUITE set to the name their results are reported under. Sets up mpirun
# (skipping when there is none), a scratch folder $out, the counters, and
#   result NAME OK [DETAIL]   one GoogleTest-style result line
#   summary                   the summary lines tests/run_all.sh counts;
#                             exits 1 if anything failed
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

summary() {
    echo "[  PASSED  ] $passed tests."
    [ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped tests, listed above"
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed tests, listed above"
        exit 1
    fi
    exit 0
}
