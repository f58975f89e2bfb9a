#!/bin/bash
# A checkpoint handed over by someone else is untrusted input (issue 37):
# zsh_ckpt and zsh_optim_load on checkpoints of ckpt_make, edited and signed
# again (the manifest's checksum recomputed, as a hostile writer can). A
# setting the optimizer refuses, or state kinds unlike the rule's, is
# refused before anything is loaded (an SGD checkpoint whose manifest
# claims momentum used to load and crash the next step); a FIFO, a device
# or a link where a file belongs is refused by name without blocking;
# outputs never alias the inputs, temporaries are never written through a
# link; latest never moves back without --force; untrusted text is
# printed escaped. Ends with a GoogleTest-style summary.
set -u
top_builddir=${top_builddir:-.}
prog="$(cd "$top_builddir" && pwd)/tools/zsh_ckpt"
make_ck="$top_builddir/tests/system/tools/ckpt_make"
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
if [ ! -x "$make_ck" ]; then
    echo "SKIP: $make_ck is not built (the check programs need GoogleTest)"
    exit 77
fi
results_begin zsh_ckpt_hostile 8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step="step-00000003"

"$make_ck" save "$tmp/a" "$tmp/a.raw" >"$tmp/make.out" 2>&1 ||
    echo "ckpt_make save failed: $(cat "$tmp/make.out")"
"$make_ck" save "$tmp/sgd" "$tmp/sgd.raw" --rule sgd >"$tmp/make.out" 2>&1 ||
    echo "ckpt_make save --rule sgd failed: $(cat "$tmp/make.out")"

# edited SRC DST FROM TO: a copy of checkpoint SRC with FROM replaced by TO in
# its manifest, signed again.
edited() {
    rm -rf "$2"
    cp -r "$1" "$2"
    grep -qF -- "$3" "$2/manifest.json" || echo "the manifest holds no '$3'"
    sed -i "s/$3/$4/" "$2/manifest.json"
    "$make_ck" sign "$2/manifest.json" || echo "ckpt_make sign failed"
}

# refused CODE NEEDLE ARGS...: zsh_ckpt ARGS exits CODE within 20 s (a
# blocked open would not), NEEDLE on stderr, which holds no escape byte.
refused() {
    local code=$1 needle=$2 rc
    shift 2
    timeout 20 "$prog" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    [ $rc = "$code" ] || echo "zsh_ckpt $*: exit $rc, expected $code: $(cat "$tmp/err")"
    grep -qF -- "$needle" "$tmp/err" || echo "zsh_ckpt $*: no '$needle' in: $(cat "$tmp/err")"
    grep -q $'\e' "$tmp/err" "$tmp/out" && echo "zsh_ckpt $*: printed a raw escape byte"
}

# Row 1: momentum claimed for SGD saved without its buffers.
momentum() {
    local out rc
    edited "$tmp/sgd/$step" "$tmp/m" '"momentum":0.0' '"momentum":0.9'
    refused 1 "sgd with momentum 0.9 keeps 1 state(s) per element, but the kinds saved hold 0" \
        verify "$tmp/m"
    out=$("$make_ck" resume "$tmp/m" "$tmp/m.raw" --rule sgd 2>&1)
    rc=$?
    [ $rc = 1 ] || echo "resume exited $rc (a signal is above 128), expected 1: $out"
    grep -qF "zsh_optim_load: nothing was loaded, and the optimizer is as it was: " <<<"$out" ||
        echo "resume: $out"
    grep -qF "keeps 1 state(s) per element" <<<"$out" || echo "resume: $out"
    true
}
result sgd_claiming_momentum_without_its_buffers_is_refused_before_loading "$(momentum)"

