#!/bin/bash
# Checkpoints against the disk: in one run, fio measures the disk's
# sequential write and read (O_DIRECT, io_uring, 1 MiB blocks, QD16), then
# zsh_ckpt_bench saves and loads a one-rank model of --params fp32
# parameters (SGD: the weights alone, 4 bytes each; --optimizer adamw: 12),
# and zsh_ckpt consolidates the checkpoint to one safetensors file under
# --max-memory. Each is printed beside its disk bound (bytes over fio's
# bandwidth; consolidate reads and writes the weights on the same disk) and
# consolidate's peak resident memory (/usr/bin/time). Every file is removed
# at the end, on success or not.
#
#   bash perf/ckpt_run.sh [--params N] [--optimizer sgd|adamw] [--dir DIR]
#                         [--max-memory M] [--build DIR]
# Defaults: 2e9 parameters, sgd, /var/tmp/zsh-ckpt-run, 1g, ./build.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
params=2e9 optimizer=sgd dir=/var/tmp/zsh-ckpt-run max_memory=1g build=$top/build
while [ $# -gt 0 ]; do
    case $1 in
        --params) params=$2 ;; --optimizer) optimizer=$2 ;; --dir) dir=$2 ;;
        --max-memory) max_memory=$2 ;; --build) build=$2 ;;
        *) echo "usage: $0 [--params N] [--optimizer sgd|adamw] [--dir DIR] [--max-memory M] [--build DIR]" >&2
           exit 2 ;;
    esac
    shift 2
done
bench=$build/perf/zsh_ckpt_bench tool=$build/tools/zsh_ckpt
for p in "$bench" "$tool"; do
    [ -x "$p" ] || { echo "$p is not built (make -C $build $(basename "$p"))" >&2; exit 1; }
done
py=/usr/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$dir"
work=$(mktemp -d "$dir/run-XXXXXX")
trap 'rm -rf "$work"' EXIT

fio_bw() { # RW: bytes/s of a sequential RW of a 4 GiB file
    fio --name=zsh-ckpt --directory="$work" --filename=fio.dat --size=4g --bs=1m --iodepth=16 \
        --ioengine=io_uring --direct=1 --rw="$1" --output-format=json 2>/dev/null |
        "$py" -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j[sys.argv[1]]["bw_bytes"])' "$1"
}
write_bw=$(fio_bw write) read_bw=$(fio_bw read)
rm -f "$work/fio.dat"
awk -v w="$write_bw" -v r="$read_bw" 'BEGIN { printf "fio: write %.3f GB/s, read %.3f GB/s\n", w / 1e9, r / 1e9 }'

out=$("$bench" "$work/ckpt" "$params" "$optimizer")
echo "$out"
awk -v w="$write_bw" -v r="$read_bw" '
    $1 == "save" { printf "save: %.3f s, disk bound %.3f s (%.2fx)\n", $4, $2 / w, $4 / ($2 / w) }
    $1 == "load" { printf "load: %.3f s, disk bound %.3f s for one read (%.2fx)\n", $4, $2 / r, $4 / ($2 / r) }' <<<"$out"
sync
echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
/usr/bin/time -v "$tool" consolidate "$work/ckpt" "$work/model.safetensors" \
    --max-memory "$max_memory" 2>"$work/time.txt" | tee "$work/consolidate.txt"
rss_kb=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$work/time.txt")
secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s }' "$work/time.txt")
bytes=$(stat -c %s "$work/model.safetensors")
awk -v b="$bytes" -v s="$secs" -v w="$write_bw" -v r="$read_bw" -v kb="$rss_kb" 'BEGIN {
    bound = b / r + b / w
    printf "consolidate: %.1f GB in %.1f s (%.3f GB/s), disk bound %.1f s (read then write on one disk: %.2fx), peak RSS %.0f MiB\n",
        b / 1e9, s, b / s / 1e9, bound, s / bound, kb / 1024 }'
