#!/bin/bash
# The optimizer step of ZeroShard and of torch on the same sizes, one after
# the other in one run, and the ratios: ZeroShard against the STREAM-triad
# bound it measures (on as many threads as its update, -t), and against
# torch's foreach step on 2 threads. The last column is the bandwidth a step
# 10x torch's would need, to hold against the triad's.
#
#   perf/optim_compare.sh [BUILD_DIR] [-n 1m,16m,64m] [-i ITERS] [-t THREADS]
#
# The interpreter with torch: $PYTHON, then /usr/bin/python3, then python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
[ $# -gt 0 ] && shift
sizes=1m,16m,64m
iters=10
threads=1
while [ $# -gt 0 ]; do
    case $1 in
    -n) sizes=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    *) echo "optim_compare.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
py=
for c in "${PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$c" ] && "$c" -c 'import torch' 2>/dev/null && { py=$c; break; }
done
[ -n "$py" ] || { echo "optim_compare.sh: no python with torch (set PYTHON)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/perf/zsh_optim_bench" -n "$sizes" -i "$iters" -t "$threads" --json >"$tmp/zsh.json"
"$py" "$here/torch_optim_bench.py" -n "$sizes" -i "$((iters < 5 ? iters : 5))" --threads 2 --json >"$tmp/torch.json"
"$py" - "$tmp/zsh.json" "$tmp/torch.json" <<'PY'
import json, sys
zsh = json.load(open(sys.argv[1]))
torch = {(r["rule"], r["precision"], r["elements"]): r for r in json.load(open(sys.argv[2]))}
print("| rule | prec | elements | threads | ZeroShard Gparam/s | bound Gparam/s | of bound | "
      "torch Gparam/s (2 threads) | speedup | triad GB/s | 10x torch needs GB/s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in zsh:
    t = torch[(r["rule"], r["precision"], r["elements"])]
    print("| %s | %s | %d | %d | %.3f | %.3f | %.2f | %.4f | %.1fx | %.1f | %.1f |" % (
        r["rule"], r["precision"], r["elements"], r["threads"], r["gparams"],
        r["bound_gparams"], r["ratio"], t["gparams"], r["gparams"] / t["gparams"],
        r["triad_gbs"], 10 * t["gparams"] * r["bytes_per_elem"]))
PY
