#!/bin/bash
# ZeRO++'s quantization against the loss, over seeds: examples/torch/train_gpt.py
# at stage 3 on 2 ranks that the rank map puts on 2 made-up nodes
# (ZSH_NODE_NAME, one rank each, so qgZ's all-to-all crosses them), with
# quantization off, with qwZ alone and with qwZ + qgZ, for each seed (the seed
# sets the initial weights and the batches). One 300-step run of the example's
# own size moves under quantization, as under any small perturbation, by
# about as much as the 1% asked (and by several times that without the
# recipe's clipping: docs/DECISIONS.md, "Quantization blocks and the loss"),
# so a 1% effect shows in the means over seeds, not in one run.
#
#   perf/zeropp_quality.sh [BUILD_DIR] [--seeds "1234 2 3 4 5"] [--steps N]
#                          [-s "off qwz quant"] [--out DIR] [--] [train_gpt.py options...]
#
# Settings: off, qwz (qwZ alone), qgz (qgZ alone), quant (both), and nudged:
# unquantized with the learning rate times 1.01 (of train_gpt.py's default,
# 1e-3: give no --lr with it), a perturbation that quantizes nothing, to show
# how far any small change moves the loss.
#
# Prints, for each setting, each seed's mean loss over the last 25 steps and
# its difference from the unquantized run of that seed, then the mean of those
# differences over the seeds with its standard error, and the curves (every 25
# steps) averaged over the seeds. Runs in turn, never side by side. --out
# keeps each run's train_gpt.py --json there (SETTING.SEED.json), to compare
# across invocations; a run whose file is there already is not run again.
# ZSH_QUANTIZE_BLOCK and the other ZSH_* settings pass through to the runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
build=$(cd "$build" && pwd)
seeds="1234 2 3 4 5" steps=300 settings="off qwz quant" keep=
model=()
while [ $# -gt 0 ]; do
    case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -s) settings=$2; shift 2 ;;
    --out) keep=$2; shift 2 ;;
    --) shift; model=("$@"); break ;;
    *) echo "zeropp_quality.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
python=
for py in ${PYTHON:-} /usr/bin/python3 python3; do
    "$py" -c 'import torch' 2>/dev/null && { python=$py; break; }
done
[ -n "$python" ] || { echo "zeropp_quality.sh: no interpreter imports torch" >&2; exit 1; }
log=$(mktemp -d)
if [ -n "$keep" ]; then
    mkdir -p "$keep" && out=$(cd "$keep" && pwd) || exit 1
    trap 'rm -rf "$log"' EXIT
else
    out=$(mktemp -d)
    trap 'rm -rf "$log" "$out"' EXIT
fi
# shellcheck source=../tests/harness/fake_nodes.sh
. "$here/../tests/harness/fake_nodes.sh"
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
for seed in $seeds; do
    for s in $settings; do
        case $s in
        off) qw=off qg=off ;;
        qwz) qw=on qg=off ;;
        qgz) qw=off qg=on ;;
        quant) qw=on qg=on ;;
        nudged) qw=off qg=off ;;
        *) echo "zeropp_quality.sh: unknown setting '$s'" >&2; exit 2 ;;
        esac
        nudge=
        [ "$s" = nudged ] && nudge=1
        [ -n "$keep" ] && [ -s "$out/$s.$seed.json" ] && continue
        t0=$SECONDS
        ZSH_QUANTIZE_WEIGHTS=$qw ZSH_QUANTIZE_GRADS=$qg \
            fake_nodes_job ab 3600 "$python" "$here/../examples/torch/train_gpt.py" \
            --stage 3 --steps "$steps" --seed "$seed" --json "$out/$s.$seed.json" "${model[@]}" \
            ${nudge:+--lr 0.00101}
        if [ "$(cat "$log/rc.0" "$log/rc.1")" != "$(printf '0\n0')" ]; then
            echo "zeropp_quality.sh: $s, seed $seed failed:" >&2
            tail -n 20 "$log/out.0" "$log/out.1" >&2
            exit 1
        fi
        echo "== $s seed $seed: $((SECONDS - t0)) s"
    done
done
"$python" - "$out" "$seeds" "$settings" <<'EOF'
import json, math, os, sys
out, seeds, settings = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
runs = {(s, seed): json.load(open(os.path.join(out, "%s.%s.json" % (s, seed))))["losses"]
        for s in settings for seed in seeds}
tail = lambda l: sum(l[-25:]) / len(l[-25:])
print("\nmean loss over the last 25 steps, and against off of the same seed:")
print("| setting | " + " | ".join("seed %s" % x for x in seeds) + " | mean difference |")
print("|---" * (len(seeds) + 2) + "|")
for s in settings:
    cells, diffs = [], []
    for seed in seeds:
        t = tail(runs[(s, seed)])
        if s != "off" and "off" in settings:
            d = 100.0 * (t / tail(runs[("off", seed)]) - 1)
            diffs.append(d)
            cells.append("%.4f (%+.2f%%)" % (t, d))
        else:
            cells.append("%.4f" % t)
    if len(diffs) > 1:
        m = sum(diffs) / len(diffs)
        se = math.sqrt(sum((d - m) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs))
        summary = "%+.2f%% ± %.2f%%" % (m, se)
    else:
        summary = "%+.2f%%" % diffs[0] if diffs else ""
    print("| %s | %s | %s |" % (s, " | ".join(cells), summary))
n = len(runs[(settings[0], seeds[0])])
print("\nthe loss averaged over the seeds, every 25 steps:")
print("| step | " + " | ".join(settings) + " |")
print("|---" * (len(settings) + 1) + "|")
for k in [0] + list(range(24, n, 25)):
    print("| %d | %s |" % (k + 1, " | ".join(
        "%.4f" % (sum(runs[(s, seed)][k] for seed in seeds) / len(seeds)) for s in settings)))
EOF
