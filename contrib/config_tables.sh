#!/bin/bash
# The generated blocks of the manual's configuration page (docs/configuration.md),
# from what zsh_info prints, so that the two never disagree
# (tests/system/build/run_config_page.sh checks them word for word):
#   bash contrib/config_tables.sh ZSH_INFO config   the ZSH_* table (zsh_info -c), with
#                                                   each variable's range
#   bash contrib/config_tables.sh ZSH_INFO select   the selection rule (zsh_info -s)
# Each starts with the page's marker line; paste the output over the old block.
set -euo pipefail
info=${1:?usage: $0 ZSH_INFO config|select}
what=${2:?usage: $0 ZSH_INFO config|select}
# The defaults and help, not whatever this shell's environment sets.
clean_env=(env)
for var in $(env | sed -n 's/^\(ZSH_[A-Z_0-9]*\)=.*/\1/p'); do
    clean_env+=(-u "$var")
done

case $what in
config)
    echo "<!-- zsh_info -c -->"
    echo "| layer | variable | default | range | meaning |"
    echo "|---|---|---|---|---|"
    "${clean_env[@]}" "$info" -c | awk '
        /^# ---- .* ----$/ { layer = $0; sub(/^# ---- /, "", layer); sub(/ ----$/, "", layer); next }
        /^# default: / { dflt = $0; sub(/^# default: /, "", dflt); sub(/, .*/, "", dflt); next }
        /^# range: / { range = substr($0, 10); next }
        /^# / { help = substr($0, 3); next }
        /^ZSH_[A-Z_0-9]*=/ {
            name = $0; sub(/=.*/, "", name)
            printf "| %s | `%s` | %s | %s | %s |\n", layer, name,
                   (dflt == "(unset)") ? dflt : "`" dflt "`", range, help
        }'
    ;;
select)
    echo "<!-- zsh_info -s -->"
    echo '```text'
    "${clean_env[@]}" "$info" -s
    echo '```'
    ;;
*)
    echo "usage: $0 ZSH_INFO config|select" >&2
    exit 2
    ;;
esac
