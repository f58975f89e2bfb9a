#!/bin/bash
# GoogleTest-style results for test scripts, which tests/run_all.sh counts.
# Sourced:
#   results_begin SUITE EXPECTED   the suite's name and how many results it reports
#   result NAME DETAIL             one result: a pass when DETAIL is empty, else a
#                                  failure showing DETAIL
#   results_end                    the summary; a run that reported another number of
#                                  results than it expected fails; returns 1 on failure
results_begin() {
    results_suite=$1
    results_expected=$2
    passed=0
    failed=0
}

result() {
    if [ -z "$2" ]; then
        echo "[       OK ] $results_suite.$1"
        passed=$((passed + 1))
    else
        echo "[  FAILED  ] $results_suite.$1"
        echo "$2" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

results_end() {
    echo "[  PASSED  ] $passed tests."
    if [ $((passed + failed)) != "$results_expected" ]; then
        echo "[  FAILED  ] $results_suite: $((passed + failed)) results reported, $results_expected expected"
        failed=$((failed + 1))
    fi
    if [ "$failed" -gt 0 ]; then
        echo "[  FAILED  ] $failed tests, listed above"
        return 1
    fi
}
