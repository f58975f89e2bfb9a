#!/bin/bash
# ZeroShard installed the way an HPC centre and a framework use it:
# configure --prefix=<temporary directory> && make install, then the layout,
# the library's soname and exported symbols, pkg-config, zsh_info and its man
# page, zshrun and its man page, the install table of the manual's
# docs/install.md against what make install laid out, env.sh as the one step that sets up a newcomer's
# empty environment (zsh_info saying what is missing before it), the
# README's examples built and run exactly as its commands say at 2 and 3
# ranks, an MPI program under zshrun refused with the launcher message, make
# docs, --with-modulefiles-dir and the Spack package; then, once with Lmod
# and once with Environment Modules:
# module use + module load zeroshard,
# every variable set, an outside program built with only
# `pkg-config --cflags --libs zeroshard` and run under mpirun at 2 ranks, and
# module unload restoring the environment exactly.
# Each check prints a GoogleTest-style line; the summary at the end is what
# tests/run_all.sh counts.
#
# With ZSH_INSTALLED_PREFIX set (make installcheck sets it to $(prefix)), the
# checks run on the tree that make install already laid out there, with
# make docs in this build tree, instead of configuring and building a tree
# of their own: make distcheck installs one, and tests/run_all.sh runs this
# test there rather than build a third time.
set -u
srcdir=${abs_top_srcdir:?run through make check}
builddir=${abs_top_builddir:?run through make check}
version=${PACKAGE_VERSION:?run through make check}
make_cmd=${MAKE:-make}
# A fresh make, not a sub-make of make check.
unset MAKEFLAGS MFLAGS MAKELEVEL

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=${ZSH_INSTALLED_PREFIX:-$tmp/prefix}
# The build tree whose make install filled the prefix (make docs runs there).
install_build=$tmp/build
[ -n "${ZSH_INSTALLED_PREFIX:-}" ] && install_build=$builddir
# Python writes no __pycache__ into the prefix (make uninstall would leave it).
export PYTHONDONTWRITEBYTECODE=1
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
# Seventeen checks of the installed tree, and five in each of the two module
# sessions (Lmod, Environment Modules); each reports passed, failed or
# skipped, and one that never reported (a session that died, an early exit)
# fails the count.
results_begin install $((17 + 2 * 5))

# report OK|FAILED|SKIPPED SUITE.CASE [DETAIL]: one result; the checks are of
# several suites (install, docs, spack, modules_lmod, modules_envmodules).
report() {
    results_suite=${2%%.*}
    result_as "$1" "${2#*.}" "${3:-}"
}
# check NAME FUNCTION [ARGS]: FUNCTION returns 0 for a pass and prints why it failed.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        report OK "$name"
    else
        report FAILED "$name" "$out"
    fi
}

# ---- configure --prefix, make install -------------------------------------------
# The same configure options as this build, but a fresh tree and a new prefix.
configure_args=()
if [ -x "$builddir/config.status" ]; then
    eval "set -- $("$builddir/config.status" --config)"
    for arg in "$@"; do
        case $arg in
        --prefix=* | --srcdir=* | --cache-file=* | --with-modulefiles-dir=* | -C) ;;
        *) configure_args+=("$arg") ;;
        esac
    done
fi

# configure refuses a second, out-of-tree build of a source tree configured in
# place; the files of the release tarball then make a clean source tree.
configure_src=$srcdir
if [ -f "$srcdir/config.status" ]; then
    configure_src=$tmp/src
    $make_cmd -C "$builddir" distdir distdir="$configure_src" top_distdir="$configure_src" \
        >"$tmp/distdir.log" 2>&1 || { cat "$tmp/distdir.log"; exit 1; }
fi

install_tree() {
    if [ -n "${ZSH_INSTALLED_PREFIX:-}" ]; then
        [ -x "$prefix/bin/zsh_info" ] && [ -f "$prefix/lib/pkgconfig/zeroshard.pc" ] ||
            { echo "ZSH_INSTALLED_PREFIX=$prefix holds no make install of ZeroShard"; return 1; }
        return 0
    fi
    mkdir -p "$tmp/build" && cd "$tmp/build" &&
        "$configure_src/configure" --prefix="$prefix" "${configure_args[@]}" >configure.log 2>&1 &&
        $make_cmd -j2 install >install.log 2>&1 ||
        { tail -30 configure.log install.log 2>/dev/null; return 1; }
}
check install.configure_with_a_prefix_and_make_install install_tree
if [ "$failed" -gt 0 ]; then
    results_end
    exit 1
