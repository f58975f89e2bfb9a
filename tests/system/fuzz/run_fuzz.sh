#!/bin/bash
# libFuzzer on what the job reads from outside, for a bounded time:
#   bash tests/system/fuzz/run_fuzz.sh [SECONDS]        (default 60)
# Three targets, each built with clang -fsanitize=fuzzer,address,undefined
# into $ZSH_FUZZ_DIR (default build-fuzz/ at the top of the tree):
#   store_frame_fuzz        the TCP store's frame decoder and handshake,
#                           seeded with one valid frame of every type
#   manifest_fuzz           a checkpoint manifest's parser and checks,
#   safetensors_header_fuzz and the safetensors header zsh_ckpt makes of
#                           one, both seeded with the manifests of real
#                           checkpoints (tests/system/fuzz/seeds/)
# SECONDS is the wall time of the whole run, on two cores: the store's
# target runs all of it on one, the two checkpoint targets half each on the
# other. Each corpus grows in $ZSH_FUZZ_DIR/<target>/corpus, so a later run
# goes on from it. A crash leaves its input in $ZSH_FUZZ_DIR/<target>/
# (crash-*), to replay with: build-fuzz/<target>/<target> build-fuzz/<target>/crash-...
# Ends with a GoogleTest-style summary (one test per target) that
# tests/run_all.sh counts.
set -u
seconds=${1:-60}
top=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${ZSH_FUZZ_DIR:-$top/build-fuzz}
cc=${ZSH_FUZZ_CC:-clang}
half=$(( (seconds + 1) / 2 ))
targets=(store_frame_fuzz manifest_fuzz safetensors_header_fuzz)
declare -A what=([store_frame_fuzz]=store_frame_decoder_and_handshake
                 [manifest_fuzz]=checkpoint_manifest_parser_and_checks
                 [safetensors_header_fuzz]=safetensors_header_of_a_manifest)
declare -A secs=([store_frame_fuzz]=$seconds [manifest_fuzz]=$half
                 [safetensors_header_fuzz]=$half)