# Row 4: values the optimizer refuses, counters that would wrap or be misread.
values() {
    local -a cases=('"lr":0.01/"lr":-1000/lr=-1000'
                    '"lr":0.01/"lr":NaN/lr=nan'
                    '"beta2":0.999/"beta2":5/beta2=5'
                    '"eps":1e-08/"eps":0/eps=0 '
                    '"scale":1.0/"scale":0/scale 0 and window'
                    '"steps":3/"steps":18446744073709551615/"steps" is 18446744073709551615'
                    '"version":1/"version":4294967297/format version 4294967297'
                    '"stage":0/"stage":2147483653/stage 2147483653 is out of range'
                    '"world_size":1/"world_size":4294967299/world_size 4294967299')
    local c from to needle
    for c in "${cases[@]}"; do
        IFS=/ read -r from to needle <<<"$c"
        edited "$tmp/a/$step" "$tmp/v" "$from" "$to"
        refused 1 "$needle" info "$tmp/v"
    done
    out=$("$make_ck" resume "$tmp/v" "$tmp/v.raw" 2>&1) && echo "resume of world_size 2^32+3 loaded"
    true
}
result out_of_range_values_and_counters_are_refused_naming_them "$(values)"

# Rows 5 and 7: a FIFO, a device or a link where a file belongs.
special() {
    rm -rf "$tmp/f"
    cp -r "$tmp/a/$step" "$tmp/f"
    rm "$tmp/f/manifest.json"
    mkfifo "$tmp/f/manifest.json"
    refused 1 "manifest.json is a FIFO, not a regular file" verify "$tmp/f"
    refused 1 "manifest.json is a FIFO, not a regular file" consolidate "$tmp/f" "$tmp/f.st"
    rm "$tmp/f/manifest.json"
    ln -s /dev/zero "$tmp/f/manifest.json"
    refused 1 "manifest.json: it is a symbolic link" info "$tmp/f"
    rm -rf "$tmp/f"
    cp -r "$tmp/a/$step" "$tmp/f"
    rm "$tmp/f/exp_avg-00000.bin"
    mkfifo "$tmp/f/exp_avg-00000.bin"
    refused 1 "exp_avg-00000.bin is a FIFO, not a regular file" verify "$tmp/f"
    rm "$tmp/f/exp_avg-00000.bin"
    ln -s /dev/zero "$tmp/f/exp_avg-00000.bin"
    refused 1 "exp_avg-00000.bin: it is a symbolic link" verify "$tmp/f"
    mkdir "$tmp/l" && mkfifo "$tmp/l/latest"
    refused 1 "latest is a FIFO, not a regular file" info "$tmp/l"
    true
}
result fifos_devices_and_links_are_refused_by_name_without_blocking "$(special)"

# Row 2: an output inside the checkpoint, or the same file as an input.
aliases() {
    local out
    cp -r "$tmp/a" "$tmp/c"
    refused 1 "is inside the checkpoint" consolidate "$tmp/c" "$tmp/c/$step/weights-00000.bin"
    refused 1 "is inside the checkpoint" consolidate "$tmp/c" "$tmp/c/$step/manifest.json"
    refused 1 "which names the checkpoint it reads" consolidate "$tmp/c" "$tmp/c/latest"
    ln "$tmp/c/$step/exp_avg-00000.bin" "$tmp/hard"
    refused 1 "is the same file as" consolidate "$tmp/c" "$tmp/hard"
    refused 1 "is inside the checkpoint" reshard "$tmp/c" "$tmp/c/$step" --ranks 2
    refused 1 "is inside the checkpoint" reshard "$tmp/c" "$tmp/c/$step/sub" --ranks 2
    out=$("$prog" verify "$tmp/c" 2>&1) || echo "the checkpoint no longer verifies: $out"
    [ "$(cat "$tmp/c/latest")" = "$step" ] || echo "latest changed"
    true
}
result outputs_that_alias_the_checkpoint_read_are_refused "$(aliases)"

