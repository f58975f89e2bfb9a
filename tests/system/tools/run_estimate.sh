#!/bin/bash
# zsh_estimate as a user runs it: every bad argument is refused with exit 2
# and a message naming the option, the text given and what it takes; sizes
# print with a unit at every magnitude and in whole bytes below a KiB. Ends
# with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_estimate"
expected=5
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

result() { # NAME DETAIL: DETAIL empty is a pass
    if [ -z "$2" ]; then
        echo "[       OK ] zsh_estimate.$1"
        passed=$((passed + 1))
    else
        echo "[  FAILED  ] zsh_estimate.$1"
        echo "$2" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

# refused NEEDLE ARGS...: exit 2, nothing on stdout, NEEDLE in the message.
refused() {
    local needle=$1 rc
    shift
    "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] || echo "zsh_estimate $*: exit $rc, expected 2"
    [ -s "$tmp/out" ] && echo "zsh_estimate $*: printed a table: $(head -2 "$tmp/out")"
    grep -qF -- "$needle" "$tmp/err" || echo "zsh_estimate $*: no '$needle' in: $(cat "$tmp/err")"
}

numbers() {
    local p
    for p in 1e400 inf nan -1 0.5 1.2345k 2e18 B 7X ''; do
        refused "--params '$p' is not a whole number in [0, 1e+18]" --params "$p" --ranks 8
    done
    for p in 0 2.5 -3 1e10 inf x; do
        refused "--ranks '$p' is not a whole number in [1, 1e+09]" --params 7B --ranks "$p"
    done
}
result params_and_ranks_out_of_range_name_the_option_and_the_range "$(numbers)"

choices() {
    refused "--stage '4' is not one of: 0 1 2 3 all" --params 7B --ranks 8 --stage 4
    refused "--stage '' is not one of: 0 1 2 3 all" --params 7B --ranks 8 --stage ''
    refused "--precision 'fp8' is not one of: fp32 bf16 fp16" --params 7B --ranks 8 --precision fp8
    refused "--offload 'gpu' is not one of: none cpu" --params 7B --ranks 8 --offload gpu
}
result choices_list_what_they_take "$(choices)"

missing() {
    refused "--ranks is required" --params 7B
    refused "--params is required" --ranks 8
    refused "unexpected argument 'extra'" --params 7B --ranks 8 extra
    refused "unrecognized option '--bogus'" --bogus
}
result missing_and_unknown_arguments_are_named "$(missing)"

# The state bytes of stage 0 in fp32 are 8 psi: one value per unit.
units() {
    local psi want got
    while read -r psi want; do
        got=$("$prog" --params "$psi" --ranks 1 --stage 0 | sed -n 's/.*states *\([^ ]* [A-Za-z]*\) .*/\1/p')
        [ "$got" = "$want" ] || echo "--params $psi: states '$got', expected '$want'"
    done <<'TABLE'
1 8 B
128 1.00 KiB
128k 1000.00 KiB
1B 7.45 GiB
1e12 7.28 TiB
1e15 7.11 PiB
1e18 6.94 EiB
TABLE
}
result sizes_carry_a_unit_at_every_magnitude "$(units)"

# 1 parameter on 3 ranks at stage 3: each share rounds up to a whole byte.
whole() {
    local line
    line=$("$prog" --params 1 --ranks 3 --stage 3)
    echo "$line" | grep -qE 'params +2 B +grads +2 B +states +3 B ' ||
        echo "expected whole bytes (2, 2, 3), got: $line"
    echo "$line" | grep -qE '[0-9]\.[0-9]+ B( |$)' && echo "fractional bytes: $line"
    true
}
result bytes_below_a_kib_are_whole "$(whole)"

echo "[  PASSED  ] $passed tests."
if [ $((passed + failed)) != "$expected" ]; then
    echo "[  FAILED  ] zsh_estimate: $((passed + failed)) results reported, $expected expected"
    failed=$((failed + 1))
fi
if [ "$failed" -gt 0 ]; then
    echo "[  FAILED  ] $failed tests, listed above"
    exit 1
fi
