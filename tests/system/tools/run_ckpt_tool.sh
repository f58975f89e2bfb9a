#!/bin/bash
# zsh_ckpt as a user runs it, on real checkpoints that
# tests/system/tools/ckpt_make saves through the public API (a model of
# awkward sizes and a name a JSON header must escape, three AdamW steps),
# which also dumps the weights it saved: info lists the model; verify
# passes, and names the file and the parameters a flipped byte touches;
# consolidate writes a safetensors file whose header and bytes are the
# saved weights, within --max-memory for a model larger than the limit;
# reshard writes checkpoints that verify, consolidate to the same bytes and
# load (ckpt_make resume: load, then one more step) exactly as the
# original, at 1 and 2 ranks and other stages; bad arguments exit 2. Ends
# with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
prog="$top_builddir/tools/zsh_ckpt"
make_ck="$top_builddir/tests/system/tools/ckpt_make"
zshrun="$top_builddir/tools/zshrun"
py=/usr/bin/python3
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
if [ ! -x "$make_ck" ] || [ ! -x "$zshrun" ]; then
    echo "SKIP: $make_ck or $zshrun is not built (the check programs need GoogleTest)"
    exit 77
fi
if ! "$py" -c 'import numpy' 2>/dev/null; then
    echo "SKIP: $py has no numpy"
    exit 77
fi
results_begin zsh_ckpt 10
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The model ckpt_make trains, in registration order: name and elements.
names=("embed.weight" "layer.0.weight" "layer.0.bias" "layer.1.weight" 'head "q"\x')
numels=(70000 4099 5 300001 7)
step="step-00000003"

# on2 CMD...: CMD on 2 ranks launched torchrun-style.
on2() {
    timeout 120 "$zshrun" -n 2 "$@"
}

# The checkpoints every case reads: saved on 1 rank (a) and on 2 at stage 3 (b).
"$make_ck" save "$tmp/a" "$tmp/a.raw" >"$tmp/make.out" 2>&1 ||
    echo "ckpt_make save failed: $(cat "$tmp/make.out")"
on2 "$make_ck" save "$tmp/b" "$tmp/b.raw" --stage 3 >"$tmp/make2.out" 2>&1 ||
    echo "ckpt_make save on 2 ranks failed: $(cat "$tmp/make2.out")"