# Row 3: the temporary is never written through a link; an empty name is an error.
temporaries() {
    echo victim >"$tmp/victim"
    ln -s "$tmp/victim" "$tmp/o.st.tmp"
    "$prog" consolidate "$tmp/a" "$tmp/o.st" >/dev/null 2>&1 || echo "consolidate exited $?"
    [ "$(cat "$tmp/victim")" = victim ] || echo "written through the link"
    [ -L "$tmp/o.st.tmp" ] || echo "the link was removed"
    compgen -G "$tmp/.o.st.tmp-*" >/dev/null && echo "a temporary left behind"
    [ -s "$tmp/o.st" ] || echo "no output"
    (cd "$tmp" && touch .tmp && "$prog" consolidate a "" >/dev/null 2>"$tmp/err"
     [ $? = 2 ] || echo "consolidate '': not exit 2"
     [ -e .tmp ] || echo "consolidate '' removed ./.tmp")
    grep -qF "OUT is empty" "$tmp/err" || echo "consolidate '': $(cat "$tmp/err")"
    refused 2 "OUT is empty" reshard "$tmp/a" "" --ranks 2
    true
}
result temporaries_are_exclusive_and_an_empty_output_is_refused "$(temporaries)"

# Row 9 and a smaller finding: latest never moves back without --force;
# reshard into a file names the cause.
latest() {
    local out
    "$prog" reshard "$tmp/a" "$tmp/live" --ranks 2 >/dev/null || echo "reshard exited $?"
    cp -r "$tmp/live/$step" "$tmp/live/step-00000005"
    echo step-00000005 >"$tmp/live/latest"
    refused 1 "latest names step 5, newer than the step 3 this would publish" \
        reshard "$tmp/a/$step" "$tmp/live" --ranks 3
    [ "$(cat "$tmp/live/latest")" = step-00000005 ] || echo "latest moved: $(cat "$tmp/live/latest")"
    compgen -G "$tmp/live/.tmp-*" >/dev/null && echo "a .tmp- left behind"
    out=$("$prog" reshard "$tmp/a/$step" "$tmp/live" --ranks 3 --force 2>&1) ||
        echo "--force exited $?: $out"
    [ "$(cat "$tmp/live/latest")" = "$step" ] || echo "--force: latest is $(cat "$tmp/live/latest")"
    touch "$tmp/file"
    refused 1 "OUT $tmp/file exists and is not a directory" reshard "$tmp/a" "$tmp/file" --ranks 2
    grep -q "cannot remove" "$tmp/err" && echo "a cleanup error reported: $(cat "$tmp/err")"
    true
}
result latest_never_moves_back_without_force "$(latest)"

# Untrusted text printed escaped: what latest holds, a parameter's name.
escaped() {
    mkdir -p "$tmp/e"
    printf '../step-1\e[2J\n' >"$tmp/e/latest"
    refused 1 'does not name a checkpoint ("../step-1\x1b[2J")' info "$tmp/e"
    printf '\e]0;title\a%.0s' {1..100} >"$tmp/e/latest"
    refused 1 'latest is larger than 255 bytes' info "$tmp/e"
    edited "$tmp/a/$step" "$tmp/n" 'layer.0.bias' 'layer.0.b\\u001b[2J'
    timeout 20 "$prog" info "$tmp/n" >"$tmp/out" 2>&1 || echo "info exited $?"
    grep -qF 'layer.0.b\x1b[2J' "$tmp/out" || echo "no escaped name: $(cat "$tmp/out")"
    grep -q $'\e' "$tmp/out" && echo "info printed a raw escape byte"
    timeout 20 "$prog" info "$tmp/n" --json >"$tmp/out" 2>&1 || echo "info --json exited $?"
    grep -q $'\e' "$tmp/out" && echo "info --json printed a raw escape byte"
    true
}
result untrusted_text_is_printed_escaped "$(escaped)"

# Overlapping pieces (a smaller finding): caught although their total fits.
overlap() {
    "$prog" reshard "$tmp/a" "$tmp/o2" --ranks 2 >/dev/null || echo "reshard exited $?"
    local m="$tmp/o2/$step/manifest.json" off
    off=$(grep -o '"offset":[1-9][0-9]*' "$m" | head -1)
    [ -n "$off" ] || { echo "no nonzero offset"; return; }
    edited "$tmp/o2/$step" "$tmp/o3" "$off" '"offset":1'
    refused 1 "of its files overlap" verify "$tmp/o3"
}
result overlapping_pieces_are_refused "$(overlap)"

results_end
