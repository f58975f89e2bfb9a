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
# The Python package zeroshard (python/) and its torch tests (torchvision's
# ViT and Swin at ZeRO stage 3; those cases skip without it).
packages+=(python3-dev python3-numpy pybind11-dev python3-torch python3-torchvision)
# pip install ./python offline into a venv over the system's packages
# (tests/system/python/run_pip.sh): venv with pip, setuptools and pybind11's
# setup helpers.
packages+=(python3-venv python3-pip python3-setuptools python3-pybind11)
# Debian's torch does its fp32 matmuls through the libblas.so.3 alternative;
# the reference BLAS behind it by default makes examples/torch/train_gpt.py's
# fp32 steps far slower than OpenBLAS (docs/python.md has the measurement). The
# OpenMP build follows torch.set_num_threads, so ranks sharing the cores do
# not oversubscribe them.
packages+=(libopenblas0-openmp)
# The NVMe tier's I/O engine (io_uring, then libaio), zsh_train's matrix
# products, and fio, which measures the disk the offload benchmark is held to.
packages+=(liburing-dev libaio-dev libopenblas-dev fio)
# perf/plot_busbw.sh, which tests/system/perf/run_bench.sh runs.
packages+=(gnuplot-nox)
# A real Slurm on the simulated cluster (tests/system/cluster/run_slurm.sh):
# slurmctld, slurmd (its mpi_pmix plugin comes with slurm-wlm-basic-plugins),
# the clients (srun, sbatch, salloc, scontrol) and munge for their credentials.
# The test starts daemons of its own (own key, socket, configuration and
# ports, inside the cluster's namespaces), beside any the system runs.
packages+=(slurmctld slurmd slurm-client munge)
# The manual (make html, tests/system/build/run_manual.sh): Sphinx with MyST
# for its Markdown pages, Breathe for the C API from doxygen's XML, a theme.
packages+=(python3-sphinx python3-myst-parser python3-breathe python3-sphinx-rtd-theme)
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

# Every package already installed (a second run, as .ci/run makes): no
# apt-get update, which takes a while and needs the registry.
all_installed() {
    local missing
    missing=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>&1 |
        grep -vc ' installed$')
    [ "$missing" = 0 ]
}

updated=0
if command -v apt-get >/dev/null && all_installed; then
    echo "== packages: all installed"
elif command -v apt-get >/dev/null; then
    echo "== installing packages: ${packages[*]}"
    as_root apt-get update -qq
    updated=1
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
if command -v apt-get >/dev/null; then
    if ! dpkg -s environment-modules >/dev/null 2>&1 &&
       ! ls "$envmodules_dir"/usr/lib/*/modulecmd.tcl >/dev/null 2>&1; then
        echo "== unpacking environment-modules into $envmodules_dir"
        [ $updated = 1 ] || as_root apt-get update -qq
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
mkdir -p "$build"
# A build configured before with the same flags is only brought up to date:
# make regenerates and reconfigures what changed itself.
flags_file=$build/.zsh-configure-flags
if [ -f "$build/Makefile" ] && [ -x configure ] &&
   [ "$(cat "$flags_file" 2>/dev/null)" = "${ZSH_CONFIGURE_FLAGS:-}" ]; then
    echo "== configured before, with the same flags"
    cd "$build"
else
    ./autogen.sh >/dev/null 2>&1
    cd "$build"
    "$top/configure" ${ZSH_CONFIGURE_FLAGS:-} >configure.out 2>&1 || { cat configure.out; exit 1; }
    printf '%s' "${ZSH_CONFIGURE_FLAGS:-}" >"$flags_file"
fi
sed -n '/ZeroShard .* configured/,$p' configure.out
make -j"$(nproc)" >make.out 2>&1 || { tail -50 make.out; exit 1; }
echo "== built"