# safetensors_check FILE RAW STEPS: FILE's header describes the model in order
# (F32, [numel], contiguous offsets, the metadata), is padded to 8 bytes, and
# its data is RAW byte for byte. Prints what differs.
safetensors_check() {
    "$py" - "$1" "$2" "$3" "${names[@]}" -- "${numels[@]}" <<'PY'
import json, struct, sys
import numpy as np
path, raw, steps = sys.argv[1:4]
rest = sys.argv[4:]
names, numels = rest[:rest.index("--")], [int(n) for n in rest[rest.index("--") + 1:]]
blob = open(path, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
if n % 8 != 0:
    print(f"header length {n} is not a multiple of 8")
text = blob[8:8 + n].decode("utf-8")
if not text.rstrip(" ").endswith("}"):
    print("the header is not JSON padded with spaces")
head = json.loads(text)
keys = list(head.keys())
if keys != names + ["__metadata__"]:
    print(f"keys {keys}, expected {names + ['__metadata__']}")
meta = head.get("__metadata__", {})
if meta != {"format": "zeroshard", "step": steps, "precision": "fp32"}:
    print(f"metadata {meta}")
off = 0
for name, numel in zip(names, numels):
    t = head.get(name, {})
    want = {"dtype": "F32", "shape": [numel], "data_offsets": [off, off + 4 * numel]}
    if t != want:
        print(f"{name}: {t}, expected {want}")
    off += 4 * numel
data = np.frombuffer(blob[8 + n:], dtype="<u4")
ref = np.fromfile(raw, dtype="<u4")
if len(blob) - 8 - n != off:
    print(f"{len(blob) - 8 - n} bytes of data, expected {off}")
elif not np.array_equal(data, ref[:len(data)]) or len(ref) < len(data):
    bad = np.flatnonzero(data != ref[:len(data)])
    print(f"{len(bad)} values differ from the saved weights, first at element {bad[:1]}")
PY
}

info() {
    local out i line
    out=$("$prog" info "$tmp/a") || { echo "info exited $?"; return; }
    for i in "${!names[@]}"; do
        line=$(grep -F -- "  ${names[$i]} " <<<"$out" | head -1)
        echo "$line" | grep -qE "^  .* +fp32 +\[${numels[$i]}\] +${numels[$i]} +1$" ||
            echo "parameter ${names[$i]}: '$line'"
    done
    grep -q '^world size      1 (stage 0)$' <<<"$out" || echo "no world size line: $out"
    grep -q '^optimizer       adamw, kinds: weights exp_avg exp_avg_sq$' <<<"$out" ||
        echo "no optimizer line: $out"
    grep -q '^step            3 updates; 3 steps, 0 skipped$' <<<"$out" || echo "no step line"
    [ "$(grep -c '^  [a-z_]*-00000\.bin ' <<<"$out")" = 3 ] || echo "not 3 files: $out"
    # the two-rank save: two shards, pieces on both sides of a bucket's split
    out=$("$prog" info "$tmp/b/$step") || { echo "info of b exited $?"; return; }
    grep -q '^world size      2 (stage 3)$' <<<"$out" || echo "b: no world size line: $out"
    grep -qE '^  layer\.1\.weight +fp32 +\[300001\] +300001 +[2-9]$' <<<"$out" ||
        echo "b: layer.1.weight is not in pieces: $out"
    "$prog" info "$tmp/a" --json >"$tmp/json" || echo "info --json exited $?"
    cmp -s "$tmp/json" "$tmp/a/$step/manifest.json" || echo "info --json is not manifest.json"
}
result info_lists_the_header_files_and_every_parameter "$(info)"

good() {
    local out
    for d in a b; do
        out=$("$prog" verify "$tmp/$d" 2>&1) || echo "verify $d exited $?: $out"
        grep -qE ": OK: [0-9]+ files and [0-9]+ pieces of 5 parameters checked" <<<"$out" ||
            echo "verify $d: $out"
        grep -q FAILED <<<"$out" && echo "verify $d: $out"
    done
    true
}
result verify_passes_on_good_checkpoints "$(good)"

# A byte of layer.0.weight's weights flipped (element 10, after embed.weight's
# 70000): the file and the pieces in the same chunk fail, those in other
# chunks and other kinds pass, and the failures name what they touch.
flipped() {
    local out rc f
    cp -r "$tmp/a/$step" "$tmp/flip"
    f=$tmp/flip/weights-00000.bin
    printf '\xa5' | dd of="$f" bs=1 seek=$((4 * 70010 + 1)) conv=notrunc status=none
    out=$("$prog" verify "$tmp/flip" 2>/dev/null)
    rc=$?
    [ $rc = 1 ] || echo "exit $rc, expected 1"
    grep -qE "^FAILED file: .*/flip/weights-00000\.bin is corrupt: bytes 0-1048575 \(chunk 0\)" \
        <<<"$out" || echo "no failure naming the file and its bytes: $out"
    grep -qE "^FAILED parameter 'layer\.0\.weight' \(weights, piece 0\): .*weights-00000\.bin.*the piece holds elements 0-4098 at byte offset 280000 of weights-00000\.bin$" \
        <<<"$out" || echo "no failure naming layer.0.weight and its offset: $out"
    grep -q "exp_avg" <<<"$out" && echo "another kind failed: $out"
    grep -qF "'head \"q\"\\x'" <<<"$out" && echo "a piece of another chunk failed: $out"
    grep -qE ": FAILED: 3 files and 15 pieces of 5 parameters checked .*, [0-9]+ failed$" \
        <<<"$out" || echo "no summary line: $out"
    "$prog" verify "$tmp/a" >/dev/null 2>&1 || echo "the original no longer verifies"
    true
}
result verify_names_the_file_parameter_and_offset_of_a_flipped_byte "$(flipped)"

consolidate() {
    local out
    out=$("$prog" consolidate "$tmp/a" "$tmp/a.st" 2>&1) || echo "exit $?: $out"
    grep -qE "a\.st: 5 tensors, [0-9]+ bytes in .* MB/s\); peak resident memory .* of --max-memory 256\.00 MiB" \
        <<<"$out" || echo "no report: $out"
    safetensors_check "$tmp/a.st" "$tmp/a.raw" 3
    [ -e "$tmp/a.st.tmp" ] && echo "a.st.tmp left behind"
    # a corrupt checkpoint: exit 1 naming the file, and no OUT
    out=$("$prog" consolidate "$tmp/flip" "$tmp/flip.st" 2>&1)
    [ $? = 1 ] || echo "consolidate of a corrupt checkpoint did not exit 1: $out"
    grep -q "weights-00000.bin is corrupt" <<<"$out" || echo "corrupt: $out"
    [ -e "$tmp/flip.st" ] || [ -e "$tmp/flip.st.tmp" ] && echo "output left after a failure"
    true
}
result consolidate_writes_the_saved_weights_as_safetensors "$(consolidate)"

# A model larger than the limit through --max-memory 32M: ru_maxrss, as the
# tool reports it and as its parent measures it, stays under. The limit is
# raised to what the tool says it needs (a larger process, as an
# instrumented build is) plus 8 MiB of buffer, the model to twice the limit.
# Under AddressSanitizer the process also holds what no accounting in it
# sees: shadow memory, a quarantine of freed blocks, every allocation's
# stack, and at exit LeakSanitizer's scan (43 MiB against --max-memory 34M,
# the tool's own count 35 MiB, seen once): there the output and the report
# are checked, and the bound in the uninstrumented run.
bounded() {
    local out peak need limit=32 allow elems
    need=$("$prog" consolidate "$tmp/a" "$tmp/need.st" --max-memory 1k 2>&1 |
        sed -n 's/.*give at least \([0-9]*\)M$/\1/p')
    [ -n "$need" ] || { echo "consolidate --max-memory 1k said no size"; return; }
    [ $((need + 8)) -gt $limit ] && limit=$((need + 8))
    elems=$((limit << 19)) # 2 * limit MiB of fp32
    [ $elems -ge 16777216 ] || elems=16777216
    "$make_ck" save "$tmp/big" "$tmp/big.raw" --big $elems >"$tmp/big.out" 2>&1 ||
        { echo "ckpt_make --big failed: $(cat "$tmp/big.out")"; return; }
    peak=$("$py" -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=open(sys.argv[-1] + ".log", "w"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 if r.returncode == 0 else -1)' \
        "$prog" consolidate "$tmp/big" --max-memory ${limit}M "$tmp/big.st")
    out=$(cat "$tmp/big.st.log")
    echo "# consolidate, $((elems >> 18)) MiB model, --max-memory ${limit}M: $out" >&2
    [ "$peak" -gt 0 ] || { echo "consolidate failed: $out"; return; }
    allow=$((limit << 20))
    [ -n "${ASAN_OPTIONS:-}" ] || [ "$peak" -lt $allow ] ||
        echo "ru_maxrss $peak bytes, above $allow: $out"
    grep -qE "peak resident memory [0-9.]+ MiB of --max-memory $limit\.00 MiB" <<<"$out" ||
        echo "no report: $out"
    [ "$(stat -c %s "$tmp/big.st")" -gt $((elems * 4)) ] || echo "big.st is short"
    cmp -s <(tail -c $((elems * 4)) "$tmp/big.raw") <(tail -c $((elems * 4)) "$tmp/big.st") ||
        echo "big.weight differs from the saved weights"
    rm -rf "$tmp/big" "$tmp/big.raw" "$tmp/big.st"
}
result consolidate_stays_under_max_memory_for_a_larger_model "$(bounded 2>"$tmp/bounded.log")"
cat "$tmp/bounded.log"

reshard() {
    local out
    out=$("$prog" reshard "$tmp/a" "$tmp/r3" --ranks 3 2>&1) || echo "exit $?: $out"
    grep -q "r3/$step: 3 shards from 1, 9 files" <<<"$out" || echo "no report: $out"
    [ "$(cat "$tmp/r3/latest")" = "$step" ] || echo "latest is '$(cat "$tmp/r3/latest")'"
    compgen -G "$tmp/r3/.tmp-*" >/dev/null && echo "a .tmp- directory left"
    out=$("$prog" verify "$tmp/r3" 2>&1) || echo "verify exited $?: $out"
    out=$("$prog" info "$tmp/r3") || echo "info exited $?"
    grep -q '^world size      3 (stage 0)$' <<<"$out" || echo "no world size 3: $out"
    grep -q '^shards          3$' <<<"$out" || echo "no 3 shards: $out"
    [ "$(grep -c '^  [a-z_]*-0000[0-2]\.bin ' <<<"$out")" = 9 ] || echo "not 9 files: $out"
    "$prog" consolidate "$tmp/r3" "$tmp/r3.st" >/dev/null 2>&1 || echo "consolidate exited $?"
    cmp "$tmp/a.st" "$tmp/r3.st" || echo "consolidated r3 differs from consolidated a"
    # a corrupt source: exit 1, nothing published
    out=$("$prog" reshard "$tmp/flip" "$tmp/rflip" --ranks 2 2>&1)
    [ $? = 1 ] || echo "reshard of a corrupt checkpoint did not exit 1: $out"
    grep -q "nothing was published in $tmp/rflip: .*weights-00000.bin is corrupt" <<<"$out" ||
        echo "corrupt: $out"
    [ -z "$(ls -A "$tmp/rflip" 2>/dev/null)" ] || echo "rflip holds: $(ls -A "$tmp/rflip")"
    true
}
result reshard_to_3_verifies_and_consolidates_byte_for_byte "$(reshard)"

# ckpt_make resume writes the weights as loaded, then after one more step:
# the same bytes from the original and from every reshard, whoever loads.
loads() {
    local n=$((2 * 374112 * 4))
    "$make_ck" resume "$tmp/a" "$tmp/ref" || { echo "resume of a failed"; return; }
    cmp -s -n $((n / 2)) "$tmp/ref" "$tmp/a.raw" || echo "a did not load as saved"
    "$make_ck" resume "$tmp/r3" "$tmp/r3.1" --stage 3 || echo "resume of r3, stage 3, failed"
    on2 "$make_ck" resume "$tmp/r3" "$tmp/r3.2" --stage 0 >/dev/null || echo "resume of r3 on 2 failed"
    on2 "$make_ck" resume "$tmp/r3" "$tmp/r3.2s2" --stage 2 >/dev/null ||
        echo "resume of r3 on 2, stage 2, failed"
    for f in r3.1 r3.2 r3.2s2; do
        [ "$(stat -c %s "$tmp/$f" 2>/dev/null)" = $n ] || { echo "$f: not $n bytes"; continue; }
        cmp "$tmp/ref" "$tmp/$f" || echo "$f differs from the original's load and step"
    done
}
result resharded_checkpoint_loads_as_the_original_at_1_and_2_ranks "$(loads)"

# The 2-rank stage 3 save, merged into 1 shard and split into 4.
two_ranks() {
    local m
    "$make_ck" resume "$tmp/b" "$tmp/bref" || { echo "resume of b failed"; return; }
    cmp -s -n $((374112 * 4)) "$tmp/bref" "$tmp/b.raw" || echo "b did not load as saved"
    for m in 1 4; do
        "$prog" reshard "$tmp/b/$step" "$tmp/b$m" --ranks $m >/dev/null || echo "reshard $m: $?"
        "$prog" verify "$tmp/b$m" >/dev/null 2>&1 || echo "b$m does not verify"
        on2 "$make_ck" resume "$tmp/b$m" "$tmp/b$m.out" --stage 1 >/dev/null ||
            echo "resume of b$m failed"
        cmp "$tmp/bref" "$tmp/b$m.out" || echo "b$m differs from b's load and step"
    done
    "$prog" consolidate "$tmp/b4" "$tmp/b4.st" >/dev/null || echo "consolidate b4: $?"
    safetensors_check "$tmp/b4.st" "$tmp/b.raw" 3
}
result a_two_rank_checkpoint_reshards_to_1_and_4_loading_the_same "$(two_ranks)"

# refused CODE NEEDLE ARGS...: exit CODE, NEEDLE on stderr, nothing on stdout.
refused() {
    local code=$1 needle=$2 rc
    shift 2
    "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = "$code" ] || echo "zsh_ckpt $*: exit $rc, expected $code"
    [ -s "$tmp/out" ] && echo "zsh_ckpt $*: printed: $(head -2 "$tmp/out")"
    grep -qF -- "$needle" "$tmp/err" || echo "zsh_ckpt $*: no '$needle' in: $(cat "$tmp/err")"
}

usage() {
    refused 2 "Usage: zsh_ckpt info DIR"
    refused 2 "unknown subcommand 'bogus'" bogus
    refused 2 "zsh_ckpt info: missing arguments: it takes DIR" info
    refused 2 "unrecognized option '--bogus'" verify "$tmp/a" --bogus
    refused 2 "unexpected argument 'extra' (it takes DIR OUT)" consolidate "$tmp/a" x extra
    refused 2 "--ranks is required" reshard "$tmp/a" "$tmp/x"
    refused 2 "--ranks needs a value" reshard "$tmp/a" "$tmp/x" --ranks
    local v
    for v in 0 -1 1.5 x 16777217; do
        refused 2 "--ranks '$v' is not a whole number in [1, 16777216]" reshard "$tmp/a" "$tmp/x" --ranks "$v"
    done
    for v in 0 12X 1T k '' 99999999999999999999; do
        refused 2 "--max-memory '$v' is not a byte count" consolidate "$tmp/a" "$tmp/x" --max-memory "$v"
    done
    refused 2 "--max-memory 4M is too small" consolidate "$tmp/a" "$tmp/x" --max-memory 4M
    [ -e "$tmp/x" ] || [ -e "$tmp/x.tmp" ] && echo "output written despite a refused limit"
    refused 2 "--json takes no value" info "$tmp/a" --json=1
    refused 1 "no checkpoint in $tmp/none" verify "$tmp/none"
    "$prog" --help | grep -q '^Usage: zsh_ckpt info DIR \[--json\]$' || echo "--help: no usage"
    "$prog" info --help >/dev/null || echo "info --help exited $?"
    true
}
result bad_arguments_exit_2_naming_them "$(usage)"

# A manifest that does not match its own checksum is refused by every subcommand.
manifest() {
    local needle="manifest.json is corrupt: it does not match its own checksum"
    cp -r "$tmp/a/$step" "$tmp/m"
    sed -i 's/layer\.0\.bias/layer.0.biaz/' "$tmp/m/manifest.json"
    grep -q 'layer.0.biaz' "$tmp/m/manifest.json" || echo "the manifest was not changed"
    refused 1 "$needle" info "$tmp/m"
    refused 1 "$needle" verify "$tmp/m"
    refused 1 "$needle" consolidate "$tmp/m" "$tmp/m.st"
    refused 1 "$needle" reshard "$tmp/m" "$tmp/m2" --ranks 2
    [ -e "$tmp/m.st" ] || [ -e "$tmp/m2" ] && echo "output written from a corrupt manifest"
    true
}
result a_corrupt_manifest_is_refused_by_every_subcommand "$(manifest)"

results_end
