#!/bin/bash
# Fuzz the TCP store's frame decoder and handshake with libFuzzer for a bounded time:
#   bash tests/system/fuzz/run_fuzz.sh [SECONDS]        (default 60)
# Builds tests/system/fuzz/store_frame_fuzz.c and the sources it needs with clang
# -fsanitize=fuzzer,address,undefined into $ZSH_FUZZ_DIR (default
# build-fuzz/ at the top of the tree), seeds the corpus with one valid frame
# of every type, and runs. The corpus grows in $ZSH_FUZZ_DIR/corpus, so a
# later run goes on from it. A crash leaves its input in $ZSH_FUZZ_DIR
# (crash-*), to replay with: build-fuzz/store_frame_fuzz build-fuzz/crash-...
# Ends with a GoogleTest-style summary (one test) that tests/run_all.sh counts.
set -u
seconds=${1:-60}
top=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${ZSH_FUZZ_DIR:-$top/build-fuzz}
cc=${ZSH_FUZZ_CC:-clang}
name=fuzz.store_frame_decoder_and_handshake_survive_${seconds}_s_of_libfuzzer

fail() {
    echo "$*"
    echo "[  FAILED  ] $name"
    echo "[  PASSED  ] 0 tests."
    echo "[  FAILED  ] 1 test, listed above"
    exit 1
}

command -v "$cc" >/dev/null || fail "$cc not found (Debian: apt-get install clang libclang-rt-dev)"
mkdir -p "$dir/include/zeroshard" "$dir/corpus" || fail "cannot create $dir"
# zeroshard.h includes the configure-generated version header; any version will do.
sed -e 's/@ZSH_VERSION_[A-Z]*@/0/' -e 's/@PACKAGE_VERSION@/0.0.0/' \
    "$top/include/zeroshard/version.h.in" >"$dir/include/zeroshard/version.h"
# The decoder, the handshake and what zsh_error() needs; they are instrumented
# for coverage, so they are compiled here rather than taken from a build. The
# handshake's HMAC is OpenSSL's libcrypto (Debian: libssl-dev).
"$cc" -std=gnu11 -g -O1 -Wall -Wextra -Werror \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$dir/include" -I"$top/include" -I"$top/src" \
    "$top/tests/system/fuzz/store_frame_fuzz.c" "$top/src/boot/store_frame.c" \
    "$top/src/boot/store_auth.c" \
    "$top/src/core/status.c" "$top/src/core/log.c" "$top/src/core/config.c" \
    $(pkg-config --cflags --libs libcrypto 2>/dev/null || echo -lcrypto) -lpthread -lm -o "$dir/store_frame_fuzz" >"$dir/build.out" 2>&1 ||
    fail "$(cat "$dir/build.out")"

# Seeds: every frame type, and two frames back to back (big-endian lengths).
seed() { printf "$2" >"$dir/corpus/seed-$1"; }
seed set       '\0\0\0\x09\x01\0\x01k\0\0\0\x01v'
seed get       '\0\0\0\x08\x02\0\x01k\0\0\x01\x2c'
seed ok        '\0\0\0\x01\x81'
seed value     '\0\0\0\x06\x82\0\0\0\x01v'
seed not_found '\0\0\0\x01\x83'
seed set_get   '\0\0\0\x0b\x01\0\x02ag\0\0\0\x02xy\0\0\0\x08\x02\0\x01k\0\0\0\0'
seed refused   '\0\0\0\x09\x86\0\x02no\0\0\0\x01'
# The handshake's frames: nonces and macs are 32 bytes with no length prefix.
zeros() { head -c "$1" /dev/zero; }
{ printf '\0\0\0\x25\x84\0\0\0\x01'; zeros 32; } >"$dir/corpus/seed-challenge"
{ printf '\0\0\0\x21\x85'; zeros 32; } >"$dir/corpus/seed-welcome"
{ printf '\0\0\0\x4c\x03\0\x01h\0\0\0\x01\0\0\0\x07'; zeros 64; } >"$dir/corpus/seed-hello"
{ printf '\0\0\0\x4c\x03\0\x01h\0\0\0\x01\0\0\0\x07'; zeros 65; } >"$dir/corpus/seed-hello-keyed"

start=$SECONDS
(cd "$dir" && ./store_frame_fuzz -max_total_time="$seconds" -max_len=4096 -timeout=10 \
     -print_final_stats=1 corpus) >"$dir/fuzz.out" 2>&1
rc=$?
grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' "$dir/fuzz.out"
if [ $rc != 0 ]; then
    tail -60 "$dir/fuzz.out"
    fail "the fuzzer failed (exit $rc); reproducer: $(ls "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null | head -1)"
fi
echo "[       OK ] $name ($((SECONDS - start)) s, corpus $(ls "$dir/corpus" | wc -l) inputs)"
echo "[  PASSED  ] 1 test."
