#!/bin/bash
# Ranks of one machine that the rank map puts on different nodes, for tests
# that need no root: each rank gets ZSH_NODE_NAME and the torchrun-style
# variables of a job on 127.0.0.1. Sourced; the caller sets $log.

# fake_nodes_job NODES TIMEOUT CMD...: one rank per letter of NODES, rank r
# on node "n<letter>", each running CMD under `timeout TIMEOUT`; rank r's
# output in $log/out.r, its status in $log/rc.r. A port something else
# took first is tried again on another.
# shellcheck source=free_port.sh
. "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"
fake_nodes_job() {
    local nodes=$1 limit=$2 n=${#1} r try port
    shift 2
    for try in 1 2 3; do
        port=$(free_port)
        rm -f "$log"/*
        for ((r = 0; r < n; r++)); do
            (
                ZSH_NODE_NAME="n${nodes:r:1}" RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
                    MASTER_PORT=$port timeout "$limit" "$@" >"$log/out.$r" 2>&1
                echo $? >"$log/rc.$r"
            ) &
        done
        wait
        grep -q "Address already in use" "$log/out.0" || return 0
    done
}
