#!/bin/bash
# zsh_estimate as a user runs it: every bad argument is refused with exit 2
# and a message naming the option, the text given and what it takes; sizes
# print with a unit at every magnitude and in whole bytes below a KiB; the
# offload tiers' options add a line per stage with bytes per tier, disk bytes
# per step and the disk-bound step time, and nothing without them. Ends
# with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_estimate"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
results_begin zsh_estimate 7
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

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

tier_choices() {
    refused "--offload-optimizer 'gpu' is not one of: none cpu nvme" --params 7B --ranks 8 --offload-optimizer gpu
    refused "--offload-params 'disk' is not one of: none cpu nvme" --params 7B --ranks 8 --stage 3 --offload-params disk
    refused "--offload-params nvme needs --stage 3" --params 7B --ranks 8 --offload-params nvme
    refused "--offload-params cpu needs --stage 3" --params 7B --ranks 8 --stage 2 --offload-params cpu
    local b
    for b in -1 x inf nan '' 2e6; do
        refused "--disk-read '$b' is not a bandwidth in GB/s in [0, 1e6]" --params 7B --ranks 8 --disk-read "$b"
        refused "--disk-write '$b' is not a bandwidth in GB/s in [0, 1e6]" --params 7B --ranks 8 --disk-write "$b"
    done
    for b in 0 -1 1.5 x; do
        refused "--ranks-per-disk '$b' is not a whole number in [1, 1e+09]" --params 7B --ranks 8 --ranks-per-disk "$b"
    done
}
result tier_options_refuse_bad_values_naming_them "$(tier_choices)"

# 1200 parameters on 4 ranks at stage 3, fp32, both tiers on NVMe: 4800 B on
# disk, a step reads 7200 B and writes 4800 B; 2 ranks on a disk of 1000 B/s
# read and 500 B/s write take 7200*2/1000 + 4800*2/500 = 33.6 s.
tier_lines() {
    local out line
    out=$("$prog" --params 1200 --ranks 4 --stage 3 --offload-optimizer nvme --offload-params nvme \
        --disk-read 1e-6 --disk-write 5e-7 --ranks-per-disk 2) || echo "exit $?"
    line=$(echo "$out" | grep '^  tiers')
    echo "$line" | grep -qE 'compute +0 B +host +0 B +nvme +4\.69 KiB +disk read/step +7\.03 KiB +write/step +4\.69 KiB +disk-bound step 33\.6 s$' ||
        echo "stage 3 tiers: '$line'"
    [ "$(echo "$out" | grep -c '^stage 3 ')" = 1 ] || echo "no stage 3 line: $out"
    # every stage gets its line; no bandwidth, no time
    out=$("$prog" --params 1200 --ranks 4 --precision bf16 --offload-optimizer cpu) || echo "exit $?"
    [ "$(echo "$out" | grep -c '^  tiers .*disk-bound step -$')" = 4 ] || echo "bf16 cpu: $out"
    echo "$out" | grep -A1 '^stage 2 ' | grep -qE 'compute +2\.34 KiB +host +4\.10 KiB +nvme +0 B' ||
        echo "bf16 stage 2 on cpu: $out"
    # without the tier options the table is what it was
    out=$("$prog" --params 1200 --ranks 4)
    echo "$out" | grep -q 'tiers' && echo "a tiers line without the options: $out"
    true
}
result tier_lines_give_bytes_per_tier_and_the_disk_bound "$(tier_lines)"

results_end
