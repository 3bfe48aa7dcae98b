#!/usr/bin/env bash
# On the GPU machine: where the warps of kernel 8 (and of the cuBLAS kernel timed beside it) wait, per SASS
# instruction. Nsight Compute's warp-state sampling on one warm launch of each at N^3 (fp16), then the source
# page as CSV (every SASS instruction with its stall samples by reason) and the warp-state section's totals.
# Clocks are left alone (--clock-control none).        bash bench/ncu_stalls.sh [N [VARIANT]]
set -u
out=${OUT:-/tmp/ncu}
mkdir -p "$out"
size=${1:-4096}
variant=${2:-8}
rep="$out/stalls_${variant}_${size}"
ncu --clock-control none --kernel-name regex:"nvjet|k${variant}_f16" --launch-skip 6 --launch-count 2 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight \
    -o "$rep" -f \
    python3 bench/tc_bench.py --variants "$variant" --time-only "$size" --out /tmp/ncu-tcb > "$rep.log" 2>&1
echo "ncu exit $?"
ncu -i "$rep.ncu-rep" --print-details all > "$rep.details.txt" 2>&1
# One CSV per profiled kernel: the source page (SASS, per-instruction samples).
for id in 0 1; do
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass --launch-skip "$id" --launch-count 1 \
        > "$rep.source$id.csv" 2>&1 || echo "source page $id failed"
done
ls -la "$out"
