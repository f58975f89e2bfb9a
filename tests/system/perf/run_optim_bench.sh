#!/bin/bash
# zsh_optim_bench at tiny sizes: the table's header and columns, one row per
# size x rule x precision, Gparam/s = elements / step time, the bound =
# triad bandwidth / bytes per element with the bytes the update moves (20
# for SGD with momentum, 28 for Adam and AdamW, in fp32 and bf16 alike), the
# ratio = Gparam/s / bound; --json with the same fields; bad options refused
# with exit 2 and a message; --device cuda rows with the copy's bound, or a
# skip naming why the device kernels cannot run. The numbers themselves are
# not checked: the benchmark never runs at its real sizes here.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/perf/zsh_optim_bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin zsh_optim_bench 5

table() {
    timeout 120 "$prog" -n 1k,3000 -i 3 >"$tmp/out" 2>"$tmp/err" || { echo "exit $?: $(cat "$tmp/err")"; return; }
    grep -q '^# ZeroShard optimizer step: 1 rank, stage 0, one parameter, median of 3 steps, 1 update thread(s); the triad on as many$' "$tmp/out" ||
        echo "no title: $(head -1 "$tmp/out")"
    grep -qE '^# rule +prec +elements +step_us +Gparam/s +B/elem +triadGB/s +bound +ratio$' "$tmp/out" ||
        echo "no column line: $(grep '^# rule' "$tmp/out")"
    grep -v '^#' "$tmp/out" | awk '
        function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 2e-2 * (b < 0 ? -b : b) + 2e-3 }
        { rows++; key[$1 " " $2 " " $3]++ }
        NF != 9 || $1 !~ /^(sgd|adam|adamw)$/ || $2 !~ /^(fp32|bf16)$/ || $3 !~ /^(1024|3000)$/ { print "bad row: " $0; bad = 1; next }
        $4 <= 0 || $5 <= 0 || $7 <= 0 || $8 <= 0 { print "not positive: " $0; bad = 1 }
        $6 != ($1 == "sgd" ? 20 : 28) { print "bytes per element: " $0; bad = 1 }
        !near($5, $3 / ($4 * 1e-6) * 1e-9) { print "Gparam/s is not elements / time: " $0; bad = 1 }
        !near($8, $7 / $6) { print "bound is not triad / bytes: " $0; bad = 1 }
        !near($9, $5 / $8) { print "ratio is not Gparam/s / bound: " $0; bad = 1 }
        END { if (rows != 12 || length(key) != 12) { print rows " rows, 12 expected"; bad = 1 } exit bad }'
}
result table_has_a_row_per_size_rule_and_precision_and_consistent_ratios "$(table)"

json() {
    timeout 120 "$prog" -n 2k -r adamw,sgd -p bf16 -i 2 --json >"$tmp/json" 2>"$tmp/err" || { echo "exit $?: $(cat "$tmp/err")"; return; }
    [ "$(head -c1 "$tmp/json")" = "[" ] && [ "$(tail -1 "$tmp/json")" = "]" ] || echo "not an array: $(cat "$tmp/json")"
    [ "$(grep -c '"rule": "adamw", "precision": "bf16", "elements": 2048, "threads": 1, "step_s": [0-9.]*, "gparams": [0-9.]*, "bytes_per_elem": 28, "triad_gbs": [0-9.]*, "bound_gparams": [0-9.]*, "ratio": [0-9.]*}' "$tmp/json")" = 1 ] ||
        echo "no adamw row: $(cat "$tmp/json")"
    [ "$(grep -c '"rule": "sgd", .*"bytes_per_elem": 20' "$tmp/json")" = 1 ] || echo "no sgd row: $(cat "$tmp/json")"
    [ "$(grep -c '"rule"' "$tmp/json")" = 2 ] || echo "rows: $(cat "$tmp/json")"
}
result json_has_the_same_fields "$(json)"

