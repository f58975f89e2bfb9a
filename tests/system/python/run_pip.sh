#!/bin/bash
# pip install ./python as a Python user does it: this build's library,
# headers, pkg-config file and programs installed (make install's own
# targets, under DESTDIR, which PKG_CONFIG_SYSROOT_DIR maps back: a fresh
# configure --prefix would rebuild everything), a fresh venv over the
# system's packages, and pip install --no-build-isolation --no-index of a
# copy of python/, offline, with the system's setuptools and pybind11. Then
# the module loads the installed libzeroshard (not the build tree's), python
# -m zeroshard.info prints what the installed zsh_info prints, and the smoke
# case (tests/python/test_smoke.py) passes at 2 ranks. Skipped (77) only
# where a venv with pip cannot be made or the build needs a module the
# interpreter lacks. GoogleTest-style results (tests/harness/results.sh).
set -u
. "$(dirname "$0")/ranks.sh"
make_cmd=${MAKE:-make}
# A fresh make, not a sub-make of make check.
unset MAKEFLAGS MFLAGS MAKELEVEL
suite=pip
results_begin "$suite"

tmp=$(mktemp -d)
log=$tmp/log
mkdir -p "$log"
trap 'rm -rf "$tmp"' EXIT
skip_all() {
    result_skip all "$1"
    results_end
    exit 77
}

# The interpreter configure found, else Debian's (the one with torch).
python=
for p in ${PYTHON:-} /usr/bin/python3 python3; do
    [ "$p" = : ] && continue
    command -v "$p" >/dev/null && { python=$p; break; }
