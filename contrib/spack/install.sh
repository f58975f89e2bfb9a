#!/bin/bash
# Install ZeroShard through Spack from this source tree, offline, with the
# system's libraries as externals (docs/install-spack.md):
#   contrib/spack/install.sh [-b BUILDDIR] [-w WORKDIR] [SPEC...]
# BUILDDIR is a configured build tree (default ./build), whose `make dist`
# gives the tarball; WORKDIR (default: a new temporary directory) holds
# Spack's configuration, the mirror with the tarball, the installed tree and
# the modules. SPEC defaults to zeroshard@<version>.
#
# The steps: spack audit packages, spack install --test=root (the recipe's
# check: tests/system/install/run_install.sh against the staged build), spack
# load and a program built with `pkg-config --cflags --libs zeroshard` run,
# then Lmod and Tcl modules generated. Each external gets a prefix of its
# own holding links to its pkg-config files only, and pkg-config searches
# nothing else: a library configure needs that the recipe does not declare
# stops configure, as it would on a machine without the system's copy.
#
# SPACK names the spack command (default: spack on PATH). Exit 77 where there
# is no Spack, 1 on any failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$top/build
work=
while getopts b:w: opt; do
    case $opt in
    b) build=$(cd "$OPTARG" && pwd) ;;
    w) work=$OPTARG ;;
    *) echo "usage: $0 [-b BUILDDIR] [-w WORKDIR] [SPEC...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

spack_cmd=${SPACK:-spack}
if ! command -v "$spack_cmd" >/dev/null; then
    echo "install.sh: no Spack ('$spack_cmd' not found; set SPACK=/path/to/spack/bin/spack)" >&2
    exit 77
