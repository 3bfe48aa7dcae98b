#!/usr/bin/env bash
# On the GPU machine: how C leaves the SM, for kernel 8 (fp16, N^3, tc_bench --time-only) and the cuBLAS kernel
# timed beside it. Nsight Compute's memory tables plus the write-path counters that this ncu knows (the wanted
# list is filtered through --query-metrics, so a missing name does not abort the run). Clocks are left alone.
#                                                              bash bench/ncu_c_path.sh [N [VARIANT]]
set -u
out=${OUT:-/tmp/ncu}
mkdir -p "$out"
size=${1:-4096}
variant=${2:-8}
wanted="gpu__time_duration.sum sm__cycles_elapsed.avg.per_second dram__bytes_read.sum dram__bytes_write.sum
lts__t_sectors_op_read.sum lts__t_sectors_op_write.sum lts__t_sectors_srcunit_tex_op_write.sum
lts__t_sectors_srcunit_tex_op_write_lookup_hit.sum lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum
lts__t_sector_op_write_hit_rate.pct lts__t_sectors_srcunit_tex_op_read.sum lts__t_requests_srcunit_tex_op_write.sum
l1tex__m_l1tex2xbar_write_bytes.sum l1tex__m_xbar2l1tex_read_bytes.sum l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum smsp__inst_executed_op_global_st.sum
lts__throughput.avg.pct_of_peak_sustained_elapsed l1tex__throughput.avg.pct_of_peak_sustained_elapsed
lts__d_sectors_fill_sysmem.sum lts__t_sectors_srcunit_tex.sum lts__average_gcomp_input_sector_success_rate.pct"
known=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
metrics=""
for m in $wanted; do
    base=${m%.*}
    if echo "$known" | grep -qx "$base"; then metrics="$metrics,$m"; else echo "not known here: $m"; fi
done
metrics=${metrics#,}
echo "metrics: $metrics"
ncu --clock-control none --kernel-name regex:"nvjet|k${variant}_f16" --launch-skip 6 --launch-count 2 \
    --section MemoryWorkloadAnalysis_Tables --metrics "$metrics" \
    python3 bench/tc_bench.py --variants "$variant" --time-only "$size" --out /tmp/ncu-tcb > "$out/ncu_c_path.txt" 2>&1
echo "ncu exit $?"