done
[ -n "$python" ] || skip_all "no python3"
command -v pkg-config >/dev/null || skip_all "no pkg-config (apt-get install pkg-config)"
missing=$("$python" -c '
import importlib.util
print(" ".join(m for m in ("numpy", "setuptools", "pybind11", "venv")
               if importlib.util.find_spec(m) is None))')
[ -z "$missing" ] || skip_all "$python lacks $missing (contrib/debian-setup.sh installs python3-numpy, python3-setuptools, python3-pybind11, python3-venv, python3-pip)"

# ---- the library installed --------------------------------------------------------
root=$tmp/root
install_lib() {
    $make_cmd -C "$builddir" install-libLTLIBRARIES install-includeHEADERS install-zshincHEADERS \
        install-nodist_zshincHEADERS install-pkgconfigDATA install-binPROGRAMS DESTDIR="$root" \
        >"$log/install" 2>&1 || { tail -20 "$log/install"; return 1; }
}
result_check install_library_headers_pkgconfig_and_zsh_info install_lib
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR=$root
PKG_CONFIG_PATH=$(find "$root" -path '*/pkgconfig/zeroshard.pc' -printf '%h\n' | head -1)
libdir=$(pkg-config --variable=libdir zeroshard 2>/dev/null)
zsh_info=$(find "$root" -path '*/bin/zsh_info' -type f | head -1)
if [ -z "$libdir" ] || [ ! -e "$libdir/libzeroshard.so.0" ] || [ -z "$zsh_info" ]; then
    result_as FAILED installed_copy_found "no zeroshard.pc, libzeroshard.so.0 or zsh_info under $root"
    results_end
    exit 1
fi

# ---- a fresh venv, pip install ----------------------------------------------------
venv=$tmp/venv
if ! "$python" -m venv --system-site-packages "$venv" >"$log/venv" 2>&1; then
    skip_all "$python -m venv failed: $(tail -3 "$log/venv" | tr '\n' ' ')"
fi
# pip builds in the source directory (build/, egg-info): a copy, so the tree
# stays clean and may be read-only (make distcheck).
mkdir -p "$tmp/src"
cp -R "$srcdir/python" "$tmp/src/" &&
    rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info "$tmp/src/python/.libs" &&
    find "$tmp/src/python" \( -name '_zeroshard*.so' -o -name '*.la' -o -name '*.lo' -o -name '*.o' \
        -o -name __pycache__ -o -name .deps -o -name .dirstamp \) -prune -exec rm -rf {} +
pip_install() {
    # Offline (--no-index), nothing kept in the user's home.
    (cd "$tmp" && unset LD_LIBRARY_PATH PYTHONPATH &&
        PIP_CACHE_DIR=$tmp/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1 \
            "$venv/bin/python" -m pip install --no-build-isolation --no-index "$tmp/src/python") \
        >"$log/pip" 2>&1 || { tail -30 "$log/pip"; return 1; }
}
result_check pip_install_no_build_isolation_builds_offline_in_a_fresh_venv pip_install

# What the venv's interpreter imports, with nothing on PYTHONPATH or
# LD_LIBRARY_PATH: its own copy, whose module loaded the installed library.
loaded() {
    local out want
    want=$(readlink -f "$libdir/libzeroshard.so.0")
    out=$(cd "$tmp" && env -u PYTHONPATH -u LD_LIBRARY_PATH "$venv/bin/python" -c '
import os, zeroshard
maps = open("/proc/self/maps").read().split("\n")
libs = sorted({l.split()[-1] for l in maps if "libzeroshard.so" in l})
print(os.path.dirname(zeroshard.__file__), zeroshard.__version__, *libs)' 2>&1) || { echo "$out"; return 1; }
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    [ "$out" = "$site/zeroshard $PACKAGE_VERSION $want" ] ||
        echo "imported (package, version, libzeroshard): '$out'; expected '$site/zeroshard $PACKAGE_VERSION $want'"
}
result_check module_loads_the_installed_libzeroshard loaded

# Where the venv sees torch, pip built zeroshard._zeroshard_torch against it:
# stage 3 lends its buckets to torch storages (zeroshard/torch/storage.py).
lends() {
    local out
    out=$(cd "$tmp" && env -u PYTHONPATH "$venv/bin/python" -c '
import zeroshard.torch.storage as s
print(s.available(), s.why_not)' 2>&1) || { echo "$out" | tail -3; return 1; }
    [ "$out" = "True None" ] || echo "zeroshard.torch.storage: '$out'; expected 'True None'"
}
if (cd "$tmp" && "$venv/bin/python" -c 'import torch' >/dev/null 2>&1); then
    result_check pip_built_the_torch_storage_module_against_the_venvs_torch lends
else
    result_skip pip_built_the_torch_storage_module_against_the_venvs_torch "torch is not importable in the venv"
fi

# python -m zeroshard.info against the installed zsh_info, all sections but -e
# (about zsh_info's own directories), then two of them.
same_info() { # ZSH_INFO_OPTIONS [PYTHON_OPTIONS]
    local a=$log/zsh_info.out b=$log/python.out
    (cd "$tmp" && "$zsh_info" $1 >"$a" 2>/dev/null) || { echo "zsh_info $1 failed"; return 0; }
    (cd "$tmp" && env -u PYTHONPATH "$venv/bin/python" -m zeroshard.info ${2:-} >"$b" 2>"$log/python.err") ||
        { echo "python -m zeroshard.info ${2:-} failed:"; cat "$log/python.err"; return 0; }
    [ "$(grep -c . "$a")" -ge 1 ] || { echo "zsh_info $1 printed nothing"; return 0; }
    diff "$a" "$b" >"$log/diff" || { echo "zsh_info $1 (<) and python -m zeroshard.info ${2:-} (>) differ:"; head -20 "$log/diff"; }
}
result_check python_m_zeroshard_info_prints_what_zsh_info_prints same_info "-v -f -d -t -c -s"
result_check python_m_zeroshard_info_c_s_prints_what_zsh_info_c_s_prints same_info "-c -s" "-c -s"

# ---- the smoke case, at 2 ranks ----------------------------------------------------
# py_job puts $pkg first on PYTHONPATH: an empty directory, so that the venv
# imports its own copy.
pkg=$tmp/empty
mkdir -p "$pkg"
python=$venv/bin/python
unset LD_LIBRARY_PATH
want=$(py_count_cases "$srcdir/tests/python/test_smoke.py")
py_job smoke_np2 2 "$want" "$srcdir/tests/python/test_smoke.py"
results_suite=$suite
results_end