fi
[ -f "$build/Makefile" ] || { echo "install.sh: $build is not a configured build tree" >&2; exit 1; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
specs=("$@")
[ $# -gt 0 ] || specs=("zeroshard@$version")
if [ -z "$work" ]; then
    work=$(mktemp -d /var/tmp/zsh-spack.XXXXXX)
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
cfg=$work/config
mkdir -p "$cfg" "$work/mirror/zeroshard"
export SPACK_DISABLE_LOCAL_CONFIG=1
spack() { "$spack_cmd" -C "$cfg" "$@"; }
step() { echo "== $*"; }


# ---- externals: the system's packages, each under a prefix of its own ----------
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
pcdirs="/usr/lib/$multiarch/pkgconfig /usr/lib/pkgconfig /usr/share/pkgconfig"
ext=$work/ext
# external NAME VERSION PC...: a prefix with links to the named .pc files (and
# the ones they require), where Spack's build environment finds them.
external() {
    local name=$1 ver=$2 pc d
    shift 2
    mkdir -p "$ext/$name/lib/pkgconfig"
    for pc in "$@"; do
        for d in $pcdirs; do
            [ -f "$d/$pc.pc" ] && ln -sf "$d/$pc.pc" "$ext/$name/lib/pkgconfig/" && break
        done
        [ -e "$ext/$name/lib/pkgconfig/$pc.pc" ] || { echo "install.sh: no $pc.pc for $name" >&2; exit 1; }
    done
    printf '  %s:\n    buildable: false\n    externals:\n    - spec: %s@%s\n      prefix: %s\n' \
        "$name" "$name" "$ver" "$ext/$name" >>"$cfg/packages.yaml"
}
debver() { dpkg-query -W -f='${Version}' "$1" | sed 's/^[0-9]*://; s/[-+~].*//'; }

cat >"$cfg/packages.yaml" <<EOF
packages:
  all:
    providers:
      mpi: [openmpi]
      pkgconfig: [pkgconf]
EOF
external ucx "$(debver libucx-dev)" ucx ucx-ucs ucx-uct
external hwloc "$(debver libhwloc-dev)" hwloc
external openssl "$(debver libssl-dev)" libcrypto openssl libssl
external json-c "$(debver libjson-c-dev)" json-c
external xxhash "$(debver libxxhash-dev)" libxxhash
external pmix "$(debver libpmix-dev)" pmix
external liburing "$(debver liburing-dev)" liburing
external libaio "$(debver libaio-dev)"
external openblas "$(debver libopenblas-dev)" openblas
external googletest "$(debver libgtest-dev)" gtest gtest_main
# Open MPI: configure takes MPI_CFLAGS/MPI_LIBS from the recipe, which asks
# the spec for its headers and libraries; the tests run its mpirun.
external openmpi "$(debver libopenmpi-dev)" mpi-c
ompi=/usr/lib/$multiarch/openmpi
ln -sfn "$ompi/include" "$ext/openmpi/include"
ln -sf "/usr/lib/$multiarch/libmpi.so" "$ext/openmpi/lib/"
mkdir -p "$ext/openmpi/bin"
for p in mpirun mpiexec mpicc mpicxx orterun ompi_info; do ln -sf "/usr/bin/$p" "$ext/openmpi/bin/"; done
# Tools and Python are found by path; /usr is their prefix.
for tool in "pkgconf $(debver pkgconf)" "autoconf $(debver autoconf)" "automake $(debver automake)" \
    "libtool $(debver libtool)" "gmake $(debver make)" "python $(debver python3)" \
    "py-numpy $(debver python3-numpy)" "py-pybind11 $(debver pybind11-dev)"; do
    printf '  %s:\n    buildable: false\n    externals:\n    - spec: %s@%s\n      prefix: /usr\n' \
        "${tool% *}" "${tool% *}" "${tool#* }" >>"$cfg/packages.yaml"
done

# Spack 0.23 and 1.x treat depends_on("c") as the C compiler; development
# snapshots of 0.23 from before August 2024 know only cxx and fortran as
# languages and look for a package providing c. There, a package of this
# configuration's own provides it as the system's compiler.
repos=("$top/contrib/spack/spack_repo/zeroshard")
printf '%s\n' 'import sys, spack.directives as d' \
    'sys.exit("c" not in getattr(d, "SUPPORTED_LANGUAGES", ("c",)))' >"$work/c-is-a-language.py"
if ! "$spack_cmd" python "$work/c-is-a-language.py"; then
    mkdir -p "$work/compat/packages/system-cc"
    printf 'repo:\n  namespace: zsh_compat\n' >"$work/compat/repo.yaml"
    cat >"$work/compat/packages/system-cc/package.py" <<'PY'
from spack.package import *


class SystemCc(Package):
    """The system's C compiler as the provider of the c virtual."""

    homepage = "https://gcc.gnu.org"
    has_code = False
    version("1")
    provides("c")

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
PY
    repos+=("$work/compat")
    sed -i 's/^      pkgconfig: \[pkgconf\]$/&\n      c: [system-cc]/' "$cfg/packages.yaml"
fi

gccver=$(gcc -dumpfullversion)
cat >"$cfg/compilers.yaml" <<EOF
compilers:
- compiler:
    spec: gcc@$gccver
    paths: {cc: /usr/bin/gcc, cxx: /usr/bin/g++, f77: null, fc: null}
    operating_system: $("$spack_cmd" arch -o)
    target: x86_64
    modules: []
    environment:
      set:
        # pkg-config finds the declared dependencies' .pc files (Spack puts
        # their prefixes on PKG_CONFIG_PATH) and nothing of the system's.
        PKG_CONFIG_LIBDIR: $work/no-system-pkgconfig
EOF
cat >"$cfg/config.yaml" <<EOF
config:
  install_tree:
    root: $work/opt
  build_stage: [$work/stage]
  source_cache: $work/cache
  test_stage: $work/test-stage
  build_jobs: 2
EOF
cat >"$cfg/mirrors.yaml" <<EOF
mirrors:
  local: file://$work/mirror
EOF
{ echo "repos:"; printf -- '- %s\n' "${repos[@]}"; } >"$cfg/repos.yaml"
cat >"$cfg/modules.yaml" <<EOF
modules:
  default:
    enable: [lmod, tcl]
    roots:
      lmod: $work/modules/lmod
      tcl: $work/modules/tcl
    lmod:
      hierarchy: []
      core_compilers: [gcc@$gccver]
      hash_length: 0
    tcl:
      hash_length: 0
EOF
# Spack 0.23 before the solver-only releases can concretize without clingo,
# which an offline machine cannot bootstrap.
if [ -n "${ZSH_SPACK_CONCRETIZER:-}" ]; then
    printf '  concretizer: %s\n' "$ZSH_SPACK_CONCRETIZER" >>"$cfg/config.yaml"
fi

step "spack $("$spack_cmd" --version), work directory $work"
step "spack audit packages zeroshard"
spack audit packages zeroshard
step "spack spec ${specs[*]}"
spack spec -I "${specs[@]}"
step "make dist ($build)"
make -s -C "$build" dist >/dev/null
tarball=$build/zeroshard-$version.tar.gz
cp "$tarball" "$work/mirror/zeroshard/"
echo "$(sha256sum <"$tarball" | cut -d' ' -f1)  zeroshard-$version.tar.gz"
step "spack install --test=root ${specs[*]}"
spack install --test=root --no-checksum -v "${specs[@]}" >"$work/install.log" 2>&1 ||
    { tail -60 "$work/install.log"; echo "install.sh: spack install failed (log: $work/install.log)" >&2; exit 1; }
tail -3 "$work/install.log"

step "spack load, a program built with pkg-config, zsh_info -v"
(
    eval "$(spack load --sh "${specs[@]}")"
    # spack load sets no LD_LIBRARY_PATH: the program carries its rpath, as
    # Spack's own builds do.
    libdir=$(pkg-config --variable=libdir zeroshard)
    # shellcheck disable=SC2046 # pkg-config prints several words
    cc -std=c11 -Wall -Wextra -Werror -o "$work/consumer" "$top/tests/system/install/consumer.c" \
        $(pkg-config --cflags --libs zeroshard) -Wl,-rpath,"$libdir"
    lib=$(ldd "$work/consumer" | awk '$1 ~ /^libzeroshard/ {print $3}')
    echo "consumer loads $lib"
    case $lib in "$work/opt/"*) ;; *) echo "install.sh: not Spack's libzeroshard" >&2; exit 1 ;; esac
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    timeout 120 mpirun -np 2 "$work/consumer"
    zsh_info -v
)

step "spack module lmod refresh, spack module tcl refresh"
spack module lmod refresh -y "${specs[@]}"
spack module tcl refresh -y "${specs[@]}"
find "$work/modules" -type f -name "*$version*" | sort
