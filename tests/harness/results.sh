#!/bin/bash
# GoogleTest-style results for test scripts, which tests/run_all.sh counts.
# Sourced:
#   results_begin SUITE [EXPECTED] the suite's name and how many results it reports
#                                  (passes, failures and skips); without EXPECTED
#                                  no count is checked, for results that are only
#                                  known as they come
#   result NAME DETAIL...          one result: a pass when DETAIL is empty, else a
#                                  failure showing DETAIL, each argument a line;
#                                  blank lines are dropped, so one of blank lines
#                                  only is a pass
#   result_as OK|FAILED NAME [DETAIL]
#                                  one result of the status given, showing DETAIL
#                                  under it if any; SKIPPED is result_skip
#   result_skip NAME WHY           one skipped result, WHY after its name
#   result_check NAME COMMAND...   a pass when COMMAND exits 0 and prints nothing,
#                                  else a failure showing what it printed
#   results_add OUTPUT             prints OUTPUT, what a subshell reported with
#                                  these functions, and counts its results here:
#                                  a subshell's counts end with it
#   results_end                    the summary; a run that reported another number of
#                                  results than it expected fails; returns 1 on failure
# The counts are $passed, $failed and $skipped; the suite's name and the number
# expected are $results_suite and $results_expected, which a script may set
# between results (a suite per job, cases known only later).
results_begin() {
    results_suite=$1
    results_expected=${2:-}
    passed=0
    failed=0
    skipped=0
}

result() {
    local detail
    detail=$(printf '%s\n' "${@:2}" | sed '/^[[:space:]]*$/d')
    if [ -z "$detail" ]; then
        result_as OK "$1"
    else
        result_as FAILED "$1" "$detail"
    fi
}

result_as() {
    case $1 in
    OK)
        echo "[       OK ] $results_suite.$2"
        passed=$((passed + 1))
        ;;
    SKIPPED)
        result_skip "$2" "${3:-}"
        return 0
        ;;
    *) # FAILED, or a status that is none of these
        echo "[  FAILED  ] $results_suite.$2"
        [ "$1" = FAILED ] || echo "    result_as: unknown status '$1'"
        failed=$((failed + 1))
        ;;
    esac
    if [ -n "${3:-}" ]; then
        echo "$3" | sed 's/^/    /'
    fi
}

result_skip() {
    echo "[  SKIPPED ] $results_suite.$1${2:+ ($2)}"
    skipped=$((skipped + 1))
}

# A pass needs COMMAND to exit 0 and print nothing. Its exit status counts
# as well as its output: a grep -q that misses, or a run that dies without a
# word, prints nothing, and a failure still needs a detail to show.
result_check() {
    local name=$1 detail
    shift
    if detail=$("$@" 2>&1) && [ -z "$detail" ]; then
        result_as OK "$name"
    else
        result_as FAILED "$name" "${detail:-$1 failed without printing why}"
    fi
}

results_add() {
    local n
    printf '%s\n' "$1"
    n=$(grep -c '^\[       OK \] ' <<<"$1")
    passed=$((passed + n))
    n=$(grep -c '^\[  FAILED  \] ' <<<"$1")
    failed=$((failed + n))
    n=$(grep -c '^\[  SKIPPED \] ' <<<"$1")
    skipped=$((skipped + n))
}

results_end() {
    local reported=$((passed + failed + skipped))
    echo "[  PASSED  ] $passed tests."
    if [ "$skipped" -gt 0 ]; then
        echo "[  SKIPPED ] $skipped tests, listed above"
    fi
    if [ -n "$results_expected" ] && [ "$reported" != "$results_expected" ]; then
        echo "[  FAILED  ] $results_suite: $reported results reported, $results_expected expected"
        failed=$((failed + 1))
    fi
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed tests, listed above"
        return 1
    fi
}
