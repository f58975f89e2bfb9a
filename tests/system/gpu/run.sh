#!/bin/bash
# Build ZeroShard from the tree this script is in, on a GPU machine, and run
# every GPU test and benchmark in one go.
#
# The GPU machine is not a Debian 12 machine: it has nvcc, NCCL and the
# driver, but no Debian UCX, hwloc or GoogleTest, no libtool to regenerate
# configure, and no package registry. So it takes:
#   - .deb files fetched on a Debian 12 machine by tests/system/gpu/fetch-debs.sh
#     (default: .gpu-debs in the tree's root), unpacked with dpkg -x into a
#     prefix that configure is pointed at;
#   - a tree whose configure was generated where autotools are complete
#     (./autogen.sh there; the generated files travel with it).
#
# Usage: bash tests/system/gpu/run.sh [OUT]   (OUT: where logs and tables go)
# Environment: ZSH_GPU_DEBS (the .deb folder), ZSH_GPU_PREFIX (where they are
# unpacked), ZSH_GPU_BUILD (build directory), CUDA_HOME (default /usr/local/cuda),
# ZSH_GPU_STEPS (the steps after the build to run, by name; default: all),
# ZSH_GPU_EXTRA (a command run last in the build directory).
# Exit status: 0 when every step passed; the summary lists each step. A step
# whose tests skipped fails, and so does the run without a GPU or nvcc.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$top/gpu-out}
debs=${ZSH_GPU_DEBS:-$top/.gpu-debs}
prefix=${ZSH_GPU_PREFIX:-/tmp/zsh-gpu-deps}
build=${ZSH_GPU_BUILD:-/tmp/zsh-gpu-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
failed=0

. "$top/tests/system/gpu/skips.sh"

step() { # step NAME COMMAND...: run, log to OUT/NAME.log, record the result
    local name=$1 rc t0=$SECONDS
    shift
    if [ -n "${ZSH_GPU_STEPS:-}" ] && [[ " preflight unpack_debs configure build extra $ZSH_GPU_STEPS " != *" $name "* ]]; then
        return 0
    fi
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    # GoogleTest and the test scripts exit 0 when everything skips, so a
    # skip on the GPU machine would pass for a run: here it is a failure,
    # but for the cases that exist for the machines without a GPU.
    if [ $rc = 0 ] && unexpected_skips "$out/$name.log" >"$out/$name.skips"; then
        cat "$out/$name.skips"
        echo "$name: tests skipped on the GPU machine count as failures" >>"$out/$name.log"
        rc=99
    fi
    rm -f "$out/$name.skips"
    printf '%-28s %s (%d s)\n' "$name" "$([ $rc = 0 ] && echo ok || echo "FAILED rc=$rc")" \
        $((SECONDS - t0)) | tee -a "$summary"
    [ $rc = 0 ] || failed=$((failed + 1))
    return $rc
}

unpack() {
    local d
    [ -d "$debs" ] && ls "$debs"/*.deb >/dev/null 2>&1 ||
        { echo "no .deb files in $debs: run tests/system/gpu/fetch-debs.sh on Debian 12"; return 1; }
    rm -rf "$prefix" && mkdir -p "$prefix"
    for d in "$debs"/*.deb; do dpkg -x "$d" "$prefix" || return 1; done
    # Their .pc files name /usr; point them at the prefix (a pkg-config
    # sysroot would move the machine's own .pc files too).
    sed -i "s#=/usr#=$prefix/usr#g" "$prefix"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc
    ls "$prefix/usr/lib/x86_64-linux-gnu"
}

setup_env() {
    local lib=$prefix/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG_PATH=$lib/pkgconfig:$prefix/usr/share/pkgconfig
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # Debian's libgtest-dev has no .pc-relative -L for the sysroot's libdir.
    export LDFLAGS="-L$lib -Wl,-rpath,$lib ${LDFLAGS:-}"
    export CPPFLAGS="-I$prefix/usr/include ${CPPFLAGS:-}"
}

configure_build() {
    [ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || return 1
    rm -rf "$build" && mkdir -p "$build" && cd "$build" &&
        "$top/configure" --with-cuda="$cuda" --without-mpi --without-pmix --without-blas &&
        grep -E "CUDA|NCCL|nvcc" config.log | grep -E "^zsh_have|NVCC=" ;
    grep -q '#define ZSH_HAVE_NCCL 1' "$build/config/config.h" ||
        { echo "configure found no NCCL: see $build/config.log"; return 1; }
}

make_all() {
    cd "$build" && make -j"$(nproc)" && make -j"$(nproc)" tests/zsh_tests
}

gpu_tests() {
    cd "$build" && tests/zsh_tests --gtest_filter='device.*:cuda_kernels.*:*cuda*:optim_device*' \
        --gtest_output=xml:"$out/gpu_tests.xml"
}

bench_tests() {
    cd "$build" && top_builddir=. bash "$top/tests/system/perf/run_bench_device.sh"
}

bench_tables() {
    bash "$top/perf/device_bench.sh" "$out/device_bench.txt" "$build"
}

# The same calls told where their buffers are: what asking CUDA costs per call.
bench_told() {
    local c
    for c in allgather reduce_scatter allreduce broadcast; do
        "$build/tools/zshrun" -n 1 "$build/perf/zsh_bench" $c --device cuda --mem-type cuda \
            -m 8:16m -f || return 1
    done
}

optim_bench_tests() {
    cd "$build" && top_builddir=. bash "$top/tests/system/perf/run_optim_bench.sh"
}

optim_bench_table() {
    "$build/perf/zsh_optim_bench" --device cuda -n 1m,16m,64m,256m
}

# ZeRO stage 3 of a torch model through the C API: host, device and offload
# give the same losses. Its skip (77, no CUDA) counts as a failure here.
torch_python() {
    local py
    for py in ${PYTHON:-} /usr/bin/python3 python3; do
        "$py" -c 'import torch' 2>/dev/null && { echo "$py"; return 0; }
    done
    echo python3
}

zero_torch() {
    "$(torch_python)" "$top/tests/system/gpu/zero_torch.py" "$build/.libs/libzeroshard.so" "$@"
}

# zeroshard.torch.ZeRO and plain torch side by side on the device: a GPT
# and a ViT, compute only, torch.optim, stages 0-3 and offload (a table).
torch_gpu() {
    cd "$build" && PYTHONPATH=$build/python timeout 300 "$(torch_python)" "$top/perf/torch_gpu.py" |
        tee "$out/torch_gpu.md"
    return "${PIPESTATUS[0]}"
}

# A machine without a usable GPU or without nvcc would skip every device
# test: that is no GPU run, so it fails here before anything is built.
preflight() {
    nvidia-smi -L | grep '^GPU ' || { echo "nvidia-smi lists no GPU"; return 1; }
    [ -x "$cuda/bin/nvcc" ] || { echo "no nvcc in $cuda/bin: the device kernels would be stubs"; return 1; }
    "$cuda/bin/nvcc" --version | tail -2
}
nvidia-smi -L >"$out/gpu.txt" 2>&1
step preflight preflight || { cat "$out/preflight.log"; exit 1; }
step unpack_debs unpack || exit 1
setup_env
step configure configure_build || { cat "$summary"; exit 1; }
step build make_all || { tail -40 "$out/build.log"; exit 1; }
step gpu_tests gpu_tests
step bench_tests bench_tests
step bench_tables bench_tables
step bench_told bench_told
step optim_bench_tests optim_bench_tests
step optim_bench_table optim_bench_table
step zero_torch zero_torch
# The same training on a model wide enough that the offloaded copies take
# time: their overlap with the reductions and the host update, measured.
step zero_torch_wide zero_torch --hidden 4096 --bucket 4194304
# The torch backend and zeroshard.torch.ZeRO on CPU tensors under the GPU
# machine's torch (2.x, where Debian's is 1.13): the package is built when
# configure finds Python.h, numpy and pybind11 for $PYTHON.
step torch_backend_cpu bash -c "cd '$build' && bash '$top/tests/system/python/run_torch.sh'"
step zero_torch_cpu bash -c "cd '$build' && bash '$top/tests/system/python/run_zero.sh'"
# The same on CUDA tensors: the backend's calls and ZeRO on a CUDA module,
# one rank (NCCL refuses two ranks on one GPU).
step torch_backend_cuda bash -c "cd '$build' && bash '$top/tests/system/python/run_torch_cuda.sh'"
step zero_torch_cuda bash -c "cd '$build' && bash '$top/tests/system/python/run_zero_cuda.sh'"
step torch_gpu torch_gpu
if [ -n "${ZSH_GPU_EXTRA:-}" ]; then
    step extra bash -c "cd '$build' && $ZSH_GPU_EXTRA"
fi
echo "== $failed step(s) failed" | tee -a "$summary"
[ $failed = 0 ]
