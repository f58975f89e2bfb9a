#!/bin/bash
# The manual's configuration page (docs/configuration.md) says what the
# build says: its ZSH_* table is zsh_info -c's variables, defaults, ranges
# and help, and its selection rule is zsh_info -s, word for word, as
# contrib/config_tables.sh writes them; and
# zsh_info -c gives every variable its range. Ends with a GoogleTest-style
# summary that tests/run_all.sh counts.
set -u
srcdir=${abs_top_srcdir:?run through make check}
top_builddir=${top_builddir:-.}
info="$top_builddir/tools/zsh_info"
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
results_begin config_page 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The page's block after @marker: a table's rows, or a fenced block.
readme_block() { # MARKER
    awk -v marker="$1" '
        $0 == marker { on = 1; print; next }
        on && /^```/ { print; fence++; if (fence == 2) exit; next }
        on && fence == 1 { print; next }
        on && /^\|/ { print; next }
        on && fence == 0 && NR > 1 && !/^\|/ { exit }' "$srcdir/docs/configuration.md"
}

for what in config select; do
    marker="<!-- zsh_info -$(echo $what | cut -c1) -->"
    name="${what}_block_is_what_zsh_info_prints"
    bash "$srcdir/contrib/config_tables.sh" "$info" $what >"$tmp/want" 2>"$tmp/err"
    readme_block "$marker" >"$tmp/have"
    if [ ! -s "$tmp/want" ] || [ "$(wc -l <"$tmp/want")" -lt 5 ]; then
        result_as FAILED "$name" "contrib/config_tables.sh printed too little: $(cat "$tmp/err")"
    elif diff -u "$tmp/have" "$tmp/want" >"$tmp/diff"; then
        result_as OK "$name ($(wc -l <"$tmp/want") lines)"
    else
        result_as FAILED "$name" "docs/configuration.md (-) against zsh_info (+); contrib/config_tables.sh writes the block:
$(head -40 "$tmp/diff")"
    fi
done

# Every variable is preceded by what it takes; ZSH_CHUNK_SIZE's is bytes.
name=zsh_info_c_prints_each_variables_range
env -u ZSH_CHUNK_SIZE "$info" -c >"$tmp/c" 2>"$tmp/err"
vars=$(grep -c '^ZSH_[A-Z_0-9]*=' "$tmp/c")
ranged=$(grep -c '^# range: ' "$tmp/c")
if [ "$vars" -gt 20 ] && [ "$vars" = "$ranged" ] &&
   grep -B3 '^ZSH_CHUNK_SIZE=' "$tmp/c" | grep -qx '# range: 4k to 64m bytes'; then
    result_as OK "$name ($vars variables)"
else
    chunk=$(grep -B3 '^ZSH_CHUNK_SIZE=' "$tmp/c" | grep '^# range' || echo none)
    result_as FAILED "$name" "$vars variables, $ranged ranges, ZSH_CHUNK_SIZE's: $chunk"
fi
results_end
