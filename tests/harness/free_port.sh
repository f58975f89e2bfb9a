#!/bin/bash
# free_port: print a TCP port for a test's store. Sourced.
#
# It is taken from below the kernel's ephemeral range (ip_local_port_range),
# as zshrun does: a port in that range that is free now may become the source
# port of any outgoing connection (another test's, running beside this one)
# before the store binds it, while a port below the range is only taken by an
# explicit bind. Ports some socket holds now (any state, IPv4 or IPv6) are
# skipped.
free_port() {
    local lo=32768 hi base=20000 used p _
    { read -r lo hi </proc/sys/net/ipv4/ip_local_port_range; } 2>/dev/null || lo=32768
    [ $((lo - base)) -ge 1024 ] || base=1024
    [ "$lo" -gt $((base + 1)) ] || lo=65535 # no room below the range: any port above 1024
    used=$(awk 'FNR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
    for _ in $(seq 100); do
        p=$((base + (RANDOM * 32768 + RANDOM) % (lo - base)))
        grep -qx "$(printf '%04X' "$p")" <<<"$used" || break
    done
    echo "$p"
}
