#!/bin/bash
# ZeRO++'s quantization against the loss of examples/torch/train_gpt.py: stage
# 3 on 2 ranks that the rank map puts on 2 made-up nodes (ZSH_NODE_NAME, so
# qgZ's all-to-all crosses them), 200 steps of a small GPT (118,528
# parameters) at the example's own recipe, seed 1234. The mean loss over the
# last 25 steps with qwZ and qgZ in int8 (the defaults), and with qgZ in int4
# in blocks of 64, must end within 1% of the unquantized run's, and each
# quantized run must show in the optimizer's stats that it quantized.
#
# Why this size: one run of the example's own size moves by about as much as
# the bound under any small change, so it cannot hold one; this size moves
# by a tenth of that across seeds, on int8 and on int4 in blocks of 64. int4
# in blocks of 256 lands too near 1% for a bound, and in blocks of 2048 above
# it, so the comparison can fail (the measurements: docs/DECISIONS.md,
# "Quantization blocks and the loss"). Skipped, with the reason, without
# torch or the package. Ends with a GoogleTest-style summary.
set -u
. "$(dirname "$0")/ranks.sh"
py_setup zeropp_loss torch
out=$(mktemp -d)
trap 'rm -rf "$log" "$out"' EXIT
# shellcheck source=../../harness/fake_nodes.sh
. "$srcdir/tests/harness/fake_nodes.sh"
export PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH}
steps=200
model=(--stage 3 --steps "$steps" --seed 1234 --dim 64 --layers 2 --seq 32 --batch 4)

# run NAME ARGS...: train_gpt.py on both ranks, rank 0's --json in
# $out/NAME.json; a note in $out/NAME.why when a rank failed.
run() {
    local name=$1 r
    shift
    fake_nodes_job ab 300 "$python" "$srcdir/examples/torch/train_gpt.py" "${model[@]}" \
        --json "$out/$name.json" "$@"
    for r in 0 1; do
        [ "$(cat "$log/rc.$r" 2>/dev/null)" = 0 ] ||
            echo "rank $r of $name: $(tail -n 3 "$log/out.$r")" >>"$out/$name.why"
    done
}

# compare NAME: nothing when $out/NAME.json quantized weights and gradients
# and its mean loss over the last 25 steps is within 1% of off's, else why.
compare() {
    [ -e "$out/$1.why" ] && { cat "$out/$1.why"; return; }
    [ -e "$out/off.why" ] && { cat "$out/off.why"; return; }
    "$python" - "$out/off.json" "$out/$1.json" "$steps" "$1" <<'EOF'
import json, sys
off, q = (json.load(open(f)) for f in sys.argv[1:3])
steps = int(sys.argv[3])
if off["quantize_weights"] or off["quantize_grads"] or off["comm_bytes_quantized_last_step"]:
    print("the unquantized run quantized: %r" % {k: off[k] for k in ("quantize_weights", "quantize_grads")})
if not (q["quantize_weights"] and q["quantize_grads"] and q["qwz_gathers"] >= steps
        and q["qgz_reductions"] >= steps and q["comm_bytes_quantized_last_step"] > 0):
    print("the quantized run did not quantize every step: %r" % {k: q[k] for k in (
        "quantize_weights", "quantize_grads", "qwz_gathers", "qgz_reductions",
        "comm_bytes_quantized_last_step")})
tail = lambda l: sum(l[-25:]) / 25
a, b = tail(off["losses"]), tail(q["losses"])
with open(sys.argv[2] + ".measured", "w") as f:
    f.write("%s: mean loss over the last 25 steps %.6f quantized, %.6f not: %+.2f%%\n"
            % (sys.argv[4], b, a, 100 * (b / a - 1)))
if abs(b / a - 1) >= 0.01:
    print("mean loss over the last 25 steps %.6f quantized against %.6f: %+.2f%%, not within 1%%"
          % (b, a, 100 * (b / a - 1)))
EOF
}

run off --quantize-weights off --quantize-grads off
run int8 --quantize-weights on --quantize-grads on
run int4 --quantize-weights on --quantize-grads on --quantize-grad-bits 4 --quantize-block 64
int8=$(compare int8) int4=$(compare int4)
cat "$out"/*.measured 2>/dev/null
result qwz_and_qgz_in_int8_end_within_1_percent_of_the_unquantized_loss "$int8"
result qgz_in_int4_blocks_of_64_ends_within_1_percent_of_the_unquantized_loss "$int4"
py_summary