# shellcheck source=../../harness/results.sh
. "$top/tests/harness/results.sh"
results_begin fuzz ${#targets[@]}
# test_name TARGET: the name of the target's result.
test_name() {
    echo "${what[$1]}_survive_${secs[$1]}_s_of_libfuzzer"
}
# Nothing ran: why, and each target's result a failure.
fail() {
    local t
    echo "$*"
    for t in "${targets[@]}"; do
        result_as FAILED "$(test_name "$t")" "the targets could not be built (above)"
    done
    results_end
    exit 1
}

command -v "$cc" >/dev/null || fail "$cc not found (Debian: apt-get install clang libclang-rt-dev)"
for t in "${targets[@]}"; do
    mkdir -p "$dir/$t/corpus" || fail "cannot create $dir/$t"
done
mkdir -p "$dir/include/zeroshard" || fail "cannot create $dir"
# zeroshard.h includes the configure-generated version header; any version will do.
sed -e 's/@ZSH_VERSION_[A-Z]*@/0/' -e 's/@PACKAGE_VERSION@/0.0.0/' \
    "$top/include/zeroshard/version.h.in" >"$dir/include/zeroshard/version.h"
# The code under test and what zsh_error() needs; they are instrumented for
# coverage, so they are compiled here rather than taken from a build. The
# handshake's HMAC is OpenSSL's libcrypto (Debian: libssl-dev), the
# manifest's JSON json-c's (libjson-c-dev).
flags=(-std=gnu11 -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$dir/include" -I"$top/include" -I"$top/src")
core=("$top/src/core/status.c" "$top/src/core/log.c" "$top/src/core/config.c")
ckpt=("$top/zero/ckpt/manifest_read.c" "$top/zero/ckpt/manifest.c" "$top/zero/optim/rule/hyper.c"
      "$top/src/core/dtype.c" "$top/src/core/file.c" "$top/src/core/escape.c")
jsonc=$(pkg-config --cflags --libs json-c 2>/dev/null || echo -ljson-c)
build() {
    local t=$1
    shift
    "$cc" "${flags[@]}" "$top/tests/system/fuzz/$t.c" "$@" "${core[@]}" -lpthread -lm \
        -o "$dir/$t/$t" >"$dir/$t/build.out" 2>&1 || fail "$(cat "$dir/$t/build.out")"
}
build store_frame_fuzz "$top/src/boot/store_frame.c" "$top/src/boot/store_auth.c" \
    $(pkg-config --cflags --libs libcrypto 2>/dev/null || echo -lcrypto)
build manifest_fuzz -I"$top/zero" "${ckpt[@]}" $jsonc
build safetensors_header_fuzz -I"$top/zero" -I"$top/tools" "$top/tools/ckpt/header.c" \
    "${ckpt[@]}" $jsonc

# Seeds: every frame type, and two frames back to back (big-endian lengths).
seed() { printf "$2" >"$dir/store_frame_fuzz/corpus/seed-$1"; }
seed set       '\0\0\0\x09\x01\0\x01k\0\0\0\x01v'
seed get       '\0\0\0\x08\x02\0\x01k\0\0\x01\x2c'
seed ok        '\0\0\0\x01\x81'
seed value     '\0\0\0\x06\x82\0\0\0\x01v'
seed not_found '\0\0\0\x01\x83'
seed set_get   '\0\0\0\x0b\x01\0\x02ag\0\0\0\x02xy\0\0\0\x08\x02\0\x01k\0\0\0\0'
seed refused   '\0\0\0\x09\x86\0\x02no\0\0\0\x01'
# The handshake's frames: nonces and macs are 32 bytes with no length prefix.
zeros() { head -c "$1" /dev/zero; }
{ printf '\0\0\0\x25\x84\0\0\0\x01'; zeros 32; } >"$dir/store_frame_fuzz/corpus/seed-challenge"
{ printf '\0\0\0\x21\x85'; zeros 32; } >"$dir/store_frame_fuzz/corpus/seed-welcome"
{ printf '\0\0\0\x4c\x03\0\x01h\0\0\0\x01\0\0\0\x07'; zeros 64; } >"$dir/store_frame_fuzz/corpus/seed-hello"
{ printf '\0\0\0\x4c\x03\0\x01h\0\0\0\x01\0\0\0\x07'; zeros 65; } >"$dir/store_frame_fuzz/corpus/seed-hello-keyed"

# The manifests of real checkpoints: one rank and two (stage 3), AdamW and
# SGD, and one zsh_ckpt resharded to three shards.
for t in manifest_fuzz safetensors_header_fuzz; do
    cp "$top"/tests/system/fuzz/seeds/manifest-*.json "$dir/$t/corpus/" || fail "no seeds"
done

# run TARGET: the fuzzer for its seconds; its log in $dir/TARGET/fuzz.out.
# The checkpoint targets' stderr (every refused manifest logs its error)
# is closed to the target and kept for libFuzzer's own lines.
run() {
    local t=$1 mask=0
    [ "$t" = store_frame_fuzz ] || mask=2
    (cd "$dir/$t" && ./"$t" -max_total_time="${secs[$t]}" -max_len=65536 -timeout=10 \
         -close_fd_mask=$mask -print_final_stats=1 corpus) >"$dir/$t/fuzz.out" 2>&1
    echo $? >"$dir/$t/rc"
}
start=$SECONDS
run store_frame_fuzz &
(run manifest_fuzz; run safetensors_header_fuzz) &
wait
for t in "${targets[@]}"; do
    name=$(test_name "$t")
    grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' "$dir/$t/fuzz.out" |
        sed "s/^/$t: /"
    if [ "$(cat "$dir/$t/rc")" != 0 ]; then
        tail -60 "$dir/$t/fuzz.out"
        result_as FAILED "$name" "the fuzzer failed (exit $(cat "$dir/$t/rc")); reproducer: $(ls \
            "$dir/$t"/crash-* "$dir/$t"/timeout-* "$dir/$t"/oom-* 2>/dev/null | head -1)"
    else
        result_as OK "$name (corpus $(ls "$dir/$t/corpus" | wc -l) inputs)"
    fi
done
echo "# $((SECONDS - start)) s in all"
results_end
