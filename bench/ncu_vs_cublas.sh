#!/usr/bin/env bash
# On the GPU machine: Nsight Compute on warm launches of kernel 8 (fp16, N^3 by tc_bench --time-only) and of
# the cuBLAS kernel timed beside it: duration and clock, grid and cluster, the speed-of-light and memory
# sections, DRAM bytes, and every executed SASS opcode (how does the vendor kernel store C: TMA, plain
# stores, reductions?). Clocks are left alone (--clock-control none).   bash bench/ncu_vs_cublas.sh [N [VARIANT]]
set -u
out=${OUT:-/tmp/ncu}
mkdir -p "$out"
ncu_run() {
ncu --clock-control none --kernel-name regex:"nvjet|k${variant}_f16" --launch-skip 6 --launch-count 4 \
    --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --metrics sass__inst_executed_per_opcode,dram__bytes_read.sum,dram__bytes_write.sum \
    --print-metric-instances "$1" \
    python3 bench/tc_bench.py --variants "$variant" --time-only "$size" --out /tmp/ncu-tcb > "$out/ncu.txt" 2>&1
}
size=${1:-4096}
variant=${2:-8}
# "details" names each opcode; older ncu know only "values".
ncu_run details || ncu_run values
echo "ncu exit $?"
