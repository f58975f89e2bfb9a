#!/bin/bash
# Build ZeroShard's Debian packages from this tree (debian/):
#   contrib/debian-packages.sh [-b BUILDDIR] OUTDIR
# BUILDDIR is a configured build tree (default ./build): its `make dist`
# gives the sources, unpacked under OUTDIR, where dpkg-buildpackage -b -us -uc
# builds libzeroshard0, libzeroshard-dev, zeroshard-tools and
# python3-zeroshard. The .debs land in OUTDIR, lintian's report in
# OUTDIR/lintian.txt. Build-Depends (debian/control) must be installed:
# apt-get install debhelper dh-python lintian, with contrib/debian-setup.sh's list.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
while getopts b: opt; do
    case $opt in
    b) build=$(cd "$OPTARG" && pwd) ;;
    *) echo "usage: $0 [-b BUILDDIR] OUTDIR" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || { echo "usage: $0 [-b BUILDDIR] OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
for tool in dpkg-buildpackage dh; do
    command -v $tool >/dev/null || { echo "debian-packages.sh: $tool not found (apt-get install dpkg-dev debhelper dh-python)" >&2; exit 1; }
done
[ -f "$build/Makefile" ] || { echo "debian-packages.sh: $build is not a configured build tree" >&2; exit 1; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")

make -s -C "$build" dist >/dev/null
rm -rf "$out/zeroshard-$version"
tar -xzf "$build/zeroshard-$version.tar.gz" -C "$out"
cd "$out/zeroshard-$version"
dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; echo "debian-packages.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }
ls "$out"/*.deb
if command -v lintian >/dev/null; then
    lintian --info "$out"/zeroshard_*.changes >"$out/lintian.txt" 2>&1 || true
    echo "lintian: $(grep -c '^[EW]:' "$out/lintian.txt" || true) errors and warnings ($out/lintian.txt)"
fi
