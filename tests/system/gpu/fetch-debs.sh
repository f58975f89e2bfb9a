#!/bin/bash
# Fetch, on a Debian 12 machine with its package registry, the packages the
# GPU machine lacks (it reaches no registry and runs another OS image):
# Debian's UCX, hwloc, GoogleTest, OpenSSL's libcrypto, json-c and xxhash, as
# .deb files in DIR (default .gpu-debs in the tree's root, which git ignores), for
# tests/system/gpu/run.sh to unpack there with dpkg -x.
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${1:-$top/.gpu-debs}
mkdir -p "$dir"
cd "$dir"
rm -f ./*.deb
apt-get download libucx0 libucx-dev libhwloc15 libhwloc-dev libgtest-dev libssl3 libssl-dev \
    libjson-c5 libjson-c-dev libxxhash-dev \
    librdmacm1 >/dev/null
ls -1 ./*.deb
