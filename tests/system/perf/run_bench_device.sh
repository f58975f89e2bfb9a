#!/bin/bash
# zsh_bench --device: host stays the default and runs where CUDA has no
# device; --device cuda, where no GPU is visible or the build has no
# CUDA/NCCL, fails with exit status 2 and a message saying which; where a GPU
# is visible, one rank runs every collective on device buffers at tiny sizes,
# validates them, and prints ZeroShard's and bare NCCL's columns side by side.
# One rank through ZeroShard's own bootstrap (RANK=0 WORLD_SIZE=1): no MPI
# needed, as on a GPU machine without it.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/perf/zsh_bench"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
# The host case, the no-device case, 6 device collectives and 3 refused options.
results_begin zsh_bench_device $((1 + 1 + 6 + 3))

bench() { # FILE ARGS...: one rank; output in FILE, standard error in FILE.err; its exit status
    local file=$1
    shift
    RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 timeout 120 "$prog" "$@" </dev/null >"$file" 2>"$file.err"
}

built=1
"$prog" --help | grep -q "this build has no CUDA/NCCL" && built=0
gpu=0
if [ $built = 1 ] && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=1
fi

host_default_ok() {
    local t=$out/host rc
    bench "$t" allreduce -m 1k:4k -i 2 -x 1 -c --device host
    rc=$?
    [ $rc = 0 ] || { echo "--device host exited $rc"; cat "$t.err"; return 1; }
    grep -q '^# Device' "$t" && { echo "a '# Device' line on the host"; return 1; }
    [ "$(grep -v '^#' "$t" | awk '$NF == "Pass"' | wc -l)" = 3 ] || { echo "not 3 rows that pass:"; cat "$t"; return 1; }
}
result_check device_host_runs_and_validates_where_cuda_has_no_device host_default_ok

# Without a device (or without the build for one): exit 2 and a message that
# names the reason, before any row.
no_device_ok() {
    local t=$out/nodev rc want
    bench "$t" allgather -m 8:64 --device cuda
    rc=$?
    [ $rc = 2 ] || { echo "--device cuda without a device exited $rc, expected 2"; cat "$t.err"; return 1; }
    if [ $built = 1 ]; then
        want="zsh_bench: rank 0: --device cuda: no device path here"
    else
        want="zsh_bench: --device cuda: this zsh_bench was built without CUDA/NCCL"
    fi
    grep -qF -- "$want" "$t.err" || { echo "no '$want' in:"; cat "$t.err"; return 1; }
    grep -qv '^#' "$t" && { echo "rows without a device:"; cat "$t"; return 1; }
    return 0
}
if [ $gpu = 0 ]; then
    result_check device_cuda_without_a_device_exits_2_naming_why no_device_ok
else
    result_skip device_cuda_without_a_device_exits_2_naming_why "a GPU is visible"
fi

# With a GPU: OSU's columns, then NCCL's latency, busbw and the ratio; every
# size validated; the CSV names its baseline nccl.
device_ok() { # COLL DTYPE
    local t=$out/dev.$1.$2 rc cols
    bench "$t" "$1" -m 8:64k -i 3 -x 1 -c -T "$2" --device cuda --csv "$t.csv"
    rc=$?
    [ $rc = 0 ] || { echo "exited $rc"; tail -n 5 "$t" "$t.err"; return 1; }
    grep -q '^# Device: cuda, rank 0 on GPU [0-9]* (.*), NCCL [0-9.]*$' "$t" || { echo "no '# Device' line"; return 1; }
    grep -q '^# Baseline: nccl[A-Za-z]* on the same buffers and stream' "$t" || { echo "no '# Baseline' line"; return 1; }
    cols=$(grep '^# Size ' "$t")
    for name in "Avg Latency(us)" "busbw(GB/s)" "NCCL Latency(us)" "NCCL busbw(GB/s)" "zsh/NCCL" Validation; do
        [[ $cols == *"$name"* ]] || { echo "no column $name in '$cols'"; return 1; }
    done
    grep -v '^#' "$t" | awk 'NF != 8 || $NF != "Pass" || $2 <= 0 || $5 <= 0 { print "bad row: " $0; bad = 1 }
        { rows++ } END { if (rows < 5) { print rows " rows"; bad = 1 } exit bad }' || return 1
    head -1 "$t.csv" | grep -q ',nccl_avg_us,nccl_busbw_gbs,zsh_over_nccl,' || { echo "CSV header: $(head -1 "$t.csv")"; return 1; }
}
for spec in allgather:fp32 reduce_scatter:fp32 allreduce:fp32 broadcast:fp32 allreduce:bf16 allreduce:int64; do
    name="device_cuda_${spec%%:*}_${spec##*:}_prints_zsh_and_nccl_columns_and_validates"
    if [ $gpu = 1 ]; then
        result_check "$name" device_ok "${spec%%:*}" "${spec##*:}"
    elif [ $built = 0 ]; then
        result_skip "$name" "built without CUDA/NCCL"
    else
        result_skip "$name" "no GPU visible (nvidia-smi -L lists none)"
    fi
done

# Options --device cuda does not combine with.
bad_ok() { # EXPECTED ARGS...
    local want=$1 t=$out/bad rc
    shift
    bench "$t" "$@"
    rc=$?
    [ $rc = 2 ] || { echo "'$*' exited $rc, expected 2"; return 1; }
    grep -qF -- "$want" "$t.err" || { echo "'$*': no '$want' in:"; cat "$t.err"; return 1; }
}
result_check device_other_than_host_or_cuda_is_refused bad_ok "--device 'gpu': expected host or cuda" allreduce --device gpu
if [ $built = 1 ]; then
    result_check device_cuda_refuses_baseline_mpi bad_ok "--baseline mpi is for host buffers" \
        allreduce --device cuda --baseline mpi
    result_check device_cuda_refuses_cold bad_ok "--cold rotates through the host's last-level cache" \
        allreduce --device cuda --cold
else
    result_skip device_cuda_refuses_baseline_mpi "built without CUDA/NCCL"
    result_skip device_cuda_refuses_cold "built without CUDA/NCCL"
fi

results_end
