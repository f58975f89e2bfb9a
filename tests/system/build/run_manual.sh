#!/bin/bash
# The manual (docs/) and the README that opens it: the README stays short and
# its two commands come first, as .ci/run runs them; `make html` builds the
# manual with Sphinx and Breathe without a warning (-W -n), the C API's
# functions in it, and every link inside it and in the README resolves
# (docs/check_links.py, offline); and that check names a broken link and a
# missing anchor. Skipped, with the reason, where configure found no
# sphinx-build. Ends with a GoogleTest-style summary that tests/run_all.sh
# counts.
set -u
srcdir=${abs_top_srcdir:?run through make check}
builddir=${abs_top_builddir:?run through make check}
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
results_begin manual 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The README's first two fenced blocks, and .ci/run's commands.
name=readme_is_short_and_its_two_commands_come_first
lines=$(wc -l <"$srcdir/README.md")
first=$(awk '/^```/ { if (on) { blocks++; on = 0; if (blocks == 2) exit; next } on = 1; next }
             on { print }' "$srcdir/README.md")
want='bash contrib/debian-setup.sh && bash examples/run_demo.sh
bash contrib/debian-setup.sh && bash tests/run_all.sh'
if [ "$lines" -gt 250 ]; then
    result_as FAILED "$name" "README.md has $lines lines, more than 250: move the detail into docs/"
elif [ "$first" != "$want" ]; then
    result_as FAILED "$name" "README.md's first two code blocks are:" "$first" "not:" "$want"
elif ! grep -qF 'bash contrib/debian-setup.sh && bash examples/run_demo.sh' "$srcdir/.ci/run" ||
     ! grep -qx 'bash tests/run_all.sh' "$srcdir/.ci/run"; then
    result_as FAILED "$name" ".ci/run no longer runs the README's two commands"
else
    result_as OK "$name ($lines lines)"
fi

name=make_html_builds_the_manual_without_a_warning_and_its_links_resolve
if ! grep -q '^SPHINX_BUILD = /' "$builddir/Makefile"; then
    result_skip "$name" "configure found no sphinx-build (Debian: python3-sphinx python3-myst-parser python3-breathe python3-sphinx-rtd-theme)"
elif ! "${MAKE:-make}" -s -C "$builddir" html ZSH_MANUAL_DIR="$tmp/manual" >"$tmp/out" 2>&1; then
    result_as FAILED "$name" "make html failed:" "$(tail -40 "$tmp/out")"
elif ! grep -q 'id="c\.zsh_allgather"' "$tmp/manual/html/api.html" ||
     ! grep -q 'id="c\.zsh_optim_step"' "$tmp/manual/html/api.html"; then
    result_as FAILED "$name" "api.html lacks zsh_allgather or zsh_optim_step: Breathe put no function there"
else
    result_as OK "$name ($(ls "$tmp/manual/html"/*.html | wc -l) pages; $(grep '^links: ' "$tmp/out"))"
fi

# The checker itself, on a page and a README with one good link and broken ones.
name=link_check_names_each_broken_link_and_missing_anchor
mkdir -p "$tmp/links/html" "$tmp/links/tree/docs"
cat >"$tmp/links/html/a.html" <<'HTML'
<html><body><h1 id="top">A</h1><a href="#top">ok</a><a href="a.html#nope">anchor</a>
<a href="b.html">file</a><a href="https://example.org/">external</a></body></html>
HTML
printf '# Page\n\n## Known heading\n' >"$tmp/links/tree/docs/page.md"
printf '# R\n\n[ok](docs/page.md#known-heading) [gone](docs/gone.md) [anchor](docs/page.md#nope)\n' \
    >"$tmp/links/tree/README.md"
"${PYTHON3:-python3}" "$srcdir/docs/check_links.py" "$tmp/links/html" "$tmp/links/tree/README.md" \
    >"$tmp/links/out" 2>&1
rc=$?
missing=
for broken in 'a.html: a.html#nope: no id nope' 'a.html: b.html: no such file' \
              'README.md:3: docs/gone.md: no such file' 'README.md:3: docs/page.md#nope: no heading'; do
    grep -qF "broken link: $broken" "$tmp/links/out" || missing="$missing [$broken]"
done
if [ $rc = 1 ] && [ -z "$missing" ] && grep -q ', 4 broken$' "$tmp/links/out" &&
   grep -qF 'external (not fetched): https://example.org/' "$tmp/links/out"; then
    result_as OK "$name"
else
    result_as FAILED "$name" "exit $rc, not named:$missing" "$(cat "$tmp/links/out")"
fi
results_end
