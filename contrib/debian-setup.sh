#!/bin/bash
# Set up a Debian 12 machine and build ZeroShard into ./build:
# install the packages it needs (as root, or through sudo), generate the
# build system, configure and compile. Safe to run again.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ZSH_BUILD_DIR:-$top/build}
packages=(build-essential pkg-config autoconf automake libtool
          libucx-dev ucx-utils libhwloc-dev hwloc
          libopenmpi-dev openmpi-bin libpmix-dev libgtest-dev)

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
