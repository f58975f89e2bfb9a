#!/bin/bash
# Bounded waits for test scripts, so that nothing a test waits for can hang
# it. Sourced.

# now_ms: the wall clock in milliseconds.
now_ms() {
    local t=${EPOCHREALTIME//[.,]/}
    echo $((t / 1000))
}

# poll LIMIT_S COMMAND...: run COMMAND every 20 ms until it succeeds (0) or
# LIMIT_S seconds pass (1).
poll() {
    local end=$(($(now_ms) + $1 * 1000))
    shift
    until "$@"; do
        [ "$(now_ms)" -lt $end ] || return 1
        sleep 0.02
    done
}
