#!/bin/bash
# The GPU script is honest where there is no GPU, and configure holds CUDA and
# NCCL to their floors:
#   - tests/system/gpu/run.sh on a machine without a GPU fails before it
#     builds anything, naming why (a run whose every test skipped used to
#     report "ok");
#   - a skip in a step's log fails that step, but for the cases that only
#     apply without a GPU (tests/system/gpu/skips.sh);
#   - configure --with-cuda on a toolkit older than 12.8, or --with-nccl on an
#     NCCL older than 2.14, stops with a message naming the version found
#     (made-up toolkits: headers with the version and a stub library).
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
. "$srcdir/tests/harness/results.sh"
. "$srcdir/tests/system/gpu/skips.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results_begin gpu_script 4

# 1. No GPU here: the script stops at its first step.
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    result_skip without_a_gpu_the_run_fails_before_building "a GPU is visible"
else
    out=$(ZSH_GPU_DEBS=$tmp/none ZSH_GPU_BUILD=$tmp/build bash "$srcdir/tests/system/gpu/run.sh" \
        "$tmp/out" 2>&1)
    rc=$?
    detail=
    [ $rc != 0 ] || detail="run.sh exited 0 without a GPU"
    grep -q '^preflight .*FAILED' "$tmp/out/summary.txt" 2>/dev/null ||
        detail="${detail:+$detail; }the summary has no failed preflight step"
    echo "$out" | grep -q 'nvidia-smi lists no GPU\|nvidia-smi: command not found' ||
        detail="${detail:+$detail; }no message says the GPU is missing"
    [ ! -e "$tmp/build" ] || detail="${detail:+$detail; }it configured a build anyway"
    result without_a_gpu_the_run_fails_before_building "${detail:+$detail
$out}"
fi

# 2. Skips: the not-applicable ones pass, any other fails the step.
cat >"$tmp/expected.log" <<'LOG'
[  SKIPPED ] cuda_kernels.without_nvcc_every_entry_point_is_unsupported (0 ms)
[  SKIPPED ] device.device_and_host_ranks_of_one_call_are_told_apart_before_nccl/np1 (22 ms)
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] cuda_kernels.without_nvcc_every_entry_point_is_unsupported
[  SKIPPED ] device.device_and_host_ranks_of_one_call_are_told_apart_before_nccl/np1
[  SKIPPED ] zsh_bench_device.device_cuda_without_a_device_exits_2_naming_why (a GPU is visible)
[  SKIPPED ] python_torch/np2.a_group_of_all_ranks_after_a_group_of_some_bootstraps (needs 3 ranks, the job has 2)
LOG
{ cat "$tmp/expected.log"
  echo "[  SKIPPED ] optim_device.stage_3_on_device_gives_the_host_bits/np2 (no CUDA device)"; } \
    >"$tmp/unexpected.log"
detail=
if extra=$(unexpected_skips "$tmp/expected.log"); then
    detail="skips that apply only without a GPU failed the step: $extra"
fi
extra=$(unexpected_skips "$tmp/unexpected.log") ||
    detail="${detail:+$detail; }a device test skipped for want of a device passed"
[ -z "$detail" ] && ! echo "$extra" | grep -q 'optim_device.stage_3' &&
    detail="the unexpected skip is not the one listed: $extra"
result a_skip_fails_a_gpu_step_unless_it_only_applies_without_a_gpu "$detail"

# 3 and 4. configure's floors, on made-up toolkits.
fake_lib() { # DIR NAME SYMBOL
    mkdir -p "$1"
    echo "int $3(void) { return 0; }" >"$tmp/$2.c"
    ${CC:-cc} -shared -fPIC -o "$1/lib$2.so" "$tmp/$2.c"
}
fake_cuda() { # DIR CUDART_VERSION
    mkdir -p "$1/include"
    printf '#define CUDART_VERSION %s\nint cudaPointerGetAttributes(void);\n' "$2" \
        >"$1/include/cuda_runtime_api.h"
    echo '#include "cuda_runtime_api.h"' >"$1/include/cuda_runtime.h"
    fake_lib "$1/lib64" cudart cudaPointerGetAttributes
}
fake_nccl() { # DIR NCCL_VERSION_CODE
    mkdir -p "$1/include"
    printf '#define NCCL_VERSION_CODE %s\nint ncclGetVersion(int *);\n' "$2" >"$1/include/nccl.h"
    fake_lib "$1/lib" nccl ncclGetVersion
}
configure_with() { # DIR ARGS...: configure in DIR, output in DIR/out
    mkdir -p "$1" && (cd "$1" && "$srcdir/configure" --without-mpi --without-pmix --disable-python \
        "${@:2}" NVCC=no >out 2>&1)
}
fake_cuda "$tmp/cuda12.4" 12040
fake_cuda "$tmp/cuda12.8" 12080
fake_nccl "$tmp/nccl2.13" 21305
floor() { # NAME DIR WANT ARGS...
    local name=$1 dir=$2 want=$3 detail=
    shift 3
    if configure_with "$dir" "$@"; then
        detail="configure $* succeeded"
    elif ! grep -q "$want" "$dir/out"; then
        detail="configure $* failed without saying '$want':
$(tail -5 "$dir/out")"
    fi
    result "$name" "$detail"
}
floor configure_refuses_cuda_older_than_12_8_naming_the_version_found "$tmp/c1" \
    "CUDA 12.4 found in $tmp/cuda12.4; ZeroShard needs 12.8 or newer" --with-cuda="$tmp/cuda12.4"
floor configure_refuses_nccl_older_than_2_14_naming_the_version_found "$tmp/c2" \
    "NCCL 2.13.5 found in $tmp/nccl2.13; ZeroShard needs 2.14 or newer" \
    --with-cuda="$tmp/cuda12.8" --with-nccl="$tmp/nccl2.13"
results_end
