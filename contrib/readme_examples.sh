#!/bin/sh
# readme_examples.sh README NAME: the code block of README.md that follows
# the line `<!-- example: NAME -->`, without its fences. The README is where
# its examples are written; make installs what this extracts from it in
# share/zeroshard/examples, and tests/system/install/run_install.sh builds
# and runs the same text. Fails where README has no such block.
set -eu
[ $# = 2 ] || { echo "usage: $0 README.md NAME" >&2; exit 2; }
awk -v marker="<!-- example: $2 -->" '
    $0 == marker { on = 1; next }
    on == 1 && /^```/ { on = 2; next }
    on == 1 { exit 1 }
    on == 2 && /^```/ { found = 1; exit }
    on == 2 { print }
    END { exit !found }' "$1" || { echo "$0: $1 has no code block after <!-- example: $2 -->" >&2; exit 1; }