fi

# ---- what make install left -------------------------------------------------------
layout() {
    local f missing=0 prog
    for f in lib/libzeroshard.so lib/libzeroshard.so.0 include/zeroshard.h \
        include/zeroshard/version.h lib/pkgconfig/zeroshard.pc bin/zsh_info bin/zshrun bin/zsh_ckpt \
        share/doc/zeroshard/README.md share/man/man1/zsh_info.1 share/man/man1/zshrun.1 \
        "share/modulefiles/zeroshard/$version"; do
        [ -e "$prefix/$f" ] || { echo "missing: $f"; missing=1; }
    done
    # Every public header of the source tree, whoever adds one.
    for f in "$srcdir"/include/zeroshard/*.h; do
        [ -e "$prefix/include/zeroshard/${f##*/}" ] || { echo "header not installed: ${f##*/}"; missing=1; }
    done
    # Every installed program has a man page.
    for prog in "$prefix"/bin/*; do
        [ -e "$prefix/share/man/man1/${prog##*/}.1" ] || { echo "no man page for ${prog##*/}"; missing=1; }
    done
    return $missing
}
check install.layout_has_library_headers_pkgconfig_tools_docs_man_and_modulefile layout

soname() {
    local name
    name=$(readelf -d "$prefix/lib/libzeroshard.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    echo "soname: '$name'"
    [[ $name =~ ^libzeroshard\.so\.[0-9]+$ ]] && [ -f "$prefix/lib/$name" ] &&
        [ "$(readlink -f "$prefix/lib/libzeroshard.so")" = "$(readlink -f "$prefix/lib/$name")" ]
}
check install.library_soname_is_versioned soname

exports() {
    local syms others sym mapped missing=0
    # Names without their version suffix (zsh_allgather@@ZEROSHARD_0).
    syms=$(nm -D --defined-only "$prefix/lib/libzeroshard.so" | sed 's/@.*//') || return 1
    # The version node (an absolute symbol) is the only non-zsh_ entry allowed.
    others=$(echo "$syms" | awk '$3 !~ /^zsh_/ && !($2 == "A" && $3 ~ /^ZEROSHARD_/)')
    [ -z "$others" ] || { echo "exported beyond the zsh_ API:"; echo "$others"; missing=1; }
    mapped=$(grep -o 'zsh_[a-z_0-9]*' "$srcdir/zeroshard.map" | sort -u)
    # A path gone wrong would leave nothing to check.
    [ "$(echo "$mapped" | grep -c .)" -ge 40 ] ||
        { echo "zeroshard.map names $(echo "$mapped" | grep -c .) symbols, fewer than the API has"; missing=1; }
    for sym in $mapped; do
        echo "$syms" | awk '{print $3}' | grep -qx "$sym" || { echo "not exported: $sym"; missing=1; }
    done
    return $missing
}
check install.library_exports_only_the_zsh_api exports

pkgconfig() {
    local modversion cflags libs
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    modversion=$(pkg-config --modversion zeroshard) && cflags=$(pkg-config --cflags zeroshard) &&
        libs=$(pkg-config --libs zeroshard) || return 1
    echo "modversion '$modversion', cflags '$cflags', libs '$libs'"
    [ "$modversion" = "$version" ] && [[ " $cflags " == *" -I$prefix/include "* ]] &&
        [[ " $libs " == *" -L$prefix/lib "* ]] && [[ " $libs " == *" -lzeroshard "* ]]
}
check install.pkg_config_gives_version_and_flags_of_the_prefix pkgconfig

# The Python package: built when this build tree has it (configure's "Python" line).
# The interpreter it was built for: $PYTHON from make check, else Debian's.
python=${PYTHON:-/usr/bin/python3}
[ "$python" = : ] && python=/usr/bin/python3
have_python_pkg=no
[ -f "$builddir/python/zeroshard/_zeroshard.so" ] && have_python_pkg=yes
# import_zeroshard DIR: the interpreter imports zeroshard from DIR, in a
# directory with no other copy, and runs a one-rank all_reduce.
import_zeroshard() {
    local out
    out=$(cd "$tmp" && RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) \
        "$python" -c '
import numpy as np, zeroshard
with zeroshard.Comm() as c:
    x = np.ones(4, np.float32)
    c.all_reduce(x)
print(zeroshard.__file__, zeroshard.__version__, x.sum())' 2>&1) || { echo "$out"; return 1; }
    echo "$out"
    [[ $out == "$1/zeroshard/__init__.py $version 4.0" ]]
}
pkgconfig_python() {
    local dir
    dir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=pythondir zeroshard) || return 1
    echo "pythondir '$dir'"
    [[ $dir == "$prefix"/* ]] && [ -f "$dir/zeroshard/__init__.py" ] && [ -f "$dir/zeroshard/_zeroshard.so" ] &&
        PYTHONPATH=$dir${PYTHONPATH:+:$PYTHONPATH} import_zeroshard "$dir"
}
if [ $have_python_pkg = yes ]; then
    check install.pkg_config_pythondir_holds_the_python_package pkgconfig_python
else
    report SKIPPED install.pkg_config_pythondir_holds_the_python_package "the Python package is not built"
fi

zsh_info_sections() {
    local info=$prefix/bin/zsh_info out feature var documented ok=0
    out=$("$info" -h) || { echo "zsh_info -h failed"; return 1; }
    for opt in -v -f -d -t -c -s -e -h; do
        [[ $out == *"$opt, --"* ]] || { echo "-h does not list $opt"; ok=1; }
    done
    out=$("$info" -v) && [[ $out == *"headers $version, library $version"* ]] ||
        { echo "zsh_info -v: $out"; ok=1; }
    out=$("$info" -f) || ok=1
    for feature in UCX hwloc PMIx MPI CUDA NCCL; do
        echo "$out" | grep -Eq "^#   $feature: +(on|off)" || { echo "-f lacks '$feature: on|off':"; echo "$out"; ok=1; }
    done
    out=$("$info" -t) && [[ $out == *"core(s)"* ]] || { echo "zsh_info -t: $out"; ok=1; }
    out=$(UCX_TLS=self,tcp "$info" -d) && [[ $out == *"tcp"* ]] || { echo "zsh_info -d: $out"; ok=1; }
    out=$("$info" -s) && [[ $out == *"auto: the first of these that applies picks"* ]] ||
        { echo "zsh_info -s: $out"; ok=1; }
    # -c: every variable, its default and its current value.
    out=$(ZSH_CHUNK_SIZE=64k "$info" -c) || { echo "zsh_info -c failed"; ok=1; }
    # The configuration table's rows: from its marker to the blank line after it.
    documented=$(sed -n '/^<!-- zsh_info -c -->$/,/^$/p' "$srcdir/docs/configuration.md" |
                 sed -n 's/^| [^|]* | `\(ZSH_[A-Z_0-9]*\)` .*/\1/p')
    [ "$(echo "$documented" | grep -c .)" -ge 20 ] ||
        { echo "docs/configuration.md's table names too few variables: $documented"; ok=1; }
    for var in $documented; do
        echo "$out" | grep -q "^$var=" || { echo "-c lacks $var (documented in docs/configuration.md)"; ok=1; }
    done
    for var in $(echo "$out" | sed -n 's/^\(ZSH_[A-Z_0-9]*\)=.*/\1/p'); do
        echo "$documented" | grep -qx "$var" || { echo "$var is not in docs/configuration.md's table"; ok=1; }
    done
    echo "$out" | grep -q '^ZSH_CHUNK_SIZE=65536$' && echo "$out" | grep -q 'default: 256k, set by: ZSH_CHUNK_SIZE' ||
        { echo "-c does not show ZSH_CHUNK_SIZE's default and current value"; ok=1; }
    return $ok
}
check install.zsh_info_prints_version_features_devices_topology_and_config zsh_info_sections

man_page() {
    local page=$prefix/share/man/man1/zsh_info.1 opt opts ok=0
    opts=$("$prefix/bin/zsh_info" -h | grep -o '^  -[a-z]' | tr -d ' -')
    [ "$(echo "$opts" | grep -c .)" -ge 7 ] || { echo "zsh_info -h lists too few options: $opts"; ok=1; }
    for opt in $opts; do
        grep -q "^\.BR \\\\-$opt " "$page" || { echo "man page lacks -$opt"; ok=1; }
    done
    return $ok
}
check install.man_page_documents_every_zsh_info_option man_page

# The installed launcher runs ranks, and its page has every section and option.
zshrun_installed() {
    local run=$prefix/bin/zshrun page=$prefix/share/man/man1/zshrun.1 out opt opts section ok=0
    out=$("$run" --version) && [ "$out" = "zshrun (ZeroShard) $version" ] || { echo "zshrun --version: $out"; ok=1; }
    out=$(timeout 20 "$run" -n 2 sh -c 'echo $RANK/$WORLD_SIZE') &&
        [ "$(echo "$out" | sort | paste -sd' ')" = "[0] 0/2 [1] 1/2" ] || { echo "zshrun -n 2: $out"; ok=1; }
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT "EXIT STATUS" EXAMPLES "SEE ALSO"; do
        grep -q "^\.SH \"\?$section\"\?\$" "$page" || { echo "zshrun.1 lacks the section $section"; ok=1; }
    done
    opts=$("$run" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
    [ "$(echo "$opts" | grep -c .)" -ge 10 ] || { echo "zshrun --help lists too few options: $opts"; ok=1; }
    for opt in $opts; do
        # groff spells each dash of an option \-
        grep -qF -- "$(echo "$opt" | sed 's/-/\\-/g')" "$page" || { echo "zshrun.1 lacks $opt"; ok=1; }
    done
    return $ok
}
check install.zshrun_runs_ranks_and_its_man_page_has_every_section_and_option zshrun_installed

# ---- the manual's install table, env.sh, the README's examples ---------------
# covers PATTERN FILE: the install table's PATTERN names FILE.
covers() {
    # shellcheck disable=SC2053
    [[ $2 == $1 ]] || { [[ $1 == */ ]] && [[ $2 == $1* ]]; }
}
# The table after <!-- make install --> names every file make install lays
# out: each cell's `paths` are patterns (<version> the version, python3.X any
# Python, a trailing / everything under it), every installed file must match
# one and every pattern some file.
install_table() {
    local patterns pat f files ok=0 matched
    patterns=$(awk '$0 == "<!-- make install -->" { on = 1; next }
                    on && /^\|/ { print; next }
                    on { exit }' "$srcdir/docs/install.md" | tail -n +3 | cut -d'|' -f2 |
               grep -o '`[^`]*`' | tr -d '`' |
               sed -e "s/<version>/$version/g" -e 's/python3\.X/python3.*/g')
    [ $have_python_pkg = yes ] || patterns=$(echo "$patterns" | grep -v 'site-packages')
    [ "$(echo "$patterns" | grep -c .)" -ge 25 ] ||
        { echo "docs/install.md's install table names too few paths:"; echo "$patterns"; return 1; }
    files=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
    for f in $files; do
        matched=0
        for pat in $patterns; do covers "$pat" "$f" && { matched=1; break; }; done
        [ $matched = 1 ] || { echo "installed but not in docs/install.md's table: $f"; ok=1; }
    done
    for pat in $patterns; do
        matched=0
        for f in $files; do covers "$pat" "$f" && { matched=1; break; }; done
        [ $matched = 1 ] || { echo "in docs/install.md's table but not installed: $pat"; ok=1; }
    done
    return $ok
}
check install.manual_install_table_lists_every_installed_file install_table

env_sh=$prefix/share/zeroshard/env.sh
# newcomer DIR CMD...: CMD in DIR with an environment that holds nothing of
# the prefix, as a new user's shell would (mpirun's as-root permission and
# oversubscription aside, which the README says to add).
newcomer() {
    local dir=$1
    shift
    mkdir -p "$dir/home" && cd "$dir" &&
        env -i HOME="$dir/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
            OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            OMPI_MCA_rmaps_base_oversubscribe=1 "$@"
}
# The variables zsh_info -e checks: PYTHONPATH only where the package is built.
env_checks=4
[ $have_python_pkg = yes ] && env_checks=5
env_sh_sets_all() {
    local out ok=0 n dir=$tmp/newcomer-env
    out=$(newcomer "$dir" "$prefix/bin/zsh_info" -e) || { echo "zsh_info -e: $out"; return 1; }
    n=$(echo "$out" | grep -c '^#   [A-Z_]*: missing /')
    [ "$n" = $env_checks ] || { echo "before env.sh, zsh_info -e reports $n of $env_checks missing:"; echo "$out"; ok=1; }
    [[ $out == *"# Set them all with: . $env_sh"* ]] || { echo "zsh_info -e does not name env.sh: $out"; ok=1; }
    out=$(newcomer "$dir" "$prefix/bin/zsh_info" -v 2>&1 >/dev/null)
    [[ $out == *LD_LIBRARY_PATH*"set them with: . $env_sh"* ]] || { echo "zsh_info -v's stderr: '$out'"; ok=1; }
    # From sh (dash) and bash: every variable found, and a second . changes nothing.
    for sh in sh bash; do
        out=$(newcomer "$dir" $sh -c '. "$1" && zsh_info -e && env >"$2" && . "$1" && env >"$3"' \
            sh "$env_sh" "$dir/once" "$dir/twice") || { echo "$sh: $out"; ok=1; continue; }
        n=$(echo "$out" | grep -c '^#   [A-Z_]*: ok (')
        [ "$n" = $env_checks ] || { echo "$sh: after env.sh, $n of $env_checks ok:"; echo "$out"; ok=1; }
        diff "$dir/once" "$dir/twice" >/dev/null || { echo "$sh: sourcing env.sh twice changed:"; diff "$dir/once" "$dir/twice"; ok=1; }
        grep -qx "MANPATH=$prefix/share/man:" "$dir/once" || { echo "$sh: $(grep ^MANPATH= "$dir/once")"; ok=1; }
        grep -qx "ZEROSHARD_ROOT=$prefix" "$dir/once" || { echo "$sh: no ZEROSHARD_ROOT=$prefix"; ok=1; }
    done
    return $ok
}
check install.env_sh_alone_sets_up_an_empty_environment_and_zsh_info_says_what_is_missing env_sh_sets_all

# readme_run N: the README's commands (<!-- example: run -->), in a newcomer's
# environment, with this test's prefix and N ranks: env.sh, zsh_info -e, the
# installed examples built and run, each rank printing what it computed.
readme_run() {
    local n=$1 script out rc ok=0 c py
    script=$(sh "$srcdir/contrib/readme_examples.sh" "$srcdir/README.md" run) || return 1
    # A README whose commands no longer name the prefix or 2 ranks would run
    # something else than this test means.
    [ "$(echo "$script" | grep -c '/opt/zeroshard/[^/ ]*/')" = 1 ] &&
        [ "$(echo "$script" | grep -Ec -- ' -np? 2 ')" = 2 ] ||
        { echo "the README's commands changed shape:"; echo "$script"; return 1; }
    script=$(echo "$script" | sed -e "s|/opt/zeroshard/[^/ ]*/|$prefix/|" -e "s/ -np 2 / -np $n /" \
                                  -e "s/ -n 2 / -n $n /")
    out=$(newcomer "$tmp/readme-$n" timeout 300 bash -e -c "$script" 2>&1)
    rc=$?
    [ $rc = 0 ] || { echo "$script"; echo "exited $rc:"; echo "$out"; return 1; }
    echo "$out"
    [ "$(echo "$out" | grep -c '^#   [A-Z_]*: ok (')" = $env_checks ] ||
        { echo "zsh_info -e did not find all $env_checks variables set"; ok=1; }
    c=$(echo "$out" | grep -Ec "^rank [0-9] of $n: all-gathered $((n * 1024)) parameters \(last $((n * 1024 - 1))\), reduce-scattered 1024 gradients \(sum $((n * (n + 1) / 2)), expected $((n * (n + 1) / 2))\): ok$")
    py=$(echo "$out" | grep -Ec "^\[[0-9]\] rank [0-9] of $n: all_reduce gave $((n * (n - 1) / 2)) \(expected $((n * (n - 1) / 2))\), all_gather $((4 * n)) values: ok$")
    [ "$c" = "$n" ] && [ "$py" = "$n" ] || { echo "$c of $n C ranks and $py of $n Python ranks printed ok"; ok=1; }
    return $ok
}

# mpi_under_zshrun: the C example (MPI) under zshrun, and under mpirun with
# WORLD_SIZE=1 left in the environment: each a job launched for 2 that would
# be 2 jobs of one; both must fail, saying which launcher each side expects.
mpi_under_zshrun() {
    local out rc ok=0 dir=$tmp/readme-2/zsh-examples
    [ -x "$dir/gather_scatter" ] || { echo "no $dir/gather_scatter: the 2-rank run failed"; return 1; }
    out=$(newcomer "$dir" bash -c '. "$1" && zshrun -n 2 ./gather_scatter' sh "$env_sh" 2>&1)
    rc=$?
    echo "zshrun -n 2 ./gather_scatter exited $rc:"
    echo "$out"
    [ $rc != 0 ] && echo "$out" | grep -q "^\[[01]\] zsh_comm_init_mpi: MPI_COMM_WORLD has 1 rank, but WORLD_SIZE=2: a torchrun-style launcher (zshrun, torchrun) started this process.*run the program with mpirun -np 2 or srun -n 2; under zshrun or torchrun, call zsh_comm_init() instead$" || ok=1
    out=$(newcomer "$dir" bash -c '. "$1" && WORLD_SIZE=1 mpirun -np 2 ./gather_scatter' sh "$env_sh" 2>&1)
    rc=$?
    echo "WORLD_SIZE=1 mpirun -np 2 ./gather_scatter exited $rc:"
    echo "$out"
    [ $rc != 0 ] && echo "$out" | grep -q "^zsh_comm_init_mpi: MPI_COMM_WORLD has 2 ranks, but WORLD_SIZE=1 says this job has one" || ok=1
    return $ok
}

readme_names=(readme_examples_build_and_run_as_the_readme_says_at_2_ranks
    readme_examples_build_and_run_as_the_readme_says_at_3_ranks
    an_mpi_program_under_zshrun_fails_with_the_launcher_message)
if [ $have_python_pkg = no ]; then
    for name in "${readme_names[@]}"; do report SKIPPED "install.$name" "the Python package is not built"; done
elif ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    for name in "${readme_names[@]}"; do report SKIPPED "install.$name" "no mpicc or mpirun (Open MPI)"; done
else
    check "install.${readme_names[0]}" readme_run 2
    check "install.${readme_names[1]}" readme_run 3
    check "install.${readme_names[2]}" mpi_under_zshrun
fi

if command -v doxygen >/dev/null && grep -q '^DOXYGEN = .' "$install_build/Makefile"; then
    docs() {
        cd "$install_build" && $make_cmd docs >"$tmp/docs.log" 2>&1 || { cat "$tmp/docs.log"; return 1; }
        grep -q zsh_allgather docs/html/zeroshard_8h.html
    }
    check docs.make_docs_builds_html_with_every_public_item_documented docs
else
    report SKIPPED docs.make_docs_builds_html_with_every_public_item_documented "no doxygen"
fi

modulefiles_dir() {
    mkdir -p "$tmp/build-site" && cd "$tmp/build-site" &&
        "$configure_src/configure" --prefix="$prefix" --with-modulefiles-dir="$tmp/site-modules" \
            "${configure_args[@]}" >configure.log 2>&1 &&
        $make_cmd install-modulefile >install.log 2>&1 || { tail -20 configure.log install.log; return 1; }
    grep -q "ZEROSHARD_ROOT *{$prefix}" "$tmp/site-modules/zeroshard/$version"
}
check install.with_modulefiles_dir_moves_the_modulefile modulefiles_dir

if command -v python3 >/dev/null; then
    spack() {
        "$srcdir/configure" --help >"$tmp/configure-help.txt" &&
            python3 "$srcdir/tests/system/install/spack_check.py" \
                "$srcdir/contrib/spack/spack_repo/zeroshard/packages/zeroshard/package.py" \
                "$tmp/configure-help.txt"
    }
    check spack.package_maps_variants_to_configure_options spack
else
    report SKIPPED spack.package_maps_variants_to_configure_options "no python3"
fi

# ---- module use / load / unload, with Lmod and with Environment Modules ---------
env_vars="PATH LD_LIBRARY_PATH PKG_CONFIG_PATH CPATH MANPATH ZEROSHARD_ROOT PYTHONPATH"

# The environment minus the module systems' own bookkeeping, one NAME=value per line.
env_snapshot() {
    env -0 | tr '\n\0' '\001\n' | LC_ALL=C sort |
        grep -Ev '^(LOADEDMODULES|_LMFILES_|__LMOD_[A-Za-z0-9_]*|_ModuleTable[0-9_]*_|__MODULES_[A-Za-z0-9_]*|MODULES_[A-Z_]*|LMOD_[A-Za-z0-9_]*|_)='
}

# first_in VAR DIR: DIR is the first element of $VAR (prepend-path).
first_in() {
    local value=${!1-}
    [ "${value%%:*}" = "$2" ] || { echo "$1='$value' does not start with $2"; return 1; }
}

loaded_vars() {
    local ok=0
    [ "${ZEROSHARD_ROOT-}" = "$prefix" ] || { echo "ZEROSHARD_ROOT='${ZEROSHARD_ROOT-}'"; ok=1; }
    first_in PATH "$prefix/bin" || ok=1
    first_in LD_LIBRARY_PATH "$prefix/lib" || ok=1
    first_in PKG_CONFIG_PATH "$prefix/lib/pkgconfig" || ok=1
    first_in CPATH "$prefix/include" || ok=1
    [[ :$CPATH: == *:/opt/zsh-install-test/include:* ]] || { echo "CPATH lost its old entry: $CPATH"; ok=1; }
    first_in MANPATH "$prefix/share/man" || ok=1
    [ "$(command -v zsh_info)" = "$prefix/bin/zsh_info" ] || { echo "zsh_info is $(command -v zsh_info)"; ok=1; }
    [[ :${LOADEDMODULES-}: == *:zeroshard/$version:* ]] || { echo "LOADEDMODULES='${LOADEDMODULES-}'"; ok=1; }
    return $ok
}

man_finds() {
    local page
    page=$(man -w zsh_info) || return 1
    echo "man -w zsh_info: $page"
    [ "$page" = "$prefix/share/man/man1/zsh_info.1" ]
}

outside_program() {
    local dir=$1 out lib np=2
    mkdir -p "$dir" && cd "$dir" || return 1
    cp "$srcdir/tests/system/install/consumer.c" . &&
        cc -std=c11 -Wall -Wextra -Werror -o consumer consumer.c $(pkg-config --cflags --libs zeroshard) ||
        return 1
    lib=$(ldd ./consumer | awk '$1 ~ /^libzeroshard/ {print $3}')
    [ "$lib" = "$prefix/lib/libzeroshard.so.0" ] || { echo "consumer loads libzeroshard from '$lib'"; return 1; }
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    out=$(timeout 120 mpirun -np $np ./consumer 2>&1)
    echo "$out"
    [ "$(echo "$out" | grep -c "^rank [0-9] of $np: ok (ZeroShard $version)$")" = $np ]
}

# The checks of a module session, in the order module_session reports them.
session_checks=(module_load_sets_every_variable module_load_makes_import_zeroshard_work
    man_finds_zsh_info_through_manpath
    outside_program_built_with_pkg_config_runs_under_mpirun_np2 module_unload_restores_the_environment)

# skip_session SYSTEM REASON [FIRST]: skips the session's checks from index
# FIRST (0) on, each by name, so that the count of results stays whole.
skip_session() {
    local i
    for ((i = ${3:-0}; i < ${#session_checks[@]}; i++)); do
        report SKIPPED "modules_$1.${session_checks[i]}" "$2"
    done
}

# module_session NAME: runs in a subshell after the module system is set up.
module_session() {
    local sys=$1 before after
    export CPATH=/opt/zsh-install-test/include
    # PYTHONPATH stays: where Spack or a venv provides numpy through it, the
    # module prepends to it (module_load_makes_import_zeroshard_work).
    unset LD_LIBRARY_PATH PKG_CONFIG_PATH MANPATH ZEROSHARD_ROOT
    if ! module use "$prefix/share/modulefiles"; then
        report FAILED "modules_$sys.module_load_sets_every_variable" "module use failed"
        skip_session "$sys" "module use failed" 1
        return
    fi
    before=$(env_snapshot)
    if ! module load zeroshard; then
        report FAILED "modules_$sys.module_load_sets_every_variable" "module load zeroshard failed"
        skip_session "$sys" "module load failed" 1
        return
    fi
    check "modules_$sys.module_load_sets_every_variable" loaded_vars
    if [ $have_python_pkg = yes ]; then
        module_python() {
            local dir
            dir=$(pkg-config --variable=pythondir zeroshard) && first_in PYTHONPATH "$dir" && import_zeroshard "$dir"
        }
        check "modules_$sys.module_load_makes_import_zeroshard_work" module_python
    else
        report SKIPPED "modules_$sys.module_load_makes_import_zeroshard_work" "the Python package is not built"
    fi
    if command -v man >/dev/null; then
        check "modules_$sys.man_finds_zsh_info_through_manpath" man_finds
    else
        report SKIPPED "modules_$sys.man_finds_zsh_info_through_manpath" "no man (apt-get install man-db)"
    fi
    if ! command -v mpirun >/dev/null; then
        report SKIPPED "modules_$sys.outside_program_built_with_pkg_config_runs_under_mpirun_np2" "no mpirun"
    elif ! zsh_info -f | grep -Eq '^#   PMIx: +on'; then
        report SKIPPED "modules_$sys.outside_program_built_with_pkg_config_runs_under_mpirun_np2" "built without PMIx"
    else
        check "modules_$sys.outside_program_built_with_pkg_config_runs_under_mpirun_np2" \
            outside_program "$tmp/consumer-$sys"
    fi
    module unload zeroshard
    after=$(env_snapshot)
    restored() {
        local var
        [ "$before" = "$after" ] && return 0
        for var in $env_vars; do
            echo "$var before: '$(echo "$before" | grep "^$var=")' after: '$(echo "$after" | grep "^$var=")'"
        done
        diff <(echo "$before") <(echo "$after")
        return 1
    }
    check "modules_$sys.module_unload_restores_the_environment" restored
}

# A shell with no module system of its own, and a home for their caches.
clean_module_env() {
    local v
    for v in $(env | sed -n 's/^\(LMOD_[A-Za-z0-9_]*\|__LMOD_[A-Za-z0-9_]*\|_ModuleTable[0-9_]*_\|__MODULES_[A-Za-z0-9_]*\|MODULES_[A-Z_]*\)=.*/\1/p'); do
        unset "$v"
    done
    unset MODULEPATH MODULESHOME LOADEDMODULES _LMFILES_ BASH_ENV ENV
    unset -f module ml _module_raw 2>/dev/null
    # Both module systems drop duplicate entries of a path when they edit it,
    # so the comparison after unload starts from a PATH without any.
    PATH=$(echo "$PATH" | tr ':' '\n' | awk 'NF && !seen[$0]++' | paste -sd:)
    export HOME=$tmp/home-$1
    mkdir -p "$HOME"
}

# session SYSTEM SETUP: module_session in a subshell, after clean_module_env
# and the function SETUP have set up the module system, and its results
# counted here. A subshell that exits non-zero (an unbound variable under
# set -u, a module command that exits the shell) leaves the checks it had
# left unreported: each fails, naming the status.
session() {
    local sys=$1 out rc c
    out=$(clean_module_env "$sys" && "$2" && module_session "$sys")
    rc=$?
    results_add "$out"
    [ $rc = 0 ] && return
    for c in "${session_checks[@]}"; do
        grep -q "^\[ *[A-Z]* *\] modules_$sys\.$c\b" <<<"$out" ||
            report FAILED "modules_$sys.$c" "the session exited $rc before its end"
    done
}

lmod_init=/usr/share/lmod/lmod/init/bash
lmod_setup() {
    # shellcheck disable=SC1090
    . "$lmod_init" >/dev/null
}
if [ -r "$lmod_init" ]; then
    session lmod lmod_setup
else
    skip_session lmod "no Lmod at $lmod_init (apt-get install lmod)"
fi

# Debian's package when installed; otherwise the same package unpacked beside Lmod
# (the two conflict), as contrib/debian-setup.sh does.
modulecmd=
for c in /usr/lib/*/modulecmd.tcl /usr/share/modules/libexec/modulecmd.tcl \
    "${ZSH_ENVMODULES_DIR:-/opt/environment-modules}"/usr/lib/*/modulecmd.tcl; do
    [ -z "$modulecmd" ] && [ -r "$c" ] && modulecmd=$c
done
envmodules_setup() {
    # What Debian's /usr/share/modules/init/bash runs.
    eval "$(tclsh8.6 "$modulecmd" bash autoinit)"
}
if [ -n "$modulecmd" ] && command -v tclsh8.6 >/dev/null; then
    session envmodules envmodules_setup
else
    skip_session envmodules "no Environment Modules modulecmd.tcl (see contrib/debian-setup.sh)"
fi

results_suite=install # the suite the count is checked for
results_end