# -t: the step's update threads and the triad's; the rows say how many.
threads() {
    timeout 120 "$prog" -n 100k -r adamw -p fp32,bf16 -i 2 -t 2 --json >"$tmp/json" 2>"$tmp/err" || { echo "exit $?: $(cat "$tmp/err")"; return; }
    [ "$(grep -c '"threads": 2, ' "$tmp/json")" = 2 ] || echo "rows with 2 threads: $(cat "$tmp/json")"
    timeout 120 "$prog" -n 1k -r sgd -p fp32 -i 2 -t 3 >"$tmp/out" 2>"$tmp/err" || { echo "exit $?: $(cat "$tmp/err")"; return; }
    grep -q '3 update thread(s)' "$tmp/out" || echo "no thread count in the title: $(head -1 "$tmp/out")"
}
result threads_run_the_step_and_the_triad_on_that_many "$(threads)"

refused() { # NEEDLE ARGS...
    local needle=$1 rc
    shift
    "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] || echo "zsh_optim_bench $*: exit $rc, expected 2"
    grep -qF -- "$needle" "$tmp/err" || echo "zsh_optim_bench $*: no '$needle' in: $(cat "$tmp/err")"
}
bad() {
    refused "-n '0': need up to 16 sizes" -n 0
    refused "-n '1x': need up to 16 sizes" -n 1x
    refused "-n '-5': need up to 16 sizes" -n -5
    refused "-r 'lamb': need sgd, adam or adamw" -r lamb
    refused "-p 'fp16': need fp32 or bf16" -p fp16
    refused "-i '0': need 1 to 100000" -i 0
    refused "-t '0': need 1 to 256" -t 0
    refused "-t '300': need 1 to 256" -t 300
    refused "-n needs a value" -n
    refused "unknown option '--bogus'" --bogus
    refused "--device needs host or cuda" --device gpu
}
result bad_options_are_refused_naming_them "$(bad)"

# The device kernels: rows like the host's with the device copy as the bound,
# or, without a device or nvcc, exit 1 naming why (a skip, not a pass).
device() {
    timeout 120 "$prog" --device cuda -n 1k,3000 -r adamw,sgd -p fp32,bf16 -i 3 >"$tmp/out" 2>"$tmp/err"
    case $? in
    0) ;;
    1) if grep -qE -- "--device cuda: (.*no CUDA device visible|built without nvcc|.*cudaGetDeviceCount)" "$tmp/err"; then
           echo "SKIP: $(tail -1 "$tmp/err")"
       else
           echo "exit 1: $(cat "$tmp/err")"
       fi
       return ;;
    *) echo "exit $?: $(cat "$tmp/err")"; return ;;
    esac
    grep -qE '^# rule +prec +elements +step_us +Gparam/s +B/elem +d2dGB/s +bound +ratio$' "$tmp/out" ||
        echo "no column line: $(grep '^# rule' "$tmp/out")"
    grep -v '^#' "$tmp/out" | awk '
        function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 2e-2 * (b < 0 ? -b : b) + 2e-3 }
        { rows++ }
        NF != 9 || $1 !~ /^(sgd|adamw)$/ || $2 !~ /^(fp32|bf16)$/ || $3 !~ /^(1024|3000)$/ { print "bad row: " $0; bad = 1; next }
        $4 <= 0 || $5 <= 0 || $7 <= 0 || $8 <= 0 { print "not positive: " $0; bad = 1 }
        $6 != ($1 == "sgd" ? 20 : 28) { print "bytes per element: " $0; bad = 1 }
        !near($8, $7 / $6) { print "bound is not copy / bytes: " $0; bad = 1 }
        !near($9, $5 / $8) { print "ratio is not Gparam/s / bound: " $0; bad = 1 }
        END { if (rows != 8) { print rows " rows, 8 expected"; bad = 1 } exit bad }'
}
out=$(device)
case $out in
SKIP:*) result_skip device_cuda_rows_have_the_copy_as_their_bound "${out#SKIP: }" ;;
*) result device_cuda_rows_have_the_copy_as_their_bound "$out" ;;
esac

results_end
