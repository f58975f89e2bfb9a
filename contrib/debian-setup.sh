#!/bin/bash
# Set up a Debian 12 machine and build ZeroShard into ./build:
# install the packages it needs (as root, or through sudo), generate the
# build system, configure and compile. Safe to run again.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
packages=(build-essential pkg-config autoconf automake libtool
          libucx-dev ucx-utils libhwloc-dev hwloc libssl-dev
          libopenmpi-dev openmpi-bin libpmix-dev libgtest-dev libjson-c-dev libxxhash-dev
          lmod doxygen man-db python3 tcl8.6 less procps)
# The sanitizer builds, the libFuzzer target and make valgrind (tests/run_all.sh
# runs the first two): clang with its sanitizer and libFuzzer runtimes.
packages+=(clang libclang-rt-dev valgrind)
# The Python package zeroshard (python/) and its torch tests.
packages+=(python3-dev python3-numpy pybind11-dev python3-torch)
# Debian's torch does its fp32 matmuls through the libblas.so.3 alternative;
# the reference BLAS behind it by default makes examples/torch/train_gpt.py's
# fp32 steps far slower than OpenBLAS (the README has the measurement). The
# OpenMP build follows torch.set_num_threads, so ranks sharing the cores do
# not oversubscribe them.
packages+=(libopenblas0-openmp)
# The NVMe tier's I/O engine (io_uring, then libaio), zsh_train's matrix
# products, and fio, which measures the disk the offload benchmark is held to.
packages+=(liburing-dev libaio-dev libopenblas-dev fio)
# perf/plot_busbw.sh, which tests/system/perf/run_bench.sh runs.
packages+=(gnuplot-nox)
# Environment Modules conflicts with Lmod in Debian, so it is unpacked from its
# own Debian package next to Lmod instead of installed (its dependencies,
# tcl8.6, less and procps, are above). The install test finds it here.
envmodules_dir=${ZSH_ENVMODULES_DIR:-/opt/environment-modules}

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    else
        sudo "$@"
    fi
}

if command -v apt-get >/dev/null; then
    echo "== installing packages: ${packages[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
    if ! dpkg -s environment-modules >/dev/null 2>&1 &&
       ! ls "$envmodules_dir"/usr/lib/*/modulecmd.tcl >/dev/null 2>&1; then
        echo "== unpacking environment-modules into $envmodules_dir"
        debdir=$(mktemp -d)
        # As root, apt-get downloads as the _apt user, which must own the directory.
        if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
            chown _apt "$debdir"
        fi
        (cd "$debdir" && apt-get download -qq environment-modules)
        as_root mkdir -p "$envmodules_dir"
        as_root dpkg-deb -x "$debdir"/environment-modules_*.deb "$envmodules_dir"
        rm -rf "$debdir"
    fi
else
    echo "== no apt-get here: make sure these are installed: ${packages[*]}"
fi

echo "== building in $build"
cd "$top"
./autogen.sh >/dev/null 2>&1
mkdir -p "$build"
cd "$build"
"$top/configure" ${ZSH_CONFIGURE_FLAGS:-} >configure.out 2>&1 || { cat configure.out; exit 1; }
sed -n '/ZeroShard .* configured/,$p' configure.out
make -j"$(nproc)" >make.out 2>&1 || { tail -50 make.out; exit 1; }
echo "== built"
