#!/bin/bash
# build_manual.sh SRCDIR DOXYFILE OUTDIR: the manual as HTML in OUTDIR/html
# (`make html`; tests/system/build/run_manual.sh). Doxygen writes the public
# headers' comments as XML (an undocumented item fails it, as in `make docs`),
# Sphinx builds docs/ with Breathe over that XML, warnings as errors and every
# reference resolved (-n), and docs/check_links.py then checks every link
# inside the HTML and the README's own links. Nothing is written under SRCDIR,
# so it runs on read-only sources (make distcheck).
set -euo pipefail
[ $# = 3 ] || { echo "usage: $0 SRCDIR DOXYFILE OUTDIR" >&2; exit 2; }
srcdir=$1 doxyfile=$2 out=$3
doxygen=${DOXYGEN:-doxygen}
sphinx=${SPHINX_BUILD:-sphinx-build}
for tool in "$doxygen" "$sphinx"; do
    command -v "$tool" >/dev/null ||
        { echo "$0: $tool not found (Debian: doxygen python3-sphinx python3-breathe python3-myst-parser python3-sphinx-rtd-theme)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/doxygen" "$out/html" "$out/doctrees"
# The Doxyfile of `make docs`, writing XML instead of HTML into OUTDIR.
{ cat "$doxyfile"
  echo "OUTPUT_DIRECTORY = $out/doxygen"
  echo "GENERATE_HTML = NO"
  echo "GENERATE_XML = YES"
  echo "XML_OUTPUT = xml"; } | "$doxygen" -
ZSH_DOXYGEN_XML="$out/doxygen/xml" ZSH_MANUAL_VERSION=$(sed -n 's/^PROJECT_NUMBER *= *//p' "$doxyfile") \
    "$sphinx" -W -n --keep-going -q -b html -d "$out/doctrees" "$srcdir/docs" "$out/html"
"${PYTHON3:-python3}" "$srcdir/docs/check_links.py" "$out/html" "$srcdir/README.md"
