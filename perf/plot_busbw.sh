#!/bin/bash
# Plot busbw against size from a zsh_bench --csv file: ZeroShard's line, and
# MPI's when the run had --baseline mpi. Needs gnuplot (apt-get install
# gnuplot-nox).
#   bash perf/plot_busbw.sh ag.csv ag.png
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 RESULTS.csv OUT.png" >&2
    exit 2
fi
csv=$1
png=$2
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
header=$(head -1 "$csv")
[[ $header == collective,ranks,dtype,size_bytes,* ]] || { echo "$0: $csv is not a zsh_bench --csv file" >&2; exit 1; }
# The title: collective, ranks and type of the first row.
IFS=, read -r coll ranks dtype _ < <(sed -n 2p "$csv")
[ -n "${coll:-}" ] || { echo "$0: $csv has no rows" >&2; exit 1; }
# MPI's busbw (column 13) is empty without a baseline.
has_mpi=$(awk -F, 'NR > 1 && $13 != "" { print 1; exit }' "$csv")
terminal="pngcairo size 800,500 font ',10'"
gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 || terminal="png size 800,500"

{
    echo "set terminal $terminal"
    echo "set output '$png'"
    echo "set datafile separator ','"
    echo "set key top left"
    echo "set logscale x 2"
    echo "set format x '%.0b%B'"
    echo "set xlabel 'size (bytes, nccl-tests total)'"
    echo "set ylabel 'busbw (GB/s)'"
    echo "set grid"
    echo "set title '$coll, $ranks ranks, $dtype: busbw = algbw x nccl-tests factor'"
    plot="plot '$csv' every ::1 using 4:11 with linespoints title 'ZeroShard'"
    [ -n "$has_mpi" ] && plot="$plot, '' every ::1 using 4:13 with linespoints title 'MPI'"
    echo "$plot"
} | gnuplot
echo "$png"
