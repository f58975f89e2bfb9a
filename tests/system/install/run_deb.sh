#!/bin/bash
# The Debian packages (debian/) installed into a fresh root and run there:
# each .deb unpacked by dpkg-deb -x into an empty directory (no package of
# this project on the system is used), the four packages holding what they
# should, zsh_info from the root printing the library's version and
# zsh_estimate running on the root's libzeroshard.so.0, a man page, a program built with only the -dev
# package's pkg-config file run at 2 ranks under mpirun, and the Python
# module imported from python3-zeroshard doing an all-reduce.
#
# Building the packages takes minutes (contrib/debian-packages.sh), so it is
# opt-in: ZSH_DEB_DIR=DIR tests the .debs already in DIR; ZSH_TEST_DEB=1
# builds them first (into a temporary directory). Otherwise every case is
# skipped with the reason and the script exits 77.
# GoogleTest-style results (tests/harness/results.sh).
set -u
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
builddir=${abs_top_builddir:-$srcdir/build}
unset MAKEFLAGS MFLAGS MAKELEVEL
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
cases=(packages_hold_their_files programs_run_from_the_root man_page_in_zeroshard_tools
    program_built_with_dev_package_runs_np2 python3_zeroshard_all_reduces)
results_begin deb ${#cases[@]}
skip_all() {
    local c
    for c in "${cases[@]}"; do result_skip "$c" "$1"; done
    results_end
    exit 77
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
debs=${ZSH_DEB_DIR:-}
if [ -z "$debs" ]; then
    [ "${ZSH_TEST_DEB:-0}" = 1 ] ||
        skip_all "opt-in: ZSH_TEST_DEB=1 builds the packages (minutes), ZSH_DEB_DIR=DIR tests built ones"
    { command -v dpkg-buildpackage && command -v dh; } >/dev/null ||
        skip_all "no dpkg-buildpackage/dh (apt-get install dpkg-dev debhelper dh-python)"
    debs=$tmp/debs
    "$srcdir/contrib/debian-packages.sh" -b "$builddir" "$debs" || {
        result build "contrib/debian-packages.sh failed"
        results_end
        exit 1
    }
fi
command -v dpkg-deb >/dev/null || skip_all "no dpkg-deb"
root=$tmp/root
mkdir -p "$root"
for p in libzeroshard0 libzeroshard-dev zeroshard-tools python3-zeroshard; do
    deb=$(find "$debs" -maxdepth 1 -name "${p}_*.deb" | head -1)
    [ -n "$deb" ] || skip_all "no ${p}_*.deb in $debs"
    dpkg-deb -x "$deb" "$root"
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/$p.files"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=/usr/lib/$multiarch
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile" 2>/dev/null)

# has PACKAGE PATTERN...: each grep pattern matches a file of PACKAGE.
has() {
    local p=$1 pat
    shift
    for pat in "$@"; do
        grep -qx -- "$pat" "$tmp/$p.files" || echo "$p has no file matching $pat"
    done
}
result packages_hold_their_files \
    "$(has libzeroshard0 "$libdir/libzeroshard\.so\.0" "$libdir/libzeroshard\.so\.0\.[0-9.]*")" \
    "$(has libzeroshard-dev /usr/include/zeroshard\.h /usr/include/zeroshard/optim\.h \
        "$libdir/libzeroshard\.so" "$libdir/pkgconfig/zeroshard\.pc")" \
    "$(has zeroshard-tools /usr/bin/zsh_info /usr/bin/zshrun /usr/bin/zsh_train \
        /usr/share/man/man1/zsh_info\.1\.gz /usr/share/man/man1/zshrun\.1\.gz)" \
    "$(has python3-zeroshard /usr/lib/python3/dist-packages/zeroshard/__init__\.py \
        '/usr/lib/python3/dist-packages/zeroshard/_zeroshard.*\.so')" \
    "$(grep -h '\.la$\|__pycache__\|/usr/local/' "$tmp"/*.files)"

export LD_LIBRARY_PATH=$root$libdir
# zsh_info reports the library's version; zsh_estimate is one of the
# programs linked to libzeroshard.so.0.
programs() {
    local out lib
    out=$("$root/usr/bin/zsh_info" -v 2>&1) || { echo "zsh_info -v: $out"; return; }
    [ "$out" = "# ZeroShard version: headers $version, library $version" ] || echo "zsh_info -v: $out"
    out=$("$root/usr/bin/zsh_estimate" --params 7.5B --ranks 64 --stage 3 2>&1) ||
        { echo "zsh_estimate: $out"; return; }
    [[ $out == *"stage 3"* ]] || echo "zsh_estimate prints no stage 3: $out"
    lib=$(ldd "$root/usr/bin/zsh_estimate" | awk '$1 == "libzeroshard.so.0" {print $3}')
    [ "$lib" = "$root$libdir/libzeroshard.so.0" ] || echo "zsh_estimate loads libzeroshard.so.0 from '$lib'"
}
result programs_run_from_the_root "$(programs)"

result man_page_in_zeroshard_tools \
    "$(zcat "$root/usr/share/man/man1/zsh_info.1.gz" 2>&1 | grep -q '^\.TH ZSH_INFO' || echo "zsh_info.1.gz has no .TH ZSH_INFO")"

program() {
    local flags out np=2
    # The .pc file says /usr; the sysroot maps it into the root.
    flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$libdir/pkgconfig \
        PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
        pkg-config --cflags --libs zeroshard) || { echo "pkg-config zeroshard failed"; return; }
    # shellcheck disable=SC2086 # pkg-config prints several words
    out=$(cc -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer" "$srcdir/tests/system/install/consumer.c" $flags 2>&1) ||
        { echo "cc $flags: $out"; return; }
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    out=$(cd "$tmp" && timeout 120 mpirun -np $np -x LD_LIBRARY_PATH ./consumer 2>&1)
    [ "$(echo "$out" | grep -c "^rank [0-9] of $np: ok (ZeroShard $version)$")" = $np ] ||
        echo "mpirun -np $np consumer: $out"
}
result program_built_with_dev_package_runs_np2 "$(program)"

py() {
    local out
    out=$(cd "$tmp" && PYTHONPATH=$root/usr/lib/python3/dist-packages RANK=0 WORLD_SIZE=1 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) /usr/bin/python3 -c '
import numpy as np, zeroshard
with zeroshard.Comm() as c:
    x = np.ones(4, np.float32)
    c.all_reduce(x)
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libzeroshard.so" in l][0]
print(zeroshard.__file__, zeroshard.__version__, x.sum(), lib)' 2>&1)
    [ "$out" = "$root/usr/lib/python3/dist-packages/zeroshard/__init__.py $version 4.0 $root$libdir/libzeroshard.so.0.0.0" ] ||
        echo "python3: $out"
}
result python3_zeroshard_all_reduces "$(py)"
results_end
