#!/bin/bash
# The reduction kernels that every reduce-scatter and all-reduce runs come
# out of the compiler as vector code, whatever -O the user's CFLAGS carry
# (configure's ZSH_OPT_FLAGS). A scalar fp32 sum runs at under half the
# speed, and nothing else in the suite would notice.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
lib="$top_builddir/.libs/libzeroshard.so"
SUITE=build

skip() {
    echo "[  SKIPPED ] $SUITE.reduction_kernels_are_vectorized: $1"
    echo "[  PASSED  ] 0 tests."
    echo "[  SKIPPED ] 1 test, listed above"
    exit 0
}

case $(uname -m) in
x86_64) ;;
*) skip "the packed instructions checked for are x86-64's, this is $(uname -m)" ;;
esac
command -v objdump >/dev/null || skip "objdump not found (apt-get install binutils)"
case $(sed -n 's/^CFLAGS = //p' "$top_builddir/Makefile" 2>/dev/null) in
*-fsanitize=*undefined*)
    skip "UBSan's checks keep gcc and clang from vectorizing any loop; the plain build is checked" ;;
esac
[ -f "$lib" ] || skip "no shared library at $lib (--disable-shared)"

# The packed single-precision adds in one function's disassembly.
packed_adds() { # FUNCTION
    objdump -d --no-show-raw-insn "$lib" |
        awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' |
        grep -cE '\s(v?addps)\s'
}

bad=
for fn in zsh_reduce_acc_store_fp32_sum zsh_reduce_acc_fp32_sum; do
    n=$(packed_adds "$fn")
    if [ "$n" = 0 ]; then
        if ! objdump -d "$lib" | grep -q "<$fn>:"; then
            skip "$fn is not among the library's symbols (stripped?)"
        fi
        bad="$bad $fn"
    fi
done
if [ -z "$bad" ]; then
    echo "[       OK ] $SUITE.reduction_kernels_are_vectorized"
    echo "[  PASSED  ] 1 test."
    exit 0
fi
echo "[  FAILED  ] $SUITE.reduction_kernels_are_vectorized"
echo "    scalar loops (no addps) in:$bad; built with: $(grep -m1 '^ZSH_OPT_FLAGS' "$top_builddir/Makefile")"
echo "[  PASSED  ] 0 tests."
echo "[  FAILED  ] 1 test, listed above"
exit 1
